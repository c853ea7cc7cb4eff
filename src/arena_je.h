/* arena_je.h: the private arena kind — a jemalloc arena whose extent hooks
 * carve its memory from the arena's windows (arena_je_hooks.c), served
 * through per-(thread, arena) caches (arena_je_cache.c); its operations
 * table and creation are in arena_je.c.  Only those files and init.c
 * include this header. */
#ifndef SC_ARENA_JE_H
#define SC_ARENA_JE_H

/* je_mallocx() and the others name jemalloc's API whether it is the
 * private, prefixed build (sicm_je_mallocx) or the system's (mallocx). */
#define JEMALLOC_NO_DEMANGLE
#include <jemalloc/jemalloc.h>

#include "arena.h"

/* The kind's data in sc_arena.kind_data. */
typedef struct sc_je_arena {
  extent_hooks_t hooks;         /* first: the hooks receive &hooks */
  sc_arena *arena;
  unsigned index;               /* jemalloc arena index */
  /* The explicit tcaches of the threads using the arena, so that destroy
   * can flush them all; under the record's kind_lock. */
  unsigned ntcaches, tcache_cap;
  unsigned *tcaches;
} sc_je_arena;

static inline sc_je_arena *sc_je_of(sc_arena *a) { return (sc_je_arena *)(void *)a->kind_data; }

/* ---- arena_je_hooks.c ---- */
void sc_je_hooks_init(extent_hooks_t *hooks);
/* Set by a hook of this thread that failed (with a detail), so that the
 * allocation call reports the hook's cause; the caller clears it. */
extern SC_TLS int sc_je_hook_failed;

/* ---- arena_je_cache.c: jemalloc's small size classes and the caches ----
 * Small regions freed by a thread wait in its bins for the next allocation
 * of their size class in the same arena; misses go to an explicit jemalloc
 * tcache of that thread and arena (jemalloc's default tcache would mix
 * arenas). */
#define SC_BIN_CAP 32
#define SC_BINS_MAX 64
#define SC_BIN_LOOKUP_MAX 16384         /* classes above this are not binned */

/* jemalloc's small size classes, read from it once (sc_je_classes_init). */
typedef struct sc_je_classes {
  size_t max;                          /* largest binned class */
  unsigned nbins;
  uint8_t bin_of[SC_BIN_LOOKUP_MAX / 8]; /* (size - 1) / 8 -> bin */
} sc_je_classes;
extern sc_je_classes sc_je_size_classes;

/* Reads the classes from jemalloc; 0 or -1 with errno. */
int sc_je_classes_init(void);

static inline unsigned sc_size_class(size_t size) {
  return sc_je_size_classes.bin_of[(size - 1) >> 3];
}

typedef struct sc_bin {
  unsigned count;
  void *slots[SC_BIN_CAP];
} sc_bin;

typedef struct sc_thread_cache {
  uint64_t generation;                 /* of the arena it was filled for */
  int flag;                            /* MALLOCX_TCACHE(tcache), or MALLOCX_TCACHE_NONE */
  unsigned tcache;                     /* jemalloc's id of the explicit tcache */
  sc_bin bins[];                       /* sc_je_size_classes.nbins */
} sc_thread_cache;

/* This thread's caches, by arena slot.  One thread-local: each TLS access
 * through a descriptor is a call, so the fast path makes one. */
typedef struct sc_thread_table {
  sc_thread_cache **caches;
  unsigned cap;
} sc_thread_table;
extern SC_TLS sc_thread_table sc_thread_caches;

/* This thread's cache for the arena, or NULL when none can be made. */
sc_thread_cache *sc_thread_cache_slow(sc_arena *a, uint64_t generation);
/* Destroys every thread's jemalloc tcache of the arena (before arena destroy). */
void sc_thread_caches_release(sc_arena *a);
/* Gives one bin's regions back to jemalloc. */
void sc_bin_flush(sc_bin *bin, int flag, unsigned keep);

static inline sc_thread_cache *sc_thread_cache_get(sc_arena *a, uint64_t generation) {
  sc_thread_table *t = &sc_thread_caches;
  if (a->slot < t->cap) {
    sc_thread_cache *cache = t->caches[a->slot];
    if (cache != NULL && cache->generation == generation)
      return cache;
  }
  return sc_thread_cache_slow(a, generation);
}

#endif /* SC_ARENA_JE_H */
