/* SPDX-License-Identifier: BSD-3-Clause */
/* arena_je_hooks.c: the jemalloc extent hooks of every private arena.
 * They carve extents from the arena's windows (and map each jemalloc
 * arena's first block of metadata outside them), count committed bytes
 * against the arena's maxsize (decommit gives the pages back with one
 * madvise; mprotect only under strict overcommit, see arena.h).  They
 * never call mallctl (that deadlocks inside arenas.create and
 * arena.<i>.destroy).  jemalloc turns a failed hook into NULL without a
 * cause, so a hook that fails describes why (sc_fail) and raises
 * sc_je_hook_failed for the allocation call to pass the cause on. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>

#include "arena_je.h"

SC_TLS int sc_je_hook_failed;

static sc_arena *hooks_arena(extent_hooks_t *hooks) { return ((sc_je_arena *)hooks)->arena; }

static bool hook_fail(int why) {
  sc_je_hook_failed = why;
  return false;
}

/* Adds len to the arena's committed bytes unless that exceeds maxsize. */
static bool held_reserve(sc_arena *a, size_t len) {
  size_t held = __atomic_load_n(&a->held, __ATOMIC_RELAXED);
  do {
    if (a->maxsize != 0 && (held + len > a->maxsize || held + len < held)) {
      sc_fail(ENOMEM, "%zu more bytes would pass maxsize %zu (held %zu)", len, a->maxsize,
              held);
      return hook_fail(SC_HOOK_MAXSIZE);
    }
  } while (!__atomic_compare_exchange_n(&a->held, &held, held + len, true, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED));
  size_t peak = __atomic_load_n(&a->peak_held, __ATOMIC_RELAXED);
  while (held + len > peak && !__atomic_compare_exchange_n(&a->peak_held, &peak, held + len, true,
                                                           __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    ;
  return true;
}

static void held_release(sc_arena *a, size_t len) {
  __atomic_fetch_sub(&a->held, len, __ATOMIC_RELAXED);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

static uint32_t *huge_count(const sc_window *w, uintptr_t page, size_t huge) {
  return &w->populated[(page - (uintptr_t)w->base) / huge];
}

/* The part of the huge page at `page` that a range starting at addr, or
 * ending at end, covers. */
static uintptr_t huge_overlap_start(uintptr_t page, const void *addr) {
  return page > (uintptr_t)addr ? page : (uintptr_t)addr;
}
static uintptr_t huge_overlap_end(uintptr_t page, size_t huge, uintptr_t end) {
  return page + huge < end ? page + huge : end;
}

/* Commit in a hugetlb arena: each huge page around the range that holds
 * no committed byte yet is counted against maxsize, then populated now
 * (MADV_POPULATE_WRITE fails where a first touch would raise SIGBUS); each
 * page's count then grows by the bytes committed in it.  A commit that
 * fails undoes what it did (jemalloc commits the range again later).
 * Bytes of a page that are not committed read as zero (fresh, or zeroed
 * by huge_drop), as jemalloc expects of what it commits. */
static bool huge_populate(sc_arena *a, void *addr, size_t len) {
  size_t huge = a->huge_page;
  uintptr_t lo = (uintptr_t)addr & ~(huge - 1), end = (uintptr_t)addr + len, page;
  bool ok = true;
  pthread_mutex_lock(&a->window_lock);
  sc_window *w = sc_window_of(a, addr);
  for (page = lo; ok && w != NULL && page < end; page += huge) {
    uint32_t *count = huge_count(w, page, huge);
    if (*count == 0) {
      ok = held_reserve(a, huge);
      if (ok && madvise((void *)page, huge, MADV_POPULATE_WRITE) != 0) {
        held_release(a, huge);
        sc_fail(ENOMEM, "no free %zu KiB huge page on the arena's nodes (%s)", huge >> 10,
                strerror(errno));
        ok = hook_fail(SC_HOOK_FAILED);
      }
    }
    if (ok)
      *count += (uint32_t)(huge_overlap_end(page, huge, end) - huge_overlap_start(page, addr));
  }
  for (uintptr_t undo = lo; !ok && w != NULL && undo < page - huge; undo += huge) {
    uint32_t *count = huge_count(w, undo, huge);
    *count -= (uint32_t)(huge_overlap_end(undo, huge, end) - huge_overlap_start(undo, addr));
    if (*count == 0 && madvise((void *)undo, huge, MADV_DONTNEED) == 0)
      held_release(a, huge);
    else if (*count == 0)
      *count = 1; /* kept: counted whole, as populated */
  }
  pthread_mutex_unlock(&a->window_lock);
  if (ok)
    sc_window_reach(a, addr, len);
  return ok;
}

/* Decommit in a hugetlb arena: each huge page whose last committed bytes
 * go back to the node's pool; in a page that keeps committed bytes (a
 * neighbouring extent's), the range is zeroed, so that it reads as
 * decommitted memory does when committed again.  Jemalloc can then
 * decommit any extent, and its free extents merge whole again. */
static bool huge_drop(sc_arena *a, void *addr, size_t len) {
  size_t huge = a->huge_page;
  uintptr_t lo = (uintptr_t)addr & ~(huge - 1), end = (uintptr_t)addr + len;
  pthread_mutex_lock(&a->window_lock);
  sc_window *w = sc_window_of(a, addr);
  for (uintptr_t page = lo; w != NULL && page < end; page += huge) {
    uintptr_t from = huge_overlap_start(page, addr), to = huge_overlap_end(page, huge, end);
    uint32_t *count = huge_count(w, page, huge);
    *count -= *count < to - from ? *count : (uint32_t)(to - from);
    if (*count == 0 && madvise((void *)page, huge, MADV_DONTNEED) == 0)
      held_release(a, huge);
    else if (*count == 0) /* kept: counted whole, as populated */
      *count = 1;
    else
      memset((void *)from, 0, to - from);
  }
  pthread_mutex_unlock(&a->window_lock);
  return true;
}

static bool pages_open(void *addr, size_t len) {
  if (sc_window_pages_open() || mprotect(addr, len, PROT_READ | PROT_WRITE) == 0)
    return true;
  sc_fail(errno, "mprotect could not open %zu bytes of the window: %s", len, strerror(errno));
  return hook_fail(SC_HOOK_FAILED);
}

/* Inside arenas.create, before its index reaches us, jemalloc allocates
 * the new arena's first 2 MiB block of metadata (its "base", about 84 KiB
 * touched) through these hooks: a request for an index we do not know yet.
 * Later base blocks, if it ever needs them, come from the windows. */
static bool metadata_request(const sc_je_arena *je, unsigned arena_ind) {
  unsigned n = __atomic_load_n(&je->nshards, __ATOMIC_ACQUIRE);
  for (unsigned i = 0; i < n; i++)
    if (je->shards[i] == arena_ind)
      return false;
  return true;
}

/* The metadata lives in ordinary memory, outside the windows: first
 * touched by the allocating threads, so near them; never on a device the
 * arena is bound to (a few KiB of HBM per arena), not counted against
 * maxsize, and never moved with the arena (moving it was most of the cost
 * of migrating a small arena).  No huge page: 84 KiB touched stays 84 KiB. */
static void *metadata_map(size_t size, size_t alignment) {
  size_t span = size + alignment;
  char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    sc_fail(ENOMEM, "no memory for the arena's metadata: %s", strerror(errno));
    hook_fail(SC_HOOK_FAILED);
    return NULL;
  }
  char *p = (char *)sc_round_up((uintptr_t)raw, alignment);
  if (p > raw)
    munmap(raw, (size_t)(p - raw));
  if (raw + span > p + size)
    munmap(p + size, (size_t)(raw + span - (p + size)));
  madvise(p, size, MADV_NOHUGEPAGE); /* advice: a kernel without THP needs none */
  return p;
}

static void *hook_alloc(extent_hooks_t *hooks, void *new_addr, size_t size, size_t alignment,
                        bool *zero, bool *commit, unsigned arena_ind) {
  sc_arena *a = hooks_arena(hooks);
  if (new_addr == NULL && metadata_request((const sc_je_arena *)hooks, arena_ind)) {
    void *p = metadata_map(size, alignment);
    *zero = *commit = p != NULL;
    return p;
  }
  /* The caller's memory is there already: committed from the start, so
   * that every free extent of it can merge with its neighbours. */
  if (a->borrowed)
    *commit = true;
  if (*commit && !a->huge_page && !held_reserve(a, size))
    return NULL;
  /* This call already failed to commit within maxsize.  jemalloc then
   * grows its address space to try again, which would fail the same way
   * and keep the new range, and its metadata, for ever: a range per
   * refusal, without end.  The maxsize failure stays the call's cause. */
  if (!*commit && sc_je_hook_failed == SC_HOOK_MAXSIZE)
    return NULL;
  pthread_mutex_lock(&a->window_lock);
  void *p = sc_window_take(a, new_addr, size, alignment);
  pthread_mutex_unlock(&a->window_lock);
  /* A fixed arena's range is its bound, as maxsize is: the caller relieves. */
  if (p == NULL)
    hook_fail(a->borrowed ? SC_HOOK_MAXSIZE : SC_HOOK_FAILED);
  if (p != NULL && a->huge_page) {
    *zero = true;
    return !*commit || huge_populate(a, p, size) ? p : NULL;
  }
  if (p == NULL || (*commit && !pages_open(p, size))) {
    /* Address space taken but not opened stays reserved: jemalloc never
     * hands it back to us, and it costs no memory. */
    if (*commit)
      held_release(a, size);
    return NULL;
  }
  if (*commit)
    sc_window_reach(a, p, size);
  *zero = !a->borrowed; /* never-opened window pages read as zero; the caller's may not */
  return p;
}

/* Declining keeps the extent retained in jemalloc, so window ranges are
 * never reused behind jemalloc's back; they go away with the arena. */
static bool hook_dalloc(extent_hooks_t *hooks, void *addr, size_t size, bool committed,
                        unsigned arena_ind) {
  if (sc_window_contains(hooks_arena(hooks), (uintptr_t)addr))
    return true;
  return munmap(addr, size) != 0; /* the metadata block, at the arena's destroy */
}

static void hook_destroy(extent_hooks_t *hooks, void *addr, size_t size, bool committed,
                         unsigned arena_ind) {
  if (committed && !hooks_arena(hooks)->huge_page) /* huge pages: held goes with the windows */
    held_release(hooks_arena(hooks), size);
}

static bool hook_commit(extent_hooks_t *hooks, void *addr, size_t size, size_t offset,
                        size_t length, unsigned arena_ind) {
  sc_arena *a = hooks_arena(hooks);
  if (a->huge_page)
    return !huge_populate(a, (char *)addr + offset, length);
  if (!held_reserve(a, length))
    return true;
  if (!pages_open((char *)addr + offset, length)) {
    held_release(a, length);
    return true;
  }
  sc_window_reach(a, (char *)addr + offset, length);
  return false;
}

static bool hook_decommit(extent_hooks_t *hooks, void *addr, size_t size, size_t offset,
                          size_t length, unsigned arena_ind) {
  char *p = (char *)addr + offset;
  if (hooks_arena(hooks)->huge_page)
    return !huge_drop(hooks_arena(hooks), p, length);
  if (hooks_arena(hooks)->borrowed)
    return true; /* the caller's pages: kept, whatever backs them */
  /* Never munmap inside a window: a hole would break range-wide mbind.
   * The pages read as zero afterwards, as jemalloc expects of decommitted
   * memory that it commits again. */
  if (madvise(p, length, MADV_DONTNEED) != 0 ||
      (!sc_window_pages_open() && mprotect(p, length, PROT_NONE) != 0))
    return true;
  held_release(hooks_arena(hooks), length);
  return false;
}

/* A hugetlb arena refuses purges: a purged huge page would fault again at
 * the next touch, where a pool run dry means SIGBUS; decommit gives its
 * pages back instead.  A fixed arena keeps the caller's pages: a
 * shared or file mapping would not even read as zero after a purge. */
static bool keeps_pages(extent_hooks_t *hooks) {
  return hooks_arena(hooks)->huge_page || hooks_arena(hooks)->borrowed;
}

static bool hook_purge_lazy(extent_hooks_t *hooks, void *addr, size_t size, size_t offset,
                            size_t length, unsigned arena_ind) {
  if (keeps_pages(hooks))
    return true;
  return madvise((char *)addr + offset, length, MADV_FREE) != 0;
}

static bool hook_purge_forced(extent_hooks_t *hooks, void *addr, size_t size, size_t offset,
                              size_t length, unsigned arena_ind) {
  if (keeps_pages(hooks))
    return true;
  return madvise((char *)addr + offset, length, MADV_DONTNEED) != 0;
}

static bool hook_split(extent_hooks_t *hooks, void *addr, size_t size, size_t size_a,
                       size_t size_b, bool committed, unsigned arena_ind) {
  return false;
}

static bool hook_merge(extent_hooks_t *hooks, void *addr_a, size_t size_a, void *addr_b,
                       size_t size_b, bool committed, unsigned arena_ind) {
  return false;
}

void sc_je_hooks_init(extent_hooks_t *hooks) {
  *hooks = (extent_hooks_t){hook_alloc,        hook_dalloc,       hook_destroy,
                            hook_commit,       hook_decommit,     hook_purge_lazy,
                            hook_purge_forced, hook_split,        hook_merge};
}
