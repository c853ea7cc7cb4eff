/* arena_je_fast.c: sicm_arena_alloc and sicm_free, the two calls every
 * container makes, served from this thread's bins of a private arena when
 * they can be.  The handle (alloc) or the pointer's page tag and window
 * owner (free) lead straight to the bin: no call through the operations
 * table, no query to jemalloc.  Whatever the bins cannot serve goes to the
 * entry points of every kind in arena_alloc.c. */
#include "arena_je.h"

void *sicm_arena_alloc(sicm_arena sa, size_t sz) {
  uintptr_t h = (uintptr_t)sa;
  unsigned slot = h & (SC_ARENA_SLOTS - 1);
  sc_thread_table *t = &sc_thread_caches;
  if (sz - 1 < sc_je_size_classes.max && slot < t->cap) {
    sc_thread_cache *cache = t->caches[slot];
    uint64_t generation = sc_handle_generation(sa);
    /* A cache exists only for a slot whose record exists; its generation
     * names the one private arena it was filled for, which must be live. */
    if (cache != NULL && cache->generation == generation &&
        __atomic_load_n(&sc_arena_slots[slot]->live_generation, __ATOMIC_ACQUIRE) == generation) {
      sc_bin *bin = &cache->bins[sc_size_class(sz)];
      if (bin->count > 0)
        return bin->slots[--bin->count];
      return sc_je_alloc_miss(sc_arena_slots[slot], cache, sz);
    }
  }
  return sc_arena_alloc_any(sa, sz);
}

void sicm_free(void *ptr) {
  unsigned cls = sc_page_class(ptr);
  if (cls < sc_je_size_classes.nbins) {
    uintptr_t chunk = (uintptr_t)ptr >> SC_CHUNK_SHIFT;
    /* A chunk with tags holds whole private windows: never SC_CHUNK_PARTIAL. */
    unsigned slot = __atomic_load_n(&sc_chunk_owner[chunk], __ATOMIC_ACQUIRE) - 1u;
    sc_thread_table *t = &sc_thread_caches;
    if (slot < t->cap) {
      sc_thread_cache *cache = t->caches[slot];
      if (cache != NULL &&
          cache->generation ==
              __atomic_load_n(&sc_arena_slots[slot]->live_generation, __ATOMIC_ACQUIRE)) {
        sc_bin_push(cache, cls, ptr);
        return;
      }
    }
  }
  sc_free_any(ptr);
}
