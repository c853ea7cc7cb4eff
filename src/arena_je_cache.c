/* SPDX-License-Identifier: BSD-3-Clause */
/* arena_je_cache.c: jemalloc's small size classes, and the per-(thread,
 * arena) caches of private arenas.  Each thread keeps, per arena it uses,
 * bins of small regions it freed (no lock, no jemalloc call on a hit) in
 * front of an explicit jemalloc tcache of its own for that arena, and the
 * one large block it freed last.  None ever holds another arena's regions,
 * so arenas never hand out each other's memory.  The arena records its
 * tcache ids so that destroy can flush them all; a cache left over from a
 * destroyed arena is recognised by its generation and dropped, never
 * reused; a thread's caches go back when it exits. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena_je.h"

/* Page-aligned, with start_mask (read by the inline free) before bin_of
 * (read by the inline allocation): both then lie on the first page for
 * every size below 28 KiB, one TLB entry for a small pair. */
_Alignas(4096) sc_je_classes sc_je_size_classes;
SC_TLS sc_thread_table sc_thread_caches;

static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;

static int class_size_read(const char *fmt, unsigned i, size_t *size) {
  char cmd[64];
  snprintf(cmd, sizeof cmd, fmt, i);
  if (je_mallctl(cmd, size, &(size_t){sizeof *size}, NULL, 0) != 0)
    return sc_fail(EIO, "jemalloc does not report %s", cmd);
  return 0;
}

/* Fills group_first and tagged_max from the large classes; leaves
 * tagged_max at max (large frees then ask jemalloc for the size) unless
 * every class up to it follows the four-per-doubling rule. */
static void large_classes_index(sc_je_classes *c) {
  c->tagged_max = c->max;
  for (unsigned i = 0; i < c->nclasses; i++) {
    size_t s = c->size[i];
    unsigned lg = 64 - (unsigned)__builtin_clzl(s - 1);
    if (lg >= 4 && s == ((size_t)1 << (lg - 1)) + ((size_t)1 << (lg - 3)))
      c->group_first[lg] = (uint8_t)i;
  }
  size_t last = c->max;
  for (unsigned i = c->nbins; i < c->nclasses; i++) {
    c->tagged_max = c->size[i];
    if (sc_class_in(c, c->size[i]) != i || sc_class_in(c, last + 1) != i)
      break;
    last = c->size[i];
  }
  c->tagged_max = last;
}

void sc_je_start(void) {
  unsigned narenas;
  je_mallctl("arenas.narenas", &narenas, &(size_t){sizeof narenas}, NULL, 0);
}

sc_je_bins_by sc_je_bin_index;

_Static_assert(SC_BINS_MAX * sizeof(sc_bin) <= UINT16_MAX, "offset_of_size holds a bin's offset");

static void bin_index_make(const sc_je_classes *c) {
  sc_je_bins_by *by = &sc_je_bin_index;
  for (unsigned tag = 0; tag < 256; tag++) {
    int binned = tag >= 1 && tag <= c->nbins;
    by->start_mask_of_tag[tag] = binned ? c->start_mask[tag - 1] : ~(uint64_t)0;
    by->offset_of_tag[tag] = binned ? (tag - 1) * sizeof(sc_bin) : 0;
  }
  for (unsigned k = 0; k < SC_BIN_LOOKUP_MAX / 8; k++)
    by->offset_of_size[k] = (uint16_t)(c->bin_of[k] * sizeof(sc_bin));
}

int sc_je_classes_init(void) {
  sc_je_classes c = {0};
  unsigned nsmall, nlarge;
  if (je_mallctl("arenas.nbins", &nsmall, &(size_t){sizeof nsmall}, NULL, 0) != 0 ||
      je_mallctl("arenas.nlextents", &nlarge, &(size_t){sizeof nlarge}, NULL, 0) != 0)
    return sc_fail(EIO, "jemalloc does not report its size classes (arenas.nbins)");
  size_t prev = 0;
  for (unsigned i = 0; i < nsmall + nlarge && c.nclasses < SC_CLASSES_MAX; i++) {
    size_t size;
    if (i < nsmall ? class_size_read("arenas.bin.%u.size", i, &size)
                   : class_size_read("arenas.lextent.%u.size", i - nsmall, &size))
      return -1;
    if (size % 8 != 0 || size <= prev)
      return sc_fail(EIO, "jemalloc's size class %u is %zu bytes: not a multiple of 8 "
                          "above the previous", i, size);
    size_t start_align = i < nsmall ? size & -size : 64;
    c.start_mask[c.nclasses] = (uint16_t)((start_align < 4096 ? start_align : 4096) - 1);
    c.size[c.nclasses++] = size;
    /* The bins serve the classes up to SC_BIN_LOOKUP_MAX, small or not;
     * larger ones go straight to jemalloc's tcache or extents. */
    if (size <= SC_BIN_LOOKUP_MAX && c.nbins == i && i < SC_BINS_MAX) {
      for (size_t k = prev / 8; k < size / 8; k++)
        c.bin_of[k] = (uint8_t)i;
      c.nbins = i + 1;
      c.max = size;
    }
    prev = size;
  }
  large_classes_index(&c);
  sc_je_size_classes = c; /* the same values at every sicm_init */
  bin_index_make(&c);
  return 0;
}

void sc_bin_flush(sc_thread_cache *cache, unsigned b, unsigned keep) {
  sc_bin *bin = &cache->bins[b];
  size_t size = sc_je_size_classes.size[b];
  while (bin->count > keep)
    je_sdallocx(bin->slots[--bin->count], size, cache->flag);
}

void sc_bin_push_full(sc_thread_cache *cache, unsigned b, void *ptr) {
  sc_bin_flush(cache, b, cache->bins[b].limit / 2);
  sc_bin *bin = &cache->bins[b];
  bin->slots[bin->count++] = ptr;
}

/* Thread exit: give back the bins and tcaches of arenas still alive. */
static void thread_caches_exit(void *table) {
  sc_thread_cache **caches = table;
  sc_front_exit(); /* the front points into the caches */
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
        sc_bin_flush(cache, b, 0);
      sc_large_flush(cache);
      sc_je_of(a)->shard_threads[cache->shard]--;
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
  pthread_once(&exit_key_once, exit_key_create);
  sc_thread_cache **grown = sc_slot_table_grow(sc_thread_caches.caches, &sc_thread_caches.cap, slot, exit_key);
  if (grown != NULL)
    sc_thread_caches.caches = grown;
  return grown != NULL ? 0 : -1;
}

/* The shard for a thread new to the arena: a new one while every shard
 * has a live thread and the target allows (when jemalloc cannot make one —
 * its limit of 4095 arenas — the arena stops growing), else the one with
 * the fewest.  Caller holds kind_lock. */
static unsigned shard_pick(sc_je_arena *je) {
  unsigned best = 0;
  for (unsigned i = 1; i < je->nshards; i++)
    if (je->shard_threads[i] < je->shard_threads[best])
      best = i;
  if (je->shard_threads[best] > 0 && je->nshards < je->shards_target) {
    int err = errno; /* a shard is an optimization: its failure is not the caller's */
    if (sc_je_shard_add(je) == 0)
      best = je->nshards - 1;
    else
      je->shards_target = je->nshards;
    errno = err;
  }
  je->shard_threads[best]++;
  return best;
}

/* A shard and, when wanted, a new explicit tcache for the arena,
 * registered for destroy, in *cache; NONE past jemalloc's limit of about
 * 4094 caches (correct, uncached). */
static void tcache_create(sc_arena *a, sc_thread_cache *cache, int want_tcache) {
  sc_je_arena *je = sc_je_of(a);
  cache->flag = MALLOCX_TCACHE_NONE;
  pthread_mutex_lock(&a->kind_lock);
  cache->shard = shard_pick(je);
  unsigned shard = je->shards[cache->shard];
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
  if (want_tcache && je->ntcaches < je->tcache_cap &&
      je_mallctl("tcache.create", &id, &len, NULL, 0) == 0) {
    je->tcaches[je->ntcaches++] = id;
    cache->tcache = id;
    cache->flag = MALLOCX_TCACHE(id);
  }
  pthread_mutex_unlock(&a->kind_lock);
  cache->alloc_flags = sc_je_arena_flag(shard) | cache->flag;
}

/* A miss is no failure: without a cache the arena serves uncached
 * (MALLOCX_TCACHE_NONE), so none of these report an error. */
sc_thread_cache *sc_thread_cache_slow(sc_arena *a, uint64_t generation) {
  /* A pool counts each block until it is freed: none may wait in a bin.
   * A fixed arena's window is not a whole chunk, which the front needs. */
  if (__atomic_load_n(&a->pool, __ATOMIC_ACQUIRE) != NULL || a->borrowed ||
      thread_table_reserve(a->slot) != 0)
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
  /* A thread keeps at most 256 KiB of a class, and 8 to SC_BIN_CAP
   * regions; in a small maxsize arena, 1/SC_CACHE_SHARE of maxsize in all
   * and at least one region, and no jemalloc tcache behind the bins: what
   * other threads cache counts against maxsize and only they can free it. */
  int small = sc_je_maxsize_small(a);
  size_t budget = small ? a->maxsize / SC_CACHE_SHARE / sc_je_size_classes.nbins : 256 << 10;
  unsigned least = small ? 1 : 8;
  for (unsigned b = 0; b < sc_je_size_classes.nbins; b++) {
    size_t limit = budget / sc_je_size_classes.size[b];
    cache->bins[b].limit = limit < least ? least : limit > SC_BIN_CAP ? SC_BIN_CAP : (unsigned)limit;
  }
  if (!small) {
    const sc_je_classes *c = &sc_je_size_classes;
    unsigned last = sc_class_of(c->tagged_max < SC_LARGE_KEEP_MAX ? c->tagged_max : SC_LARGE_KEEP_MAX);
    cache->large_last = last >= c->nbins ? last : 0;
  }
  cache->generation = generation;
  tcache_create(a, cache, !small);
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
