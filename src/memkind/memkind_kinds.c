/* SPDX-License-Identifier: BSD-3-Clause */
/* memkind_kinds.c: memkind's static kinds — each one's memory type (HBM,
 * capacity, any, or an attribute), scope (the nearest node of that type,
 * all of them, or those local to the calling CPU), placement (bind,
 * preferred, interleave) and page size; the MEMKIND_* handles memkind
 * exports, and hbwmalloc's choice of kind per policy and page size. */
#include "memkind_internal.h"

#define KIND(name, memory, scope, place) {name, memory, scope, place, 0, NULL, NULL, 0}
#define HUGE_KIND(name, memory, scope, place, page) {name, memory, scope, place, page, NULL, NULL, 0}
#define MB2 ((size_t)2 << 20)
struct memkind mk_kinds[MK_KINDS_MAX] = {
    KIND("memkind_default", MEM_LOCAL, SCOPE_NEAREST, PLACE_DEFAULT),
    KIND("memkind_regular", MEM_REGULAR, SCOPE_ALL, PLACE_BIND),
    KIND("memkind_hbw", MEM_HBW, SCOPE_NEAREST, PLACE_BIND),
    KIND("memkind_hbw_all", MEM_HBW, SCOPE_ALL, PLACE_BIND),
    KIND("memkind_hbw_preferred", MEM_HBW, SCOPE_NEAREST, PLACE_PREFERRED),
    KIND("memkind_hbw_interleave", MEM_HBW, SCOPE_ALL, PLACE_INTERLEAVE),
    KIND("memkind_interleave", MEM_ANY, SCOPE_ALL, PLACE_INTERLEAVE),
    KIND("memkind_dax_kmem", MEM_CAPACITY, SCOPE_NEAREST, PLACE_BIND),
    KIND("memkind_dax_kmem_all", MEM_CAPACITY, SCOPE_ALL, PLACE_BIND),
    KIND("memkind_dax_kmem_preferred", MEM_CAPACITY, SCOPE_NEAREST, PLACE_PREFERRED),
    KIND("memkind_dax_kmem_interleave", MEM_CAPACITY, SCOPE_ALL, PLACE_INTERLEAVE),
    KIND("memkind_highest_capacity", MEM_HIGHEST_CAPACITY, SCOPE_ALL, PLACE_BIND),
    KIND("memkind_highest_capacity_preferred", MEM_HIGHEST_CAPACITY, SCOPE_ALL, PLACE_PREFERRED),
    KIND("memkind_highest_capacity_local", MEM_HIGHEST_CAPACITY, SCOPE_LOCAL, PLACE_BIND),
    KIND("memkind_highest_capacity_local_preferred", MEM_HIGHEST_CAPACITY, SCOPE_LOCAL,
         PLACE_PREFERRED),
    KIND("memkind_lowest_latency_local", MEM_LOWEST_LATENCY, SCOPE_LOCAL, PLACE_BIND),
    KIND("memkind_lowest_latency_local_preferred", MEM_LOWEST_LATENCY, SCOPE_LOCAL,
         PLACE_PREFERRED),
    KIND("memkind_highest_bandwidth_local", MEM_HIGHEST_BANDWIDTH, SCOPE_LOCAL, PLACE_BIND),
    KIND("memkind_highest_bandwidth_local_preferred", MEM_HIGHEST_BANDWIDTH, SCOPE_LOCAL,
         PLACE_PREFERRED),
    /* Hugetlb pages from the nodes' reserved pools: MEMKIND_HUGETLB and
     * MEMKIND_GBTLB take the default policy's (the allocating thread's
     * pool first).  memkind's GBTLB kinds map 1 GiB at a time of 2 MiB
     * pages (MAP_HUGE_2MB): 2 MiB pages here too, committed as used. */
    HUGE_KIND("memkind_hugetlb", MEM_ANY, SCOPE_NEAREST, PLACE_DEFAULT, MB2),
    HUGE_KIND("memkind_hbw_hugetlb", MEM_HBW, SCOPE_NEAREST, PLACE_BIND, MB2),
    HUGE_KIND("memkind_hbw_preferred_hugetlb", MEM_HBW, SCOPE_NEAREST, PLACE_PREFERRED, MB2),
    HUGE_KIND("memkind_hbw_all_hugetlb", MEM_HBW, SCOPE_ALL, PLACE_BIND, MB2),
    HUGE_KIND("memkind_gbtlb", MEM_ANY, SCOPE_NEAREST, PLACE_DEFAULT, MB2),
    HUGE_KIND("memkind_hbw_gbtlb", MEM_HBW, SCOPE_NEAREST, PLACE_BIND, MB2),
    HUGE_KIND("memkind_hbw_preferred_gbtlb", MEM_HBW, SCOPE_NEAREST, PLACE_PREFERRED, MB2),
};
memkind_t MEMKIND_DEFAULT = &mk_kinds[0];
memkind_t MEMKIND_REGULAR = &mk_kinds[MK_KIND_REGULAR];
memkind_t MEMKIND_HBW = &mk_kinds[2];
memkind_t MEMKIND_HBW_ALL = &mk_kinds[3];
memkind_t MEMKIND_HBW_PREFERRED = &mk_kinds[4];
memkind_t MEMKIND_HBW_INTERLEAVE = &mk_kinds[5];
memkind_t MEMKIND_INTERLEAVE = &mk_kinds[6];
memkind_t MEMKIND_DAX_KMEM = &mk_kinds[7];
memkind_t MEMKIND_DAX_KMEM_ALL = &mk_kinds[8];
memkind_t MEMKIND_DAX_KMEM_PREFERRED = &mk_kinds[9];
memkind_t MEMKIND_DAX_KMEM_INTERLEAVE = &mk_kinds[10];
memkind_t MEMKIND_HIGHEST_CAPACITY = &mk_kinds[11];
memkind_t MEMKIND_HIGHEST_CAPACITY_PREFERRED = &mk_kinds[12];
memkind_t MEMKIND_HIGHEST_CAPACITY_LOCAL = &mk_kinds[13];
memkind_t MEMKIND_HIGHEST_CAPACITY_LOCAL_PREFERRED = &mk_kinds[14];
memkind_t MEMKIND_LOWEST_LATENCY_LOCAL = &mk_kinds[15];
memkind_t MEMKIND_LOWEST_LATENCY_LOCAL_PREFERRED = &mk_kinds[16];
memkind_t MEMKIND_HIGHEST_BANDWIDTH_LOCAL = &mk_kinds[17];
memkind_t MEMKIND_HIGHEST_BANDWIDTH_LOCAL_PREFERRED = &mk_kinds[18];
memkind_t MEMKIND_HUGETLB = &mk_kinds[19];
memkind_t MEMKIND_HBW_HUGETLB = &mk_kinds[20];
memkind_t MEMKIND_HBW_PREFERRED_HUGETLB = &mk_kinds[21];
memkind_t MEMKIND_HBW_ALL_HUGETLB = &mk_kinds[22];
memkind_t MEMKIND_GBTLB = &mk_kinds[23];
memkind_t MEMKIND_HBW_GBTLB = &mk_kinds[24];
memkind_t MEMKIND_HBW_PREFERRED_GBTLB = &mk_kinds[25];

memkind_t mk_kind(unsigned i) { return i < MK_KINDS_MAX ? &mk_kinds[i] : NULL; }

/* memkind's choice (hbw_choose_kind) for each policy and page size, but
 * that the preferred policy keeps its HBW kinds where no HBM exists: they
 * fall back to the local node then (kind_arena_make), as memkind's
 * default kinds would place, and hbw_free knows their blocks.
 * Interleaving has base pages only (the caller refuses the others). */
memkind_t mk_hbw_kind(int policy, int pagesize) {
  int huge = pagesize == HBW_PAGESIZE_2MB, giant = pagesize >= HBW_PAGESIZE_1GB_STRICT;
  switch (policy) {
  case HBW_POLICY_BIND:
    return giant ? MEMKIND_HBW_GBTLB : huge ? MEMKIND_HBW_HUGETLB : MEMKIND_HBW;
  case HBW_POLICY_BIND_ALL:
    return giant ? MEMKIND_HBW_GBTLB : huge ? MEMKIND_HBW_ALL_HUGETLB : MEMKIND_HBW_ALL;
  case HBW_POLICY_INTERLEAVE:
    return MEMKIND_HBW_INTERLEAVE;
  case HBW_POLICY_PREFERRED:
    return giant ? MEMKIND_HBW_PREFERRED_GBTLB
                 : huge ? MEMKIND_HBW_PREFERRED_HUGETLB : MEMKIND_HBW_PREFERRED;
  default:
    return NULL;
  }
}

