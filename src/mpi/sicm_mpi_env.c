/* SPDX-License-Identifier: BSD-3-Clause */
/* sicm_mpi_env.c: libsicm-mpi's defaults from the environment, for programs
 * that pass no sicm_* info keys (an unmodified MPI code: Global Arrays over
 * ARMCI-MPI, NWChem), as Open MPI's MCA parameters give mpool hints:
 *   SICM_MPI_INFO                      hints of every call without its own
 *   SICM_MPI_INFO_ALLOC_MEM            of MPI_Alloc_mem, instead
 *   SICM_MPI_INFO_WIN_ALLOCATE         of MPI_Win_allocate, instead
 *   SICM_MPI_INFO_WIN_ALLOCATE_SHARED  of MPI_Win_allocate_shared, instead
 * each "key=value;key=value" with the info keys of sicm_mpi.c (a per-call
 * variable set but empty: no default for that call).  sicm_arena=@call
 * gives each call an arena of its own ("win#3 64MiB": the third window of
 * this process, of 64 MiB), so each window is an arena that moves, and is
 * reported, by itself.  The variables are read at each call. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sicm_mpi.h"

static const char *const call_vars[] = {
    [CALL_ALLOC_MEM] = "SICM_MPI_INFO_ALLOC_MEM",
    [CALL_WIN_ALLOCATE] = "SICM_MPI_INFO_WIN_ALLOCATE",
    [CALL_WIN_ALLOCATE_SHARED] = "SICM_MPI_INFO_WIN_ALLOCATE_SHARED",
};
static const char *const call_short[] = {
    [CALL_ALLOC_MEM] = "mem",
    [CALL_WIN_ALLOCATE] = "win",
    [CALL_WIN_ALLOCATE_SHARED] = "shwin",
};

const char *env_default(call_kind kind, const char **var) {
  const char *value = getenv(call_vars[kind]);
  *var = call_vars[kind];
  if (value == NULL) {
    value = getenv("SICM_MPI_INFO");
    *var = "SICM_MPI_INFO";
  }
  return value != NULL && value[0] != '\0' ? value : NULL;
}

/* The next "key=value" item of a default string from *at: the key's and
 * the value's spans, spaces around each dropped, and in *has_eq whether
 * the item has its '='; 0 at the end. */
static int item_next(const char **at, const char **key, size_t *key_len, const char **value,
                     size_t *value_len, int *has_eq) {
  const char *p = *at;
  while (*p == ';' || *p == ' ')
    p++;
  if (*p == '\0')
    return 0;
  size_t len = strcspn(p, ";");
  const char *eq = memchr(p, '=', len);
  *has_eq = eq != NULL;
  *key = p;
  *key_len = eq ? (size_t)(eq - p) : len;
  *value = eq ? eq + 1 : p + len;
  *value_len = eq ? len - *key_len - 1 : 0;
  while (*key_len > 0 && p[*key_len - 1] == ' ')
    (*key_len)--;
  while (*value_len > 0 && **value == ' ')
    (*value)++, (*value_len)--;
  while (*value_len > 0 && (*value)[*value_len - 1] == ' ')
    (*value_len)--;
  *at = p + len;
  return 1;
}

int env_get(const void *defaults, const char *key, char *value, int len) {
  const char *at = defaults, *k, *v;
  size_t klen, vlen;
  int has_eq;
  while (item_next(&at, &k, &klen, &v, &vlen, &has_eq))
    if (klen == strlen(key) && strncmp(k, key, klen) == 0) {
      snprintf(value, (size_t)len, "%.*s", (int)vlen, v);
      return 1;
    }
  return 0;
}

int env_keys_known(const char *defaults) {
  static const char *const keys[] = {"sicm_memory", "sicm_fallback", "sicm_arena", "sicm_window",
                                     "mpi_memory_alloc_kinds"};
  const char *at = defaults, *k, *v;
  size_t klen, vlen;
  int has_eq;
  while (item_next(&at, &k, &klen, &v, &vlen, &has_eq)) {
    int known = 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0] && !known; i++)
      known = has_eq && klen == strlen(keys[i]) && strncmp(k, keys[i], klen) == 0;
    if (!known)
      return 0;
  }
  return 1;
}

void per_call_name(call_kind kind, MPI_Aint size, char *out, size_t room) {
  static unsigned long counts[3];
  unsigned long n = __atomic_add_fetch(&counts[kind], 1, __ATOMIC_RELAXED);
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  unsigned long long v = size > 0 ? (unsigned long long)size : 0;
  unsigned u = 0;
  while (u + 1 < sizeof units / sizeof units[0] && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    u++;
  }
  snprintf(out, room, "mpi:%s#%lu %llu%s", call_short[kind], n, v, units[u]);
}
