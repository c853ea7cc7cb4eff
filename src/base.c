/* SPDX-License-Identifier: BSD-3-Clause */
/* base.c: failure reporting (errno plus a per-thread description), the
 * environment variables' strict reading, the page size, and the address
 * every process of a node can map. */
#include <ctype.h>
#include <errno.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include "base.h"
#include "base_settings.h"

/* Each thread's description of its last failure, allocated at its first
 * one and freed when it exits.  Not a thread-local array: the library's
 * thread-locals must stay small enough for the static TLS that a library
 * loaded by dlopen may take (sicm_inline.h). */
enum { DETAIL_SIZE = 512 };
static SC_TLS char *error_detail;
static pthread_once_t detail_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t detail_key;
static int detail_key_made;

/* At thread exit; a later destructor that fails makes a new one. */
static void detail_free(void *buffer) {
  error_detail = NULL;
  free(buffer);
}

static void detail_key_make(void) {
  detail_key_made = pthread_key_create(&detail_key, detail_free) == 0;
}

static void error_describe(const char *fmt, va_list ap) {
  if (error_detail == NULL) {
    pthread_once(&detail_key_once, detail_key_make);
    char *buffer = detail_key_made ? malloc(DETAIL_SIZE) : NULL;
    if (buffer == NULL || pthread_setspecific(detail_key, buffer) != 0) {
      free(buffer);
      return; /* errno still says what failed */
    }
    error_detail = buffer;
  }
  vsnprintf(error_detail, DETAIL_SIZE, fmt, ap);
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

const char *sicm_error_detail(void) { return error_detail != NULL ? error_detail : ""; }

/* ---- environment ---- */

void sc_env_refuse(const char *name, const char *value, const char *accepted) {
  char shown[80];
  size_t n = 0;
  for (const char *c = value; *c && n < sizeof shown - 4; c++)
    shown[n++] = isprint((unsigned char)*c) ? *c : '?';
  if (strlen(value) > n)
    shown[n++] = '.', shown[n++] = '.', shown[n++] = '.';
  shown[n] = '\0';
  fprintf(stderr, "libsicm: %s=\"%s\" ignored: %s; the default applies\n", name, shown, accepted);
}

const char *sc_env_get(const char *name) {
  const char *value = getenv(name);
  return value != NULL && value[0] != '\0' ? value : NULL;
}

int sc_env_choice(const char *name, const char *const *choices, int fallback, const char *accepted) {
  const char *value = sc_env_get(name);
  if (value == NULL)
    return fallback;
  for (int i = 0; choices[i] != NULL; i++)
    if (strcmp(value, choices[i]) == 0)
      return i;
  sc_env_refuse(name, value, accepted);
  return fallback;
}

int sc_env_switch(const char *name, int fallback) {
  const char *value = sc_env_get(name);
  int on;
  if (value == NULL)
    return fallback;
  if (sc_setting_bool(value, &on) == 0)
    return on;
  sc_env_refuse(name, value, "on, 1, off or 0");
  return fallback;
}

long sc_env_integer(const char *name, long min, long max, long fallback, const char *accepted) {
  const char *value = sc_env_get(name);
  if (value == NULL)
    return fallback;
  char *end;
  errno = 0;
  long v = isdigit((unsigned char)value[0]) ? strtol(value, &end, 10) : min - 1;
  if (!isdigit((unsigned char)value[0]) || *end != '\0' || errno != 0 || v < min || v > max) {
    sc_env_refuse(name, value, accepted);
    return fallback;
  }
  return v;
}

const char *sc_env_path(const char *name, size_t max) {
  const char *value = sc_env_get(name);
  if (value != NULL && strlen(value) >= max) {
    char accepted[64];
    snprintf(accepted, sizeof accepted, "a path shorter than %zu bytes", max);
    sc_env_refuse(name, value, accepted);
    return NULL;
  }
  return value;
}

uint64_t sc_clock_ns(clockid_t id) {
  struct timespec t;
  clock_gettime(id, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

size_t sc_page_size(void) {
  static size_t page; /* racing first calls store the same value */
  size_t p = __atomic_load_n(&page, __ATOMIC_RELAXED);
  if (p == 0) {
    p = (size_t)sysconf(_SC_PAGESIZE);
    __atomic_store_n(&page, p, __ATOMIC_RELAXED);
  }
  return p;
}

uintptr_t sc_address_hole(size_t size, size_t align) {
  FILE *maps = fopen("/proc/self/maps", "re");
  if (maps == NULL)
    return 0;
  const uintptr_t top = ((uintptr_t)1 << SC_ADDRESS_BITS) - align;
  uintptr_t best_lo = 0, best_hi = 0, end_prev = align, lo, hi;
  char line[512];
  while (fgets(line, sizeof line, maps) != NULL) {
    if (sscanf(line, "%lx-%lx", &lo, &hi) != 2)
      continue;
    if (lo > top)
      lo = top;
    if (lo > end_prev && lo - end_prev > best_hi - best_lo) {
      best_lo = end_prev;
      best_hi = lo;
    }
    if (hi > end_prev)
      end_prev = hi;
  }
  fclose(maps);
  if (top > end_prev && top - end_prev > best_hi - best_lo) {
    best_lo = end_prev;
    best_hi = top;
  }
  uintptr_t span = sc_round_up(size, align);
  best_lo = sc_round_up(best_lo, align);
  best_hi &= ~(uintptr_t)(align - 1);
  if (best_hi <= best_lo || best_hi - best_lo < span)
    return 0;
  return best_lo + (((best_hi - best_lo - span) / 2) & ~(uintptr_t)(align - 1));
}

int sc_range_writable(uintptr_t lo, uintptr_t hi, int *shared) {
  FILE *maps = fopen("/proc/self/maps", "re");
  *shared = 0;
  if (maps == NULL)
    return 0;
  uintptr_t covered = lo, start, end;
  char line[512], perms[8];
  while (covered < hi && fgets(line, sizeof line, maps) != NULL) {
    if (sscanf(line, "%lx-%lx %7s", &start, &end, perms) != 3 || end <= covered)
      continue;
    if (start > covered || perms[0] != 'r' || perms[1] != 'w')
      break; /* a hole, or pages the caller cannot both read and write */
    *shared |= perms[3] == 's';
    covered = end;
  }
  fclose(maps);
  return covered >= hi;
}

int sc_may_move_others_pages(void) {
  struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3};
  struct __user_cap_data_struct data[2];
  if (syscall(SYS_capget, &header, data) != 0)
    return 0;
  return (data[CAP_SYS_NICE / 32].effective >> (CAP_SYS_NICE % 32)) & 1;
}

int sc_stat_is_null_device(const struct stat *st) {
  return S_ISCHR(st->st_mode) && major(st->st_rdev) == 1 && minor(st->st_rdev) == 3;
}

void *sc_slot_table_grow(void *table, unsigned *cap, unsigned slot, pthread_key_t exit_key) {
  unsigned grown_cap = *cap ? *cap : 16;
  while (grown_cap <= slot)
    grown_cap *= 2;
  void **grown = realloc(table, grown_cap * sizeof *grown);
  if (grown == NULL)
    return NULL;
  memset(grown + *cap, 0, (grown_cap - *cap) * sizeof *grown);
  *cap = grown_cap;
  pthread_setspecific(exit_key, grown);
  return grown;
}

/* 0: no snapshot; 1: in one, not refreshed yet; 2: refreshed. */
static SC_TLS int snapshot_state;

void sc_stats_snapshot_begin(void) { snapshot_state = 1; }

void sc_stats_snapshot_end(void) { snapshot_state = 0; }

int sc_stats_refresh_due(void) {
  if (snapshot_state == 2)
    return 0;
  if (snapshot_state == 1)
    snapshot_state = 2;
  return 1;
}
