/* extent_hooks.c: the jemalloc extent hooks of every arena.  They carve
 * extents from the arena's windows, open and close pages with mprotect,
 * and count committed bytes against the arena's maxsize.  They never call
 * mallctl (that deadlocks inside arenas.create and arena.<i>.destroy). */
#include <stdbool.h>
#include <sys/mman.h>

#include "internal.h"

static sicm_arena_rec *hooks_arena(extent_hooks_t *hooks) { return (sicm_arena_rec *)hooks; }

/* Adds len to the arena's committed bytes unless that exceeds maxsize. */
static bool held_reserve(sicm_arena_rec *rec, size_t len) {
  size_t held = __atomic_load_n(&rec->held, __ATOMIC_RELAXED);
  do {
    if (rec->maxsize != 0 && (held + len > rec->maxsize || held + len < held))
      return false;
  } while (!__atomic_compare_exchange_n(&rec->held, &held, held + len, true, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED));
  if (held + len >= SICM_THP_THRESHOLD && held < SICM_THP_THRESHOLD)
    sicm_window_advise_huge(rec);
  return true;
}

static void held_release(sicm_arena_rec *rec, size_t len) {
  __atomic_fetch_sub(&rec->held, len, __ATOMIC_RELAXED);
}

static bool pages_open(void *addr, size_t len) {
  return mprotect(addr, len, PROT_READ | PROT_WRITE) == 0;
}

static void *hook_alloc(extent_hooks_t *hooks, void *new_addr, size_t size, size_t alignment,
                        bool *zero, bool *commit, unsigned arena_ind) {
  sicm_arena_rec *rec = hooks_arena(hooks);
  if (*commit && !held_reserve(rec, size))
    return NULL;
  pthread_mutex_lock(&rec->window_lock);
  void *p = sicm_window_take(rec, new_addr, size, alignment);
  pthread_mutex_unlock(&rec->window_lock);
  if (p == NULL || (*commit && !pages_open(p, size))) {
    /* Address space taken but not opened stays reserved: jemalloc never
     * hands it back to us, and it costs no memory. */
    if (*commit)
      held_release(rec, size);
    return NULL;
  }
  *zero = true; /* never-opened window pages read as zero */
  return p;
}

/* Declining keeps the extent retained in jemalloc, so window ranges are
 * never reused behind jemalloc's back; they go away with the arena. */
static bool hook_dalloc(extent_hooks_t *hooks, void *addr, size_t size, bool committed,
                        unsigned arena_ind) {
  return true;
}

static void hook_destroy(extent_hooks_t *hooks, void *addr, size_t size, bool committed,
                         unsigned arena_ind) {
  if (committed)
    held_release(hooks_arena(hooks), size);
}

static bool hook_commit(extent_hooks_t *hooks, void *addr, size_t size, size_t offset,
                        size_t length, unsigned arena_ind) {
  sicm_arena_rec *rec = hooks_arena(hooks);
  if (!held_reserve(rec, length))
    return true;
  if (!pages_open((char *)addr + offset, length)) {
    held_release(rec, length);
    return true;
  }
  return false;
}

static bool hook_decommit(extent_hooks_t *hooks, void *addr, size_t size, size_t offset,
                          size_t length, unsigned arena_ind) {
  char *p = (char *)addr + offset;
  /* Never munmap inside a window: a hole would break range-wide mbind. */
  if (madvise(p, length, MADV_DONTNEED) != 0 || mprotect(p, length, PROT_NONE) != 0)
    return true;
  held_release(hooks_arena(hooks), length);
  return false;
}

static bool hook_purge_lazy(extent_hooks_t *hooks, void *addr, size_t size, size_t offset,
                            size_t length, unsigned arena_ind) {
  return madvise((char *)addr + offset, length, MADV_FREE) != 0;
}

static bool hook_purge_forced(extent_hooks_t *hooks, void *addr, size_t size, size_t offset,
                              size_t length, unsigned arena_ind) {
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

void sicm_extent_hooks_init(extent_hooks_t *hooks) {
  *hooks = (extent_hooks_t){hook_alloc,        hook_dalloc,       hook_destroy,
                            hook_commit,       hook_decommit,     hook_purge_lazy,
                            hook_purge_forced, hook_split,        hook_merge};
}
