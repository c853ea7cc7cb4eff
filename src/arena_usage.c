/* SPDX-License-Identifier: BSD-3-Clause */
/* arena_usage.c: what an arena carries for automatic placement — its
 * name, the rates the placer measured (sicm_arena_get_rates()) and how the
 * placer may treat it (sicm_arena_set_autoplace()).  The placer itself
 * (autoplace*.c) sits above migration; it writes here, reports read here. */
#include <errno.h>
#include <string.h>

#include "arena.h"

void sc_arena_usage_reset(sc_arena *a) {
  uint64_t *fields[] = {&a->usage.intervals, &a->usage.referenced_last, &a->usage.resident,
                        &a->usage.rate_bits, &a->usage.fast_ns, &a->usage.slow_ns,
                        &a->usage.moves_in, &a->usage.moves_out};
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
    __atomic_store_n(fields[i], 0, __ATOMIC_RELAXED);
  __atomic_store_n(&a->usage.on_fast, 0, __ATOMIC_RELAXED);
}

void sc_arena_usage_store(sc_arena *a, const sicm_arena_rates *r) {
  uint64_t bits;
  memcpy(&bits, &r->referenced_per_second, sizeof bits);
  __atomic_store_n(&a->usage.intervals, r->intervals, __ATOMIC_RELAXED);
  __atomic_store_n(&a->usage.referenced_last, r->referenced_last, __ATOMIC_RELAXED);
  __atomic_store_n(&a->usage.resident, r->resident, __ATOMIC_RELAXED);
  __atomic_store_n(&a->usage.rate_bits, bits, __ATOMIC_RELAXED);
  __atomic_store_n(&a->usage.fast_ns, r->fast_ns, __ATOMIC_RELAXED);
  __atomic_store_n(&a->usage.slow_ns, r->slow_ns, __ATOMIC_RELAXED);
  __atomic_store_n(&a->usage.moves_in, r->moves_in, __ATOMIC_RELAXED);
  __atomic_store_n(&a->usage.moves_out, r->moves_out, __ATOMIC_RELAXED);
  __atomic_store_n(&a->usage.on_fast, r->on_fast, __ATOMIC_RELAXED);
}

int sicm_arena_get_rates(sicm_arena sa, sicm_arena_rates *out) {
  sc_arena *a = sc_arena_resolve(sa);
  if (a == NULL)
    return -1;
  if (out == NULL)
    return sc_fail(EINVAL, "sicm_arena_get_rates: out is NULL");
  uint64_t bits = __atomic_load_n(&a->usage.rate_bits, __ATOMIC_RELAXED);
  memset(out, 0, sizeof *out);
  memcpy(&out->referenced_per_second, &bits, sizeof bits);
  out->intervals = __atomic_load_n(&a->usage.intervals, __ATOMIC_RELAXED);
  out->referenced_last = __atomic_load_n(&a->usage.referenced_last, __ATOMIC_RELAXED);
  out->resident = __atomic_load_n(&a->usage.resident, __ATOMIC_RELAXED);
  out->density = out->resident ? out->referenced_per_second / (double)out->resident : 0;
  out->fast_ns = __atomic_load_n(&a->usage.fast_ns, __ATOMIC_RELAXED);
  out->slow_ns = __atomic_load_n(&a->usage.slow_ns, __ATOMIC_RELAXED);
  out->moves_in = __atomic_load_n(&a->usage.moves_in, __ATOMIC_RELAXED);
  out->moves_out = __atomic_load_n(&a->usage.moves_out, __ATOMIC_RELAXED);
  out->on_fast = __atomic_load_n(&a->usage.on_fast, __ATOMIC_RELAXED);
  out->mode = __atomic_load_n(&a->autoplace_mode, __ATOMIC_RELAXED);
  return 0;
}

int sicm_arena_set_autoplace(sicm_arena sa, int mode) {
  sc_arena *a = sc_arena_resolve(sa);
  if (a == NULL)
    return -1;
  if (mode != SICM_AUTOPLACE_AUTO && mode != SICM_AUTOPLACE_PIN && mode != SICM_AUTOPLACE_EXCLUDE)
    return sc_fail(EINVAL, "sicm_arena_set_autoplace: unknown mode %d", mode);
  __atomic_store_n(&a->autoplace_mode, mode, __ATOMIC_RELAXED);
  return 0;
}

int sicm_arena_set_name(sicm_arena sa, const char *name) {
  sc_arena *a = sc_arena_resolve(sa);
  if (a == NULL)
    return -1;
  size_t n = name ? strnlen(name, SICM_ARENA_NAME_MAX) : 0;
  if (n == SICM_ARENA_NAME_MAX)
    return sc_fail(EINVAL, "an arena name has at most %d characters", SICM_ARENA_NAME_MAX - 1);
  for (size_t i = 0; i < n; i++)
    if (name[i] < 0x20 || name[i] > 0x7e || name[i] == '"' || name[i] == '\\')
      return sc_fail(EINVAL, "an arena name is printable ASCII without '\"' or '\\\\' "
                             "(character %zu is not)", i);
  pthread_mutex_lock(&a->window_lock);
  memcpy(a->name, n ? name : "", n);
  a->name[n] = '\0';
  pthread_mutex_unlock(&a->window_lock);
  return 0;
}

void sc_arena_name_copy(sc_arena *a, char *out) {
  pthread_mutex_lock(&a->window_lock);
  memcpy(out, a->name, SICM_ARENA_NAME_MAX);
  pthread_mutex_unlock(&a->window_lock);
}

int sicm_arena_get_name(sicm_arena sa, char *out, size_t size) {
  sc_arena *a = sc_arena_resolve(sa);
  if (a == NULL)
    return -1;
  char name[SICM_ARENA_NAME_MAX];
  sc_arena_name_copy(a, name);
  size_t n = strlen(name);
  if (out == NULL || size <= n)
    return sc_fail(EINVAL, "sicm_arena_get_name: %s", out ? "the buffer is too small" : "out is NULL");
  memcpy(out, name, n + 1);
  return (int)n;
}
