/* thread_cache.c: per-(thread, arena) caches.  Each thread keeps, per arena
 * it uses, bins of small regions it freed (no lock, no jemalloc call on a
 * hit) in front of an explicit jemalloc tcache of its own for that arena.
 * Neither ever holds another arena's regions, so arenas never hand out each
 * other's memory.  The arena records its tcache ids so that destroy can
 * flush them all; a cache left over from a destroyed arena is recognised by
 * its generation and dropped, never reused; a thread's caches go back when
 * it exits. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

SICM_TLS sicm_thread_cache **sicm_thread_caches;
SICM_TLS unsigned sicm_thread_caches_cap;

static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;

void sicm_bin_flush(sicm_bin *bin, int flag, unsigned keep) {
  while (bin->count > keep)
    dallocx(bin->slots[--bin->count], flag);
}

static unsigned tcache_id(int flag) { return (unsigned)((flag >> 8) - 2); }

/* Thread exit: give back the bins and tcaches of arenas still alive. */
static void thread_caches_exit(void *table) {
  sicm_thread_cache **caches = table;
  for (unsigned slot = 0; slot < sicm_thread_caches_cap; slot++) {
    sicm_thread_cache *cache = caches[slot];
    if (cache == NULL)
      continue;
    sicm_arena_rec *rec = __atomic_load_n(&sicm_arena_slots[slot], __ATOMIC_ACQUIRE);
    pthread_mutex_lock(&rec->tcache_lock);
    if (__atomic_load_n(&rec->live_generation, __ATOMIC_ACQUIRE) == cache->generation) {
      for (unsigned b = 0; b < SICM_NBINS; b++)
        sicm_bin_flush(&cache->bins[b], cache->flag, 0);
      if (cache->flag != MALLOCX_TCACHE_NONE) {
        unsigned id = tcache_id(cache->flag);
        for (unsigned i = 0; i < rec->ntcaches; i++)
          if (rec->tcaches[i] == id) {
            rec->tcaches[i] = rec->tcaches[--rec->ntcaches];
            mallctl("tcache.destroy", NULL, NULL, &id, sizeof id);
            break;
          }
      }
    }
    pthread_mutex_unlock(&rec->tcache_lock);
    free(cache);
  }
  free(caches);
  sicm_thread_caches = NULL;
  sicm_thread_caches_cap = 0;
}

static void exit_key_create(void) { pthread_key_create(&exit_key, thread_caches_exit); }

/* Grows this thread's table to hold slot; 0 or -1. */
static int thread_table_reserve(unsigned slot) {
  if (slot < sicm_thread_caches_cap)
    return 0;
  unsigned cap = sicm_thread_caches_cap ? sicm_thread_caches_cap : 16;
  while (cap <= slot)
    cap *= 2;
  sicm_thread_cache **grown = realloc(sicm_thread_caches, cap * sizeof *grown);
  if (grown == NULL)
    return -1;
  memset(grown + sicm_thread_caches_cap, 0, (cap - sicm_thread_caches_cap) * sizeof *grown);
  sicm_thread_caches = grown;
  sicm_thread_caches_cap = cap;
  pthread_once(&exit_key_once, exit_key_create);
  pthread_setspecific(exit_key, grown);
  return 0;
}

/* A new explicit tcache for rec, registered for destroy; NONE past jemalloc's
 * limit of about 4094 caches (correct, uncached). */
static int tcache_create(sicm_arena_rec *rec) {
  int flag = MALLOCX_TCACHE_NONE;
  pthread_mutex_lock(&rec->tcache_lock);
  if (rec->ntcaches == rec->tcache_cap) {
    unsigned cap = rec->tcache_cap ? rec->tcache_cap * 2 : 8;
    unsigned *grown = realloc(rec->tcaches, cap * sizeof *grown);
    if (grown != NULL) {
      rec->tcaches = grown;
      rec->tcache_cap = cap;
    }
  }
  unsigned id;
  size_t len = sizeof id;
  if (rec->ntcaches < rec->tcache_cap && mallctl("tcache.create", &id, &len, NULL, 0) == 0) {
    rec->tcaches[rec->ntcaches++] = id;
    flag = MALLOCX_TCACHE(id);
  }
  pthread_mutex_unlock(&rec->tcache_lock);
  return flag;
}

sicm_thread_cache *sicm_thread_cache_slow(sicm_arena_rec *rec, uint64_t generation) {
  if (thread_table_reserve(rec->slot) != 0)
    return NULL;
  sicm_thread_cache *cache = sicm_thread_caches[rec->slot];
  if (cache == NULL) {
    cache = malloc(sizeof *cache);
    if (cache == NULL)
      return NULL;
    sicm_thread_caches[rec->slot] = cache;
  }
  /* A cache of a destroyed arena: its regions died with it; drop them. */
  memset(cache, 0, sizeof *cache);
  cache->generation = generation;
  cache->flag = tcache_create(rec);
  return cache;
}

void sicm_thread_caches_release(sicm_arena_rec *rec) {
  pthread_mutex_lock(&rec->tcache_lock);
  for (unsigned i = 0; i < rec->ntcaches; i++)
    mallctl("tcache.destroy", NULL, NULL, &rec->tcaches[i], sizeof rec->tcaches[i]);
  rec->ntcaches = 0;
  pthread_mutex_unlock(&rec->tcache_lock);
}
