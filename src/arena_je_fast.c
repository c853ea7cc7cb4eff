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
 * allocation makes its arena the front.
 *
 * A destroy closes every thread's front (sc_fronts_close), so the called
 * path trusts an open front without reading sicm_epoch_v2, which the
 * header's inline path, built into programs, still checks. */
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "arena_je.h"

SC_TLS sicm_front_v2_t sc_front;
extern SC_TLS sicm_front_v2_t sicm_front_v2
    __attribute__((alias("sc_front"), visibility("default")));

/* A thread's place in the list of fronts. */
typedef struct front_link {
  struct front_link *prev, *next;
  sicm_front_v2_t *front;
} front_link;

static SC_TLS front_link my_link;
static pthread_mutex_t fronts_lock = PTHREAD_MUTEX_INITIALIZER;
static front_link fronts = {&fronts, &fronts, NULL};

/* A thread setting its front writes it, then reads whether the arena
 * lives; a destroy marks the arena dead, then closes every front.  With a
 * full barrier on each side between the two steps, either the thread sees
 * the arena dead (and closes its own front) or the destroy's close lands
 * after the thread's writes.  A thread switches fronts whenever it
 * alternates arenas, a destroy is rare: so, where the kernel offers it, the
 * destroy makes the barrier on every thread of the process at once
 * (membarrier) and a thread setting its front needs only the compiler's.
 * Set under fronts_lock when the first thread links its front. */
static int fronts_membarrier = -1; /* -1: not tried; 0: not available */

/* The library's calls leave errno as they found it on success. */
static int membarrier(int cmd) {
  int err = errno;
  int r = (int)syscall(SYS_membarrier, cmd, 0, 0);
  errno = err;
  return r;
}

/* The barrier a thread makes between writing its front and reading
 * whether the arena lives. */
static inline void front_set_barrier(void) {
  if (__atomic_load_n(&fronts_membarrier, __ATOMIC_RELAXED) == 1)
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
  else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* The front's two gates, the arena for alloc and the size for free, both
 * shut; written by the owner and by any destroy. */
static void front_close(sicm_front_v2_t *f) {
  __atomic_store_n(&f->arena, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&f->size, 0, __ATOMIC_RELAXED);
}

static void front_link_add(void) {
  pthread_mutex_lock(&fronts_lock);
  if (fronts_membarrier < 0)
    __atomic_store_n(&fronts_membarrier, membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0,
                     __ATOMIC_RELAXED);
  my_link.front = &sc_front;
  my_link.prev = &fronts;
  my_link.next = fronts.next;
  fronts.next->prev = &my_link;
  fronts.next = &my_link;
  pthread_mutex_unlock(&fronts_lock);
}

void sc_front_exit(void) {
  front_close(&sc_front);
  if (my_link.front == NULL)
    return;
  pthread_mutex_lock(&fronts_lock);
  my_link.prev->next = my_link.next;
  my_link.next->prev = my_link.prev;
  my_link.front = NULL;
  pthread_mutex_unlock(&fronts_lock);
  sc_front = (sicm_front_v2_t){0};
}

/* The caller has marked the arena dead (live_generation); see
 * fronts_membarrier for why no front stays open on it. */
void sc_fronts_close(void) {
  pthread_mutex_lock(&fronts_lock);
  /* Every thread that relies on the membarrier linked its front after
   * fronts_membarrier was set, under this lock. */
  if (fronts_membarrier != 1 || membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0)
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
  for (front_link *l = fronts.next; l != &fronts; l = l->next)
    front_close(l->front);
  pthread_mutex_unlock(&fronts_lock);
}

void sc_fronts_fork_lock(void) { pthread_mutex_lock(&fronts_lock); }

/* The child has one thread: the others' fronts are gone with them.  Its
 * registration for membarrier is made again (it belongs to the address
 * space); without it the child's threads make full fences. */
void sc_fronts_fork_unlock(int child) {
  if (child) {
    fronts.next = fronts.prev = &fronts;
    if (my_link.front != NULL) {
      my_link.prev = my_link.next = &fronts;
      fronts.next = fronts.prev = &my_link;
    }
    if (fronts_membarrier == 1)
      fronts_membarrier = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
  }
  pthread_mutex_unlock(&fronts_lock); /* the forking thread holds it */
}

/* Makes the cache of the arena with handle h this thread's front; left
 * closed when the arena died meanwhile (the epoch is read first, so that
 * to the inline path a destroy after the check leaves the front stale). */
static void front_set(sc_arena *a, uintptr_t h, sc_thread_cache *cache) {
  if (__builtin_expect(sc_check_on, 0))
    return; /* every call reaches the entry points, which check */
  if (my_link.front == NULL)
    front_link_add();
  uint64_t epoch = __atomic_load_n(&sicm_epoch_v2, __ATOMIC_ACQUIRE);
  if (__atomic_load_n(&a->live_generation, __ATOMIC_ACQUIRE) == cache->generation) {
    uintptr_t base = 0, size = 0;
    const uint8_t *tags = NULL;
    if (__atomic_load_n(&a->nwindows, __ATOMIC_ACQUIRE) > 0) {
      /* The first chunk of the first window: one table of tags covers it. */
      base = (uintptr_t)a->windows[0].base;
      tags = __atomic_load_n(&sc_page_tags[base >> SC_CHUNK_SHIFT], __ATOMIC_ACQUIRE);
      size = tags ? SC_CHUNK_SIZE : 0;
    }
    const sc_je_classes *c = &sc_je_size_classes;
    sicm_front_v2_t *f = &sc_front;
    f->epoch = epoch;
    f->base = base;
    f->tags = tags;
    f->max = c->max;
    f->class_of = c->bin_of;
    f->nbins = c->nbins;
    f->bins = cache->bins;
    f->start_mask = c->start_mask;
    __atomic_store_n(&f->size, size, __ATOMIC_RELAXED);
    __atomic_store_n(&f->arena, h, __ATOMIC_RELAXED);
    front_set_barrier();
    if (__atomic_load_n(&a->live_generation, __ATOMIC_ACQUIRE) == cache->generation)
      return;
  }
  front_close(&sc_front);
}

static int front_is(uintptr_t h) {
  return __atomic_load_n(&sc_front.arena, __ATOMIC_RELAXED) == h &&
         __atomic_load_n(&sc_front.size, __ATOMIC_RELAXED) != 0;
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
 * first serve the front as the inline path does, in a leaf that needs no
 * stack frame (the front is one load from the thread pointer: the
 * library's thread-locals are initial-exec); anything else is a tail call.
 * They find a bin by the offsets of sc_je_bin_index rather than the
 * front's tables, and do not read the epoch (see above). */
void *sicm_arena_alloc(sicm_arena sa, size_t sz) {
  sicm_front_v2_t *f = &sc_front;
  if ((uintptr_t)sa == __atomic_load_n(&f->arena, __ATOMIC_RELAXED) && sz - 1 < f->max) {
    sc_bin *bin = (sc_bin *)((char *)f->bins + sc_je_bin_index.offset_of_size[(sz - 1) >> 3]);
    unsigned count = bin->count;
    if (__builtin_expect(count > 0, 1)) {
      bin->count = count - 1;
      return bin->slots[count - 1];
    }
  }
  return arena_alloc_cached(sa, sz);
}

void sicm_free(void *ptr) {
  sicm_front_v2_t *f = &sc_front;
  uintptr_t offset = (uintptr_t)ptr - f->base;
  if (offset < __atomic_load_n(&f->size, __ATOMIC_RELAXED)) {
    unsigned tag = __atomic_load_n(&f->tags[offset >> 12], __ATOMIC_RELAXED);
    if (((uintptr_t)ptr & sc_je_bin_index.start_mask_of_tag[tag]) == 0) {
      sc_bin *bin = (sc_bin *)((char *)f->bins + sc_je_bin_index.offset_of_tag[tag]);
      unsigned count = bin->count;
      /* The double-free check reads the slot below count, wrapping to the
       * last when the bin is empty: a stale match there only sends the
       * free to the exact check of free_cached, and a branch is saved. */
      if (count < bin->limit && bin->slots[(count - 1) % SICM_BIN_CAP_V2] != ptr) {
        bin->slots[count] = ptr;
        bin->count = count + 1;
        return;
      }
    }
  }
  free_cached(ptr);
}
