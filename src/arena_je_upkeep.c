/* SPDX-License-Identifier: BSD-3-Clause */
/* arena_je_upkeep.c: upkeep of the private arenas through jemalloc —
 * moving a block out of a sparse slab (jemalloc's utilization query) and
 * jemalloc's background threads. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "arena_je.h"

/* What jemalloc's "experimental.utilization.query" says of a block (its
 * inspect_extent_util_stats_verbose_t). */
typedef struct slab_use {
  void *slabcur;                    /* the slab its bin allocates from now */
  size_t nfree, nregs, size;        /* of the block's slab; size in bytes */
  size_t bin_nfree, bin_nregs;      /* of every slab of its bin in its arena */
} slab_use;

/* Worth moving: a small block (a slab of several regions) with free
 * neighbours, not in the slab its bin fills next, and used less than the
 * bin's slabs are on average (used / nregs < bin_used / bin_nregs). */
static int worth_moving(void *ptr, size_t *usize) {
  slab_use u;
  size_t len = sizeof u;
  if (je_mallctl("experimental.utilization.query", &u, &len, &ptr, sizeof ptr) != 0 ||
      u.nregs <= 1 || u.nfree == 0 || u.bin_nregs == 0)
    return 0;
  if (u.slabcur != NULL && (uintptr_t)ptr - (uintptr_t)u.slabcur < u.size)
    return 0;
  *usize = je_sallocx(ptr, 0);
  return (u.nregs - u.nfree) * u.bin_nregs < (u.bin_nregs - u.bin_nfree) * u.nregs;
}

void *sicm_defrag_reallocate(void *ptr) {
  int saved_errno = errno;
  uint64_t generation;
  sc_arena *a = ptr != NULL ? sc_arena_of_ptr(ptr, &generation) : NULL;
  if (a != NULL && sc_check_on) /* stops on a block that is not live */
    sc_check_dies(ptr, "sicm_defrag_reallocate");
  size_t usize = 0;
  unsigned shard = 0;
  size_t len = sizeof shard;
  void *moved = NULL;
  /* Private arenas only: their pages carry size-class tags, by which an
   * address inside a block (not its start) is told and left alone. */
  if (a != NULL && sc_page_tag_of(ptr) != NULL && a->ops->usable_size(a, ptr) != 0 &&
      worth_moving(ptr, &usize) &&
      je_mallctl("arenas.lookup", &shard, &len, &ptr, sizeof ptr) == 0) {
    sc_je_hook_failed = 0;
    moved = je_mallocx(usize, MALLOCX_ARENA(shard) | MALLOCX_TCACHE_NONE);
  }
  if (moved != NULL) {
    sc_page_class_set(moved, sc_size_class(usize));
    memcpy(moved, ptr, usize);
    je_sdallocx(ptr, usize, MALLOCX_TCACHE_NONE);
  }
  if (a != NULL && sc_check_on)
    sc_check_born(moved != NULL ? moved : ptr, generation);
  errno = saved_errno;
  return moved;
}

int sicm_background_threads(int enable) {
  if (enable != 0 && enable != 1)
    return sc_fail(EINVAL, "sicm_background_threads: enable is %d, not 0 or 1", enable);
  bool on = enable;
  int err = je_mallctl("background_thread", NULL, NULL, &on, sizeof on);
  if (err == ENOENT)
    return sc_fail(ENOTSUP, "the allocator was built without background threads");
  if (err != 0)
    return sc_fail(EAGAIN, "the allocator could not %s its background threads (%s)",
                   enable ? "start" : "stop", strerror(err));
  return 0;
}
