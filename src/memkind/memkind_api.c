/* SPDX-License-Identifier: BSD-3-Clause */
/* memkind_api.c: memkind 1.14's calls about kinds rather than blocks — the
 * version, kinds by (memtype, policy, flags) and by partition number, a
 * kind's capacity, its statistics, cached and printed, and the allocator's
 * upkeep (defragmentation, background threads). */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <numa.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "memkind_internal.h"

int memkind_get_version(void) { return 1 * 1000000 + 14 * 1000 + 0; }

/* memkind's table of what memkind_create_kind supports, and the kind each
 * combination names. */
static const struct {
  unsigned memtype;
  memkind_policy_t policy;
  unsigned flags;
  memkind_t *kind;
} supported[] = {
    {MEMKIND_MEMTYPE_HIGH_BANDWIDTH, MEMKIND_POLICY_BIND_LOCAL, 0, &MEMKIND_HBW},
    {MEMKIND_MEMTYPE_HIGH_BANDWIDTH, MEMKIND_POLICY_BIND_LOCAL, MEMKIND_MASK_PAGE_SIZE_2MB,
     &MEMKIND_HBW_HUGETLB},
    {MEMKIND_MEMTYPE_HIGH_BANDWIDTH, MEMKIND_POLICY_BIND_ALL, 0, &MEMKIND_HBW_ALL},
    {MEMKIND_MEMTYPE_HIGH_BANDWIDTH, MEMKIND_POLICY_BIND_ALL, MEMKIND_MASK_PAGE_SIZE_2MB,
     &MEMKIND_HBW_ALL_HUGETLB},
    {MEMKIND_MEMTYPE_HIGH_BANDWIDTH, MEMKIND_POLICY_PREFERRED_LOCAL, 0, &MEMKIND_HBW_PREFERRED},
    {MEMKIND_MEMTYPE_HIGH_BANDWIDTH, MEMKIND_POLICY_PREFERRED_LOCAL, MEMKIND_MASK_PAGE_SIZE_2MB,
     &MEMKIND_HBW_PREFERRED_HUGETLB},
    {MEMKIND_MEMTYPE_HIGH_BANDWIDTH, MEMKIND_POLICY_INTERLEAVE_ALL, 0, &MEMKIND_HBW_INTERLEAVE},
    {MEMKIND_MEMTYPE_DEFAULT, MEMKIND_POLICY_PREFERRED_LOCAL, 0, &MEMKIND_DEFAULT},
    {MEMKIND_MEMTYPE_DEFAULT, MEMKIND_POLICY_PREFERRED_LOCAL, MEMKIND_MASK_PAGE_SIZE_2MB,
     &MEMKIND_HUGETLB},
    {MEMKIND_MEMTYPE_DEFAULT | MEMKIND_MEMTYPE_HIGH_BANDWIDTH, MEMKIND_POLICY_INTERLEAVE_ALL, 0,
     &MEMKIND_INTERLEAVE},
};

int memkind_create_kind(memkind_memtype_t memtype_flags, memkind_policy_t policy,
                        memkind_bits_t flags, memkind_t *kind) {
  const unsigned memtypes = MEMKIND_MEMTYPE_DEFAULT | MEMKIND_MEMTYPE_HIGH_BANDWIDTH;
  if (kind == NULL || memtype_flags == 0 || (memtype_flags & ~memtypes) ||
      (flags & ~(unsigned)MEMKIND_MASK_PAGE_SIZE_2MB) || (unsigned)policy >= MEMKIND_POLICY_MAX_VALUE)
    return MEMKIND_ERROR_INVALID;
  for (size_t i = 0; i < sizeof supported / sizeof supported[0]; i++) {
    if (supported[i].memtype != (unsigned)memtype_flags || supported[i].policy != policy ||
        supported[i].flags != (unsigned)flags)
      continue;
    if (memkind_check_available(*supported[i].kind) == 0) {
      *kind = *supported[i].kind;
      return MEMKIND_SUCCESS;
    }
    if (policy == MEMKIND_POLICY_PREFERRED_LOCAL) {
      *kind = MEMKIND_DEFAULT;
      return MEMKIND_SUCCESS;
    }
    return MEMKIND_ERROR_MEMTYPE_NOT_AVAILABLE;
  }
  return MEMKIND_ERROR_INVALID;
}

void *memkind_defrag_reallocate(memkind_t kind, void *ptr) {
  (void)kind; /* the block's arena says where the new block goes */
  return sicm_defrag_reallocate(ptr);
}

int memkind_set_bg_threads(bool state) {
  if (!mk_ready())
    return MEMKIND_ERROR_OPERATION_FAILED;
  return sicm_background_threads(state) == 0 ? MEMKIND_SUCCESS : MEMKIND_ERROR_OPERATION_FAILED;
}

/* A file-backed kind goes with its memory; the static kinds live as long
 * as the process (memkind would destroy their arenas under other users). */
int memkind_destroy_kind(memkind_t kind) {
  if (!mk_kind_valid(kind))
    return MEMKIND_ERROR_INVALID;
  return mk_kind_single(kind) ? mk_single_kind_destroy(kind) : MEMKIND_SUCCESS;
}

int memkind_get_kind_by_partition(int partition, memkind_t *kind) {
  memkind_t *by_partition[MEMKIND_NUM_BASE_KIND] = {
      [MEMKIND_PARTITION_DEFAULT] = &MEMKIND_DEFAULT,
      [MEMKIND_PARTITION_HBW] = &MEMKIND_HBW,
      [MEMKIND_PARTITION_HBW_HUGETLB] = &MEMKIND_HBW_HUGETLB,
      [MEMKIND_PARTITION_HBW_PREFERRED] = &MEMKIND_HBW_PREFERRED,
      [MEMKIND_PARTITION_HBW_PREFERRED_HUGETLB] = &MEMKIND_HBW_PREFERRED_HUGETLB,
      [MEMKIND_PARTITION_HUGETLB] = &MEMKIND_HUGETLB,
      [MEMKIND_PARTITION_HBW_GBTLB] = &MEMKIND_HBW_GBTLB,
      [MEMKIND_PARTITION_HBW_PREFERRED_GBTLB] = &MEMKIND_HBW_PREFERRED_GBTLB,
      [MEMKIND_PARTITION_GBTLB] = &MEMKIND_GBTLB,
      [MEMKIND_PARTITION_HBW_INTERLEAVE] = &MEMKIND_HBW_INTERLEAVE,
      [MEMKIND_PARTITION_INTERLEAVE] = &MEMKIND_INTERLEAVE,
      [MEMKIND_PARTITION_REGULAR] = &MEMKIND_REGULAR,
      [MEMKIND_PARTITION_HBW_ALL] = &MEMKIND_HBW_ALL,
      [MEMKIND_PARTITION_HBW_ALL_HUGETLB] = &MEMKIND_HBW_ALL_HUGETLB,
      [MEMKIND_PARTITION_DAX_KMEM] = &MEMKIND_DAX_KMEM,
      [MEMKIND_PARTITION_DAX_KMEM_ALL] = &MEMKIND_DAX_KMEM_ALL,
      [MEMKIND_PARTITION_DAX_KMEM_PREFERRED] = &MEMKIND_DAX_KMEM_PREFERRED,
      [MEMKIND_PARTITION_DAX_KMEM_INTERLEAVE] = &MEMKIND_DAX_KMEM_INTERLEAVE,
      [MEMKIND_PARTITION_HIGHEST_CAPACITY] = &MEMKIND_HIGHEST_CAPACITY,
      [MEMKIND_PARTITION_HIGHEST_CAPACITY_PREFERRED] = &MEMKIND_HIGHEST_CAPACITY_PREFERRED,
      [MEMKIND_PARTITION_HIGHEST_CAPACITY_LOCAL] = &MEMKIND_HIGHEST_CAPACITY_LOCAL,
      [MEMKIND_PARTITION_HIGHEST_CAPACITY_LOCAL_PREFERRED] = &MEMKIND_HIGHEST_CAPACITY_LOCAL_PREFERRED,
      [MEMKIND_PARTITION_LOWEST_LATENCY_LOCAL] = &MEMKIND_LOWEST_LATENCY_LOCAL,
      [MEMKIND_PARTITION_LOWEST_LATENCY_LOCAL_PREFERRED] = &MEMKIND_LOWEST_LATENCY_LOCAL_PREFERRED,
      [MEMKIND_PARTITION_HIGHEST_BANDWIDTH_LOCAL] = &MEMKIND_HIGHEST_BANDWIDTH_LOCAL,
      [MEMKIND_PARTITION_HIGHEST_BANDWIDTH_LOCAL_PREFERRED] = &MEMKIND_HIGHEST_BANDWIDTH_LOCAL_PREFERRED,
  };
  if (kind == NULL || partition < 0 || partition >= MEMKIND_NUM_BASE_KIND)
    return MEMKIND_ERROR_UNAVAILABLE;
  *kind = *by_partition[partition];
  return 0;
}

/* A kind is one set of nodes unless it prefers or binds nothing (it may
 * spill anywhere) or takes hugetlb pages (memkind refuses those too). */
ssize_t memkind_get_capacity(memkind_t kind) {
  if (!mk_kind_valid(kind) || !mk_ready())
    return -1;
  if (kind == MEMKIND_DEFAULT) {
    long long total = 0;
    for (int node = 0; node <= numa_max_node(); node++) {
      long long size = numa_node_size64(node, NULL);
      total += size > 0 ? size : 0;
    }
    return (ssize_t)total;
  }
  if (mk_kind_single(kind))
    return (ssize_t)kind->single_size;
  if (kind->place == PLACE_PREFERRED || kind->place == PLACE_DEFAULT || kind->huge_page)
    return -1;
  sicm_device *devs[SICM_ARENA_DEVICES_MAX];
  int node = sicm_node_self();
  unsigned n = mk_kind_devices(kind, node < 0 ? 0 : node, devs);
  ssize_t total = 0;
  for (unsigned i = 0; i < n; i++)
    total += (ssize_t)devs[i]->capacity;
  return total;
}

/* ---- statistics ---- */

enum { STATS = MEMKIND_STAT_TYPE_MAX_VALUE };
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t cached[MK_KINDS_MAX + 1][STATS]; /* per kind slot, then the total */

/* The kind's figures now: its arenas', or the heap's. */
static void kind_stats(memkind_t kind, size_t out[STATS]) {
  memset(out, 0, STATS * sizeof out[0]);
  if (mk_kind_in_heap(kind)) {
    struct mallinfo2 m = mallinfo2();
    out[MEMKIND_STAT_TYPE_ALLOCATED] = m.uordblks + m.hblkhd;
    out[MEMKIND_STAT_TYPE_ACTIVE] = m.uordblks + m.hblkhd;
    out[MEMKIND_STAT_TYPE_RESIDENT] = m.arena + m.hblkhd;
    return;
  }
  sicm_arena *arenas = __atomic_load_n(&kind->arenas, __ATOMIC_ACQUIRE);
  int n = mk_kind_single(kind) ? 1 : arenas != NULL ? mk_machine.node_slots : 0;
  for (int node = 0; node < n; node++) {
    sicm_arena a = mk_kind_single(kind) ? kind->single_arena
                                             : __atomic_load_n(&arenas[node], __ATOMIC_ACQUIRE);
    sicm_arena_stats s;
    if (a == NULL || sicm_arena_get_stats(a, &s) != 0)
      continue;
    out[MEMKIND_STAT_TYPE_ALLOCATED] += s.allocated;
    out[MEMKIND_STAT_TYPE_ACTIVE] += s.active;
    out[MEMKIND_STAT_TYPE_RESIDENT] += s.resident;
  }
}

int memkind_update_cached_stats(void) {
  static size_t now[MK_KINDS_MAX + 1][STATS];
  pthread_mutex_lock(&stats_lock);
  memset(now, 0, sizeof now);
  for (unsigned k = 0; k < MK_KINDS_MAX; k++) { /* the heap is one kind's at most */
    if (!mk_kind_valid(mk_kind(k)))
      continue;
    kind_stats(mk_kind(k), now[k]);
    for (int s = 0; s < STATS; s++)
      now[MK_KINDS_MAX][s] += now[k][s];
  }
  memcpy(cached, now, sizeof cached);
  pthread_mutex_unlock(&stats_lock);
  return MEMKIND_SUCCESS;
}

int memkind_get_stat(memkind_t kind, memkind_stat_type stat, size_t *value) {
  if (value == NULL || (unsigned)stat >= STATS || (kind != NULL && !mk_kind_valid(kind)))
    return MEMKIND_ERROR_INVALID;
  unsigned row = kind == NULL ? MK_KINDS_MAX : (unsigned)(kind - mk_kind(0));
  pthread_mutex_lock(&stats_lock);
  *value = cached[row][stat];
  pthread_mutex_unlock(&stats_lock);
  return MEMKIND_SUCCESS;
}

static void write_stderr(void *unused, const char *text) {
  (void)unused;
  fputs(text, stderr);
}

int memkind_stats_print(void (*write_cb)(void *, const char *), void *cbopaque,
                        memkind_stat_print_opt opts) {
  if ((unsigned)opts >= (MEMKIND_STAT_PRINT_OMIT_EXTENT << 1))
    return MEMKIND_ERROR_INVALID;
  if (write_cb == NULL)
    write_cb = write_stderr;
  int json = opts & MEMKIND_STAT_PRINT_JSON_FORMAT;
  memkind_update_cached_stats();
  char line[256];
  write_cb(cbopaque, json ? "{\"memkind\": {\"kinds\": [" : "memkind statistics (libsicm), bytes:\n");
  for (unsigned k = 0, first = 1; k <= MK_KINDS_MAX; k++) {
    if (k == MK_KINDS_MAX && (opts & MEMKIND_STAT_PRINT_OMIT_GENERAL))
      break;
    if (k < MK_KINDS_MAX && !mk_kind_valid(mk_kind(k)))
      continue;
    size_t s[STATS];
    pthread_mutex_lock(&stats_lock);
    memcpy(s, cached[k], sizeof s);
    pthread_mutex_unlock(&stats_lock);
    const char *name = k < MK_KINDS_MAX ? mk_kind(k)->name : "total";
    if (k < MK_KINDS_MAX && s[MEMKIND_STAT_TYPE_RESIDENT] == 0 && s[MEMKIND_STAT_TYPE_ALLOCATED] == 0)
      continue; /* a kind never used */
    snprintf(line, sizeof line,
             json ? "%s{\"name\": \"%s\", \"resident\": %zu, \"active\": %zu, \"allocated\": %zu}"
                  : "%s%-44s resident %12zu  active %12zu  allocated %12zu\n",
             json ? (first ? "" : ", ") : "", name, s[MEMKIND_STAT_TYPE_RESIDENT],
             s[MEMKIND_STAT_TYPE_ACTIVE], s[MEMKIND_STAT_TYPE_ALLOCATED]);
    write_cb(cbopaque, line);
    first = 0;
  }
  if (json)
    write_cb(cbopaque, "]}}\n");
  return MEMKIND_SUCCESS;
}
