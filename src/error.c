/* error.c: failure reporting — errno plus a per-thread description. */
#include <errno.h>
#include <stdio.h>

#include "internal.h"

static _Thread_local char error_detail[512];

static void error_describe(const char *fmt, va_list ap) {
  vsnprintf(error_detail, sizeof error_detail, fmt, ap);
}

int sicm_fail(int err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  error_describe(fmt, ap);
  va_end(ap);
  errno = err;
  return -1;
}

void *sicm_fail_null(int err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  error_describe(fmt, ap);
  va_end(ap);
  errno = err;
  return NULL;
}

const char *sicm_error_detail(void) { return error_detail; }
