/* SPDX-License-Identifier: BSD-3-Clause */
/* arena_je_fast.c: sicm_arena_alloc and sicm_free, the two calls every
 * container makes, and the thread's front that the public header's inline
 * fast path reads.  Each function first serves the front as the inline
 * path does, so that a caller who cannot inline (Fortran, MPI, dlsym, the
 * adapters) pays one call, not the lookups.  Past the front it serves this
 * thread's bins of any private arena straight from the handle (alloc) or
 * from the pointer's page tag and window owner (free), and large blocks
 * from the one the thread kept or with one jemalloc call: no call through
 * the operations table, no query to jemalloc for a size.  Whatever else
 * goes to the entry points of every kind in arena_alloc.c.  A small
 * allocation makes its arena the front. */
#include "arena_je.h"

SC_TLS sicm_front_v2_t sc_front;
extern SC_TLS sicm_front_v2_t sicm_front_v2
    __attribute__((alias("sc_front"), visibility("default")));

/* Makes the cache of the arena with handle h this thread's front; left
 * empty when the arena died meanwhile (the epoch is read first, so a
 * destroy after the check leaves the front stale, not wrong). */
static void front_set(sc_arena *a, uintptr_t h, sc_thread_cache *cache) {
  if (__builtin_expect(sc_check_on, 0))
    return; /* every call reaches the entry points, which check */
  uint64_t epoch = __atomic_load_n(&sicm_epoch_v2, __ATOMIC_ACQUIRE);
  if (__atomic_load_n(&a->live_generation, __ATOMIC_ACQUIRE) != cache->generation)
    return;
  uintptr_t base = 0, size = 0;
  const uint8_t *tags = NULL;
  if (__atomic_load_n(&a->nwindows, __ATOMIC_ACQUIRE) > 0) {
    /* The first chunk of the first window: one table of tags covers it. */
    base = (uintptr_t)a->windows[0].base;
    tags = __atomic_load_n(&sc_page_tags[base >> SC_CHUNK_SHIFT], __ATOMIC_ACQUIRE);
    size = tags ? SC_CHUNK_SIZE : 0;
  }
  const sc_je_classes *c = &sc_je_size_classes;
  sc_front = (sicm_front_v2_t){.arena = h, .epoch = epoch, .base = base, .size = size,
                               .tags = tags, .max = c->max, .class_of = c->bin_of,
                               .nbins = c->nbins, .bins = cache->bins,
                               .start_mask = c->start_mask};
}

static int front_is(uintptr_t h) {
  return sc_front.arena == h && sc_front.size != 0 &&
         sc_front.epoch == __atomic_load_n(&sicm_epoch_v2, __ATOMIC_RELAXED);
}

/* sicm_arena_alloc beyond the front: the thread's cache of any private
 * arena, large blocks, and everything else. */
static __attribute__((noinline)) void *arena_alloc_cached(sicm_arena sa, size_t sz) {
  if (__builtin_expect(sc_check_on, 0))
    return sc_arena_alloc_any(sa, sz);
  uintptr_t h = (uintptr_t)sa;
  unsigned slot = h & (SC_ARENA_SLOTS - 1);
  sc_thread_table *t = &sc_thread_caches;
  if (slot < t->cap) {
    sc_thread_cache *cache = t->caches[slot];
    uint64_t generation = sc_handle_generation(sa);
    /* A cache exists only for a slot whose record exists; its generation
     * names the one private arena it was filled for, which must be live. */
    sc_arena *a = sc_arena_slots[slot];
    if (cache != NULL && cache->generation == generation &&
        __atomic_load_n(&a->live_generation, __ATOMIC_ACQUIRE) == generation) {
      if (sz - 1 < sc_je_size_classes.max) {
        if (!front_is(h))
          front_set(a, h, cache);
        sc_bin *bin = &cache->bins[sc_size_class(sz)];
        if (bin->count > 0)
          return bin->slots[--bin->count];
        return sc_je_alloc_miss(a, cache, sz);
      }
      /* A large block goes to jemalloc through the thread's tcache and
       * shard; a failure takes the entry point of every kind below, which
       * gives back what maxsize counts and says why. */
      if (sz - 1 < sc_je_size_classes.tagged_max && /* not 0 */
          sz <= __atomic_load_n(&a->capacity, __ATOMIC_RELAXED)) {
        unsigned cls = sc_class_of(sz);
        void *p = sc_large_take(cache, cls);
        if (p != NULL)
          return p;
        sc_je_hook_failed = 0;
        p = je_mallocx(sz, cache->alloc_flags);
        if (p != NULL) {
          sc_page_class_set(p, cls);
          return p;
        }
      }
    }
  }
  return sc_arena_alloc_any(sa, sz);
}

/* sicm_free beyond the front. */
static __attribute__((noinline)) void free_cached(void *ptr) {
  unsigned cls = sc_page_class(ptr);
  if (!__builtin_expect(sc_check_on, 0) && cls < sc_je_size_classes.nclasses &&
      sc_class_start_ok(cls, ptr)) {
    uintptr_t chunk = (uintptr_t)ptr >> SC_CHUNK_SHIFT;
    /* A chunk with tags holds whole private windows: never SC_CHUNK_PARTIAL. */
    unsigned slot = __atomic_load_n(&sc_chunk_owner[chunk], __ATOMIC_ACQUIRE) - 1u;
    sc_thread_table *t = &sc_thread_caches;
    if (slot < t->cap) {
      sc_thread_cache *cache = t->caches[slot];
      if (cache != NULL &&
          cache->generation ==
              __atomic_load_n(&sc_arena_slots[slot]->live_generation, __ATOMIC_ACQUIRE)) {
        if (cls < sc_je_size_classes.nbins)
          sc_bin_free(cache, cls, ptr);
        else
          sc_large_free(cache, cls, ptr);
        return;
      }
    }
  }
  sc_free_any(ptr);
}

/* The called functions (SICM_NO_INLINE, dlsym, Fortran, the adapters)
 * first do what the header's inline path does, with the same checks, in a
 * leaf that needs no stack frame (the front is one load from the thread
 * pointer: the library's thread-locals are initial-exec); anything else is
 * a tail call. */
void *sicm_arena_alloc(sicm_arena sa, size_t sz) {
  void *p = sicm_front_alloc_v2(&sc_front, (uintptr_t)sa, sz);
  return p != NULL ? p : arena_alloc_cached(sa, sz);
}

void sicm_free(void *ptr) {
  if (!sicm_front_free_v2(&sc_front, ptr))
    free_cached(ptr);
}
