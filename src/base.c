/* base.c: failure reporting (errno plus a per-thread description) and the
 * page size. */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "base.h"

static _Thread_local char error_detail[512];

static void error_describe(const char *fmt, va_list ap) {
  vsnprintf(error_detail, sizeof error_detail, fmt, ap);
}

int sc_fail(int err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  error_describe(fmt, ap);
  va_end(ap);
  errno = err;
  return -1;
}

void *sc_fail_null(int err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  error_describe(fmt, ap);
  va_end(ap);
  errno = err;
  return NULL;
}

const char *sicm_error_detail(void) { return error_detail; }

size_t sc_page_size(void) {
  static size_t page; /* racing first calls store the same value */
  size_t p = __atomic_load_n(&page, __ATOMIC_RELAXED);
  if (p == 0) {
    p = (size_t)sysconf(_SC_PAGESIZE);
    __atomic_store_n(&page, p, __ATOMIC_RELAXED);
  }
  return p;
}
