/* SPDX-License-Identifier: BSD-3-Clause */
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

/* An arena is served by up to this many jemalloc arenas ("shards"): the
 * first made with it, the others as more threads use it, up to one per
 * CPU, so that threads do not queue on one jemalloc arena's locks.  All
 * share the hooks, hence the windows, placement, maxsize and migration. */
#define SC_SHARDS_MAX 8
/* Each shard costs 84 KiB of jemalloc metadata and 2 MiB of address
 * space; an arena with a smaller maxsize than this keeps one. */
#define SC_SHARDS_MIN_MAXSIZE ((size_t)256 << 20)

/* A thread caches at most 1/SC_CACHE_SHARE of a small maxsize arena. */
#define SC_CACHE_SHARE 64

/* An arena whose maxsize is small enough that what threads cache matters:
 * one shard, small bins, no jemalloc tcache. */
static inline int sc_je_maxsize_small(const sc_arena *a) {
  return a->maxsize != 0 && a->maxsize < SC_SHARDS_MIN_MAXSIZE;
}

/* The kind's data in sc_arena.kind_data. */
typedef struct sc_je_arena {
  extent_hooks_t hooks;         /* first: the hooks receive &hooks */
  sc_arena *arena;
  /* jemalloc arena indices; shards[0] is set at creation and never
   * changes, the rest grow under the record's kind_lock. */
  unsigned nshards, shards_target;
  unsigned shards[SC_SHARDS_MAX];
  unsigned shard_threads[SC_SHARDS_MAX]; /* live threads using each */
  /* The explicit tcaches of the threads using the arena, so that destroy
   * can flush them all; under the record's kind_lock. */
  unsigned ntcaches, tcache_cap;
  unsigned *tcaches;
} sc_je_arena;

static inline sc_je_arena *sc_je_of(sc_arena *a) { return (sc_je_arena *)(void *)a->kind_data; }

/* MALLOCX_ARENA(index) without its signed overflow: jemalloc's macro
 * shifts an int, which is undefined past index 2046 (UBSan saw it at the
 * arena limit).  jemalloc reads the bits back as unsigned. */
static inline int sc_je_arena_flag(unsigned index) { return (int)((index + 1u) << 20); }

/* ---- arena_je_hooks.c ---- */
void sc_je_hooks_init(extent_hooks_t *hooks);
/* Set by a hook of this thread that failed (with a detail), so that the
 * allocation call reports the hook's cause; the caller clears it. */
extern SC_TLS int sc_je_hook_failed;
#define SC_HOOK_FAILED 1
#define SC_HOOK_MAXSIZE 2              /* the commit would have passed maxsize */

/* ---- arena_je_cache.c: jemalloc's small size classes and the caches ----
 * Small regions freed by a thread wait in its bins for the next allocation
 * of their size class in the same arena; misses go to an explicit jemalloc
 * tcache of that thread and arena (jemalloc's default tcache would mix
 * arenas). */
#define SC_BIN_CAP SICM_BIN_CAP_V2
#define SC_BINS_MAX 64
#define SC_BIN_LOOKUP_MAX 32768         /* classes above this are not binned (tcache_max) */

/* Past the bins, a thread keeps the one large block it freed last, up to
 * this size, for its next allocation of that class in the same arena: the
 * pair then takes no extent lock, search or split in jemalloc, whose
 * tcache stops at SC_BIN_LOOKUP_MAX.  Not in a small maxsize arena. */
#define SC_LARGE_KEEP_MAX ((size_t)4 << 20)

#define SC_CLASSES_MAX 255                /* a page tag holds class + 1 */

/* jemalloc's size classes, read from it once (sc_je_classes_init): the
 * small ones, binned here, then the large ones, whose index a page tag
 * records so that free can pass jemalloc the size (sdallocx) instead of
 * asking for it (sallocx). */
typedef struct sc_je_classes {
  size_t max;                          /* largest binned class */
  unsigned nbins;                      /* binned classes: 0 .. nbins - 1 */
  /* Bits that are 0 in the address of every block of each class: a slab's
   * regions lie at multiples of the size from a page boundary, a large
   * extent's start at a cache line (jemalloc's random offset).  Before
   * bin_of: see sc_je_size_classes. */
  uint16_t start_mask[SC_CLASSES_MAX];
  uint8_t bin_of[SC_BIN_LOOKUP_MAX / 8]; /* (size - 1) / 8 -> bin */
  /* Past max, classes come four per doubling: the class of size s in
   * (2^(lg-1), 2^lg] is group_first[lg] + (s - 1 - 2^(lg-1)) >> (lg - 3). */
  uint8_t group_first[65];             /* indexed by lg, 1 .. 64 */
  size_t tagged_max;                   /* largest class a tag names; max if none past it */
  unsigned nclasses;
  size_t size[SC_CLASSES_MAX];         /* bytes of each class */
} sc_je_classes;
extern sc_je_classes sc_je_size_classes;

/* The classes as the called fast path reads them, made with them: by page
 * tag (binned class + 1), the address bits that are 0 where a block starts
 * (all bits for a tag that names no bin, so that no address passes) and the
 * byte offset of the class's bin in a thread's cache; by (size - 1) / 8,
 * the offset of the size's bin. */
typedef struct sc_je_bins_by {
  uint64_t start_mask_of_tag[256];
  uint64_t offset_of_tag[256];
  uint16_t offset_of_size[SC_BIN_LOOKUP_MAX / 8];
} sc_je_bins_by;
extern sc_je_bins_by sc_je_bin_index;

/* Reads the classes from jemalloc; 0 or -1 with errno. */
int sc_je_classes_init(void);
/* Starts jemalloc (and so registers its fork handlers) if nothing has. */
void sc_je_start(void);
/* arena_je_upkeep.c: one decay-driven purge of a private arena's shards
 * (the upkeep thread's work); in a child of fork(), upkeep off. */
void sc_je_upkeep_decay(sc_arena *a);
void sc_je_upkeep_fork_child(void);
/* The private kind's creation: what sicm_arena_create_devices() does,
 * plus the library_default mark (sc_arenas_set_default_kind). */
sicm_arena sc_je_arena_create(size_t maxsize, sicm_device *const *devs, unsigned ndevs,
                              unsigned flags, int library_default);

/* The bin of a size in 1 .. sc_je_size_classes.max. */
static inline unsigned sc_size_class(size_t size) {
  return sc_je_size_classes.bin_of[(size - 1) >> 3];
}

/* The class jemalloc gives an unaligned allocation of size bytes, or
 * SC_CLASSES_MAX when no tag can name it. */
static inline unsigned sc_class_in(const sc_je_classes *c, size_t size) {
  if (size - 1 < c->max)
    return c->bin_of[(size - 1) >> 3];
  if (size > c->tagged_max)
    return SC_CLASSES_MAX;
  unsigned lg = 64 - (unsigned)__builtin_clzl(size - 1);
  return c->group_first[lg] + (unsigned)((size - 1 - ((size_t)1 << (lg - 1))) >> (lg - 3));
}
static inline unsigned sc_class_of(size_t size) { return sc_class_in(&sc_je_size_classes, size); }

/* Records the class of the allocation starting at p (from a private
 * window; others have no tags).  Atomic: threads allocating regions of
 * one page write the same value concurrently.  A large block's later
 * pages may still carry the tags of small blocks that lived there before:
 * they are cleared, so that no address inside it passes for a block. */
static inline void sc_page_class_set(void *p, unsigned cls) {
  uint8_t *tag = sc_page_tag_of(p);
  if (tag == NULL)
    return;
  __atomic_store_n(tag, (uint8_t)(cls < SC_CLASSES_MAX ? cls + 1 : 0), __ATOMIC_RELAXED);
  if (cls >= sc_je_size_classes.nbins && cls < SC_CLASSES_MAX)
    sc_page_tags_clear_inside(p, sc_je_size_classes.size[cls]);
}

/* The class of the live allocation starting at p, or SC_CLASSES_MAX if
 * unknown.  Exact: a page's tag is written by every allocation jemalloc
 * hands out that starts in it, and while one lives no other allocation can
 * start in its first page. */
static inline unsigned sc_page_class(const void *p) {
  const uint8_t *tag = sc_page_tag_of(p);
  unsigned v = tag ? __atomic_load_n(tag, __ATOMIC_RELAXED) : 0;
  return v ? v - 1 : SC_CLASSES_MAX;
}

/* Whether p is placed as a block of class cls starts. */
static inline int sc_class_start_ok(unsigned cls, const void *p) {
  return ((uintptr_t)p & sc_je_size_classes.start_mask[cls]) == 0;
}

/* The bins are the public header's, which its inline fast path uses. */
typedef sicm_bin_v2 sc_bin;

typedef struct sc_thread_cache {
  uint64_t generation;                 /* of the arena it was filled for */
  int flag;                            /* MALLOCX_TCACHE(tcache), or MALLOCX_TCACHE_NONE */
  unsigned shard;                      /* position in the arena's shards */
  int alloc_flags;                     /* flag | sc_je_arena_flag(this thread's shard) */
  unsigned tcache;                     /* jemalloc's id of the explicit tcache */
  unsigned large_last;                 /* largest class kept in large; 0: none */
  unsigned large_class;                /* class of large */
  void *large;                         /* a freed large block kept, or NULL */
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
/* Gives bin b's regions back to jemalloc until keep are left. */
void sc_bin_flush(sc_thread_cache *cache, unsigned b, unsigned keep);
/* sc_bin_push's full case: flushes half the bin, then keeps ptr. */
void sc_bin_push_full(sc_thread_cache *cache, unsigned b, void *ptr);

/* Keeps a freed region of binned class b for this thread's next
 * allocation.  The full case is a tail call, so that the usual one needs
 * no stack frame. */
static inline void sc_bin_push(sc_thread_cache *cache, unsigned b, void *ptr) {
  sc_bin *bin = &cache->bins[b];
  unsigned count = bin->count;
  if (__builtin_expect(count == bin->limit, 0)) {
    sc_bin_push_full(cache, b, ptr);
    return;
  }
  bin->slots[count] = ptr;
  bin->count = count + 1;
}

/* Frees a block of binned class b into this thread's bin; 0, or -1 with
 * errno EINVAL when it is the block freed last into that bin: a double
 * free, of which nothing is done (checking the whole bin would cost every
 * free more than the fast path's budget). */
static inline int sc_bin_free(sc_thread_cache *cache, unsigned b, void *ptr) {
  const sc_bin *bin = &cache->bins[b];
  if (__builtin_expect(bin->count > 0 && bin->slots[bin->count - 1] == ptr, 0))
    return sc_fail(EINVAL, "double free of %p: it is the block freed last", ptr);
  sc_bin_push(cache, b, ptr);
  return 0;
}

/* Forgets the class of a large block about to be freed, before jemalloc
 * may hand its pages out again: a second free of it then finds no block
 * start (EINVAL) and never reaches jemalloc.  (A small block's page holds
 * others: its tag stays.) */
static inline void sc_page_class_clear(void *p) {
  uint8_t *tag = sc_page_tag_of(p);
  if (tag != NULL)
    __atomic_store_n(tag, 0, __ATOMIC_RELAXED);
}

/* Gives large block p of class cls back to jemalloc, its tag first. */
static inline void sc_large_release(sc_thread_cache *cache, void *p, unsigned cls) {
  sc_page_class_clear(p);
  je_sdallocx(p, sc_je_size_classes.size[cls], cache->flag);
}

/* Gives back the large block the thread keeps, if any. */
static inline void sc_large_flush(sc_thread_cache *cache) {
  void *p = cache->large;
  if (p != NULL) {
    cache->large = NULL;
    sc_large_release(cache, p, cache->large_class);
  }
}

/* The kept large block if it is of class cls (its tag still names cls). */
static inline void *sc_large_take(sc_thread_cache *cache, unsigned cls) {
  void *p = cache->large;
  if (p == NULL || cache->large_class != cls)
    return NULL;
  cache->large = NULL;
  return p;
}

/* Frees ptr, a large block of class cls: kept in place of the block kept
 * before, which goes back, or given back when too large to keep.  0, or -1
 * with errno EINVAL when ptr is the kept block (a double free: nothing is
 * done).  A kept block keeps its tag, so its second free comes here. */
static inline int sc_large_free(sc_thread_cache *cache, unsigned cls, void *ptr) {
  if (cls > cache->large_last) {
    sc_large_release(cache, ptr, cls);
    return 0;
  }
  if (ptr == cache->large)
    return sc_fail(EINVAL, "double free of %p: it is the large block freed last", ptr);
  sc_large_flush(cache);
  cache->large = ptr;
  cache->large_class = cls;
  return 0;
}

/* ---- arena_je_fast.c ---- */
/* This thread's front (sicm.h's sicm_front_v2, reached here through a
 * hidden name so that the library's accesses stay within the module). */
extern SC_TLS sicm_front_v2_t sc_front;
/* Thread exit: closes this thread's front and drops it from the list. */
void sc_front_exit(void);

/* ---- arena_je.c ---- */
/* Adds a jemalloc arena with the kind's hooks to je's shards (the caller
 * checked SC_SHARDS_MAX); 0, or -1 with errno ENOMEM or jemalloc's. */
int sc_je_shard_add(sc_je_arena *je);
/* An allocation of 1 .. sc_je_size_classes.max bytes that the thread's bin
 * could not serve: one jemalloc call through the cache's tcache. */
void *sc_je_alloc_miss(sc_arena *a, sc_thread_cache *cache, size_t sz);

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
