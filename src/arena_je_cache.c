/* arena_je_cache.c: jemalloc's small size classes, and the per-(thread,
 * arena) caches of private arenas.  Each thread keeps, per arena it uses,
 * bins of small regions it freed (no lock, no jemalloc call on a hit) in
 * front of an explicit jemalloc tcache of its own for that arena.  Neither
 * ever holds another arena's regions, so arenas never hand out each
 * other's memory.  The arena records its tcache ids so that destroy can
 * flush them all; a cache left over from a destroyed arena is recognised
 * by its generation and dropped, never reused; a thread's caches go back
 * when it exits. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena_je.h"

sc_je_classes sc_je_size_classes;
SC_TLS sc_thread_table sc_thread_caches;

static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;

int sc_je_classes_init(void) {
  sc_je_classes c = {0};
  unsigned nbins;
  size_t len = sizeof nbins;
  if (je_mallctl("arenas.nbins", &nbins, &len, NULL, 0) != 0)
    return sc_fail(EIO, "jemalloc does not report its size classes (arenas.nbins)");
  size_t prev = 0;
  for (unsigned i = 0; i < nbins && i < SC_BINS_MAX; i++) {
    char cmd[64];
    size_t size;
    len = sizeof size;
    snprintf(cmd, sizeof cmd, "arenas.bin.%u.size", i);
    if (je_mallctl(cmd, &size, &len, NULL, 0) != 0)
      return sc_fail(EIO, "jemalloc does not report %s", cmd);
    if (size % 8 != 0 || size <= prev)
      return sc_fail(EIO, "jemalloc's small size class %u is %zu bytes: not a multiple of 8 "
                          "above the previous", i, size);
    if (size > SC_BIN_LOOKUP_MAX)
      break; /* larger small classes go straight to jemalloc's tcache */
    for (size_t k = prev / 8; k < size / 8; k++)
      c.bin_of[k] = (uint8_t)i;
    c.nbins = i + 1;
    c.max = prev = size;
  }
  sc_je_size_classes = c; /* the same values at every sicm_init */
  return 0;
}

void sc_bin_flush(sc_bin *bin, int flag, unsigned keep) {
  while (bin->count > keep)
    je_dallocx(bin->slots[--bin->count], flag);
}

/* Thread exit: give back the bins and tcaches of arenas still alive. */
static void thread_caches_exit(void *table) {
  sc_thread_cache **caches = table;
  for (unsigned slot = 0; slot < sc_thread_caches.cap; slot++) {
    sc_thread_cache *cache = caches[slot];
    if (cache == NULL)
      continue;
    sc_arena *a = __atomic_load_n(&sc_arena_slots[slot], __ATOMIC_ACQUIRE);
    pthread_mutex_lock(&a->kind_lock);
    /* Only while the arena the cache was filled for lives is kind_data
     * that arena's (the slot may hold another kind of arena now). */
    if (__atomic_load_n(&a->live_generation, __ATOMIC_ACQUIRE) == cache->generation) {
      for (unsigned b = 0; b < sc_je_size_classes.nbins; b++)
        sc_bin_flush(&cache->bins[b], cache->flag, 0);
      if (cache->flag != MALLOCX_TCACHE_NONE) {
        sc_je_arena *je = sc_je_of(a);
        for (unsigned i = 0; i < je->ntcaches; i++)
          if (je->tcaches[i] == cache->tcache) {
            je->tcaches[i] = je->tcaches[--je->ntcaches];
            je_mallctl("tcache.destroy", NULL, NULL, &cache->tcache, sizeof cache->tcache);
            break;
          }
      }
    }
    pthread_mutex_unlock(&a->kind_lock);
    free(cache);
  }
  free(caches);
  sc_thread_caches.caches = NULL;
  sc_thread_caches.cap = 0;
}

static void exit_key_create(void) { pthread_key_create(&exit_key, thread_caches_exit); }

/* Grows this thread's table to hold slot; 0 or -1. */
static int thread_table_reserve(unsigned slot) {
  if (slot < sc_thread_caches.cap)
    return 0;
  unsigned cap = sc_thread_caches.cap ? sc_thread_caches.cap : 16;
  while (cap <= slot)
    cap *= 2;
  sc_thread_cache **grown = realloc(sc_thread_caches.caches, cap * sizeof *grown);
  if (grown == NULL)
    return -1;
  memset(grown + sc_thread_caches.cap, 0, (cap - sc_thread_caches.cap) * sizeof *grown);
  sc_thread_caches.caches = grown;
  sc_thread_caches.cap = cap;
  pthread_once(&exit_key_once, exit_key_create);
  pthread_setspecific(exit_key, grown);
  return 0;
}

/* A new explicit tcache for the arena, registered for destroy, in *cache;
 * NONE past jemalloc's limit of about 4094 caches (correct, uncached). */
static void tcache_create(sc_arena *a, sc_thread_cache *cache) {
  sc_je_arena *je = sc_je_of(a);
  cache->flag = MALLOCX_TCACHE_NONE;
  pthread_mutex_lock(&a->kind_lock);
  if (je->ntcaches == je->tcache_cap) {
    unsigned cap = je->tcache_cap ? je->tcache_cap * 2 : 8;
    unsigned *grown = realloc(je->tcaches, cap * sizeof *grown);
    if (grown != NULL) {
      je->tcaches = grown;
      je->tcache_cap = cap;
    }
  }
  unsigned id;
  size_t len = sizeof id;
  if (je->ntcaches < je->tcache_cap && je_mallctl("tcache.create", &id, &len, NULL, 0) == 0) {
    je->tcaches[je->ntcaches++] = id;
    cache->tcache = id;
    cache->flag = MALLOCX_TCACHE(id);
  }
  pthread_mutex_unlock(&a->kind_lock);
}

/* A miss is no failure: without a cache the arena serves uncached
 * (MALLOCX_TCACHE_NONE), so none of these report an error. */
sc_thread_cache *sc_thread_cache_slow(sc_arena *a, uint64_t generation) {
  if (thread_table_reserve(a->slot) != 0)
    return NULL;
  sc_thread_cache *cache = sc_thread_caches.caches[a->slot];
  size_t size = sizeof *cache + sc_je_size_classes.nbins * sizeof cache->bins[0];
  if (cache == NULL) {
    cache = malloc(size);
    if (cache == NULL)
      return NULL;
    sc_thread_caches.caches[a->slot] = cache;
  }
  /* A cache of a destroyed arena: its regions died with it; drop them. */
  memset(cache, 0, size);
  cache->generation = generation;
  tcache_create(a, cache);
  return cache;
}

void sc_thread_caches_release(sc_arena *a) {
  sc_je_arena *je = sc_je_of(a);
  pthread_mutex_lock(&a->kind_lock);
  for (unsigned i = 0; i < je->ntcaches; i++)
    je_mallctl("tcache.destroy", NULL, NULL, &je->tcaches[i], sizeof je->tcaches[i]);
  free(je->tcaches);
  je->tcaches = NULL;
  je->ntcaches = je->tcache_cap = 0;
  pthread_mutex_unlock(&a->kind_lock);
}
