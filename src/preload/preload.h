/* SPDX-License-Identifier: BSD-3-Clause */
/* preload.h: internals of libsicm-preload.so, the LD_PRELOAD library that
 * sends a program's large allocations to libsicm arenas on a chosen device
 * and spills to the next device when that one is full.
 *
 * preload.c owns the interposed entry points and the process allocator
 * behind them; preload_small.c the arenas of the small blocks;
 * preload_conf.c reads SICM_PRELOAD into a chain of tiers;
 * preload_place.c decides which tier takes an allocation, records the live
 * blocks and prints the statistics; preload_shm.c interposes mmap() to put
 * POSIX shared-memory segments on a device (SICM_PRELOAD_SHM).  Only libsicm's public API is used. */
#ifndef SICM_PRELOAD_H
#define SICM_PRELOAD_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "sicm.h"

#define PL_TIERS_MAX 8

/* One tier of the chain: the first is where large allocations go, the
 * others take them, in order, when the earlier ones are full.  A tier is
 * one device, preferred, or several its pages interleave over
 * (weighted:A/B, interleave:A/B). */
#define PL_TIER_DEVICES_MAX 8
typedef struct pl_tier {
  sicm_device *devices[PL_TIER_DEVICES_MAX];
  unsigned ndevices;
  unsigned flags;       /* of its arenas: SICM_ARENA_PREFERRED, _WEIGHTED or _INTERLEAVE */
  sicm_arena arena;     /* created on first use, under pl_lock */
  int arena_failed;     /* creation failed once: never retried */
  size_t budget;        /* most live bytes; SIZE_MAX: only the node's free memory */
  /* Statistics (atomic). */
  size_t live, peak, placed_bytes, placed_count, spilled_bytes, spilled_count;
  /* Free memory of the node, read at most every PL_FREE_REFRESH_NS or after
   * an eighth of it was placed since (atomic). */
  size_t free_at_read, placed_since_read;
  uint64_t read_ns;
} pl_tier;

typedef struct pl_config {
  size_t min;           /* allocations of at least this many bytes are placed */
  size_t reserve;       /* free bytes left on each device's node */
  unsigned ntiers;
  pl_tier tiers[PL_TIERS_MAX];
  int small_process;    /* small=process: blocks below min stay with the process
                           allocator; else libsicm's small arenas serve them */
  int stats;            /* print statistics at exit (and on stats_signal) */
  int stats_signal;     /* 0: none */
  char stats_path[256]; /* "": stderr; opened for appending when printing */
  char device_spec[256]; /* as given, for the report */
  unsigned site_depth;  /* sites=: frames of the call stack that name a site; 0: off */
  unsigned page_flags;  /* pages=: SICM_ARENA_HUGEPAGES or _NOHUGEPAGES for the arenas of
                           placed blocks; 0: the system's setting decides */
} pl_config;

/* With sites=N, each call site of large allocations — the hash of the
 * N return addresses above the allocation function — gets an arena of its
 * own on each tier, named after the hash and created with
 * SICM_ARENA_AUTOPLACE, so that the placer (SICM_AUTOPLACE) moves the
 * data of one site without its neighbours'.  Past PL_SITES_MAX sites, the
 * tier's own arena takes the rest. */
#define PL_SITE_DEPTH_MAX 16
#define PL_SITES_MAX 256

/* The process allocator: the next definitions after this library (its
 * malloc and free are in pl_fast). */
typedef struct pl_next {
  void *(*calloc)(size_t, size_t);
  void *(*realloc)(void *, size_t);
  int (*posix_memalign)(void **, size_t, size_t);
  void *(*aligned_alloc)(size_t, size_t);
  void *(*memalign)(size_t, size_t);
  void *(*valloc)(size_t);
  void *(*pvalloc)(size_t);
  size_t (*malloc_usable_size)(void *);
} pl_next;

extern pl_config pl_conf;
extern pl_next pl_next_fns;
/* Taken for arena creation and the live-block table; held across fork. */
extern pthread_mutex_t pl_lock;
/* What malloc and free read on every call, on one cache line. */
typedef struct pl_hot {
  size_t min_fast;                /* below it, straight to the process allocator;
                                     0 until the library is ready, SIZE_MAX if inactive */
  void *(*malloc)(size_t);        /* the process allocator's; NULL until every
                                     function of pl_next_fns is known too */
  void (*free)(void *);           /* the process allocator's, or one that finds it */
  /* Lowest and highest address any tier's arena returned: the cheap test
   * that keeps most frees of the process allocator's memory from a lookup. */
  uintptr_t range_lo, range_hi;
  int small;                      /* blocks below min_fast come from the small arenas */
} __attribute__((aligned(64))) pl_hot;
extern pl_hot pl_fast;

/* preload_conf.c: parse `text` (SICM_PRELOAD) into pl_conf and resolve its
 * devices.  Returns 0, or -1 after writing why to stderr (the preload then
 * stays out of the way). */
int pl_config_load(const char *text);
/* The base-page device `name` names (hbm, dram, ..., or node:N); its
 * ranking in *rank.  NULL after a message. */
sicm_device *pl_device_resolve(const char *name, sicm_rank_by *rank);
/* preload_shm.c: read SICM_PRELOAD_SHM (`text`, NULL when unset) and, when
 * it asks, start placing shared-memory segments as mmap() maps them.
 * Returns 0 (also when it does not ask), or -1 after a message. */
int pl_shm_start(const char *text);

/* preload_place.c */
/* Place `size` bytes (aligned to `align`, 0: default; zeroed if `zero`) on
 * the first tier with room.  Returns NULL when no tier has room or every
 * arena refused: the caller then uses the process allocator. */
void *pl_place(size_t size, size_t align, int zero);
/* If `ptr`, an address of `arena` (sicm_arena_lookup), is a live block of a
 * tier: its usable size, else 0.  A pointer inside a tier's arena that is
 * not a live block start aborts the process with a message, as glibc does
 * for an invalid free. */
size_t pl_block_size(const void *ptr, sicm_arena arena, const char *caller);
/* Free a block pl_block_size() accepted. */
void pl_release(void *ptr);
/* Resize a placed block in its own arena when its tier has room for the
 * growth; NULL (block unchanged) otherwise. */
void *pl_resize(void *ptr, size_t size);
/* preload_sites.c: the hash of the site_depth return addresses of the call
 * stack above the preload's own frames (the interposed function and what
 * it calls). */
uint64_t pl_site_hash(void);
/* The site's arena on tier `tier`, made on first use; NULL: use the
 * tier's own arena. */
sicm_arena pl_site_arena(uint64_t hash, unsigned tier);
/* Whether `arena` is one of the sites' arenas. */
int pl_sites_own(sicm_arena arena);
/* Loads backtrace's unwinder when sites= is on (at load, outside malloc). */
void pl_sites_warm(void);
/* preload_small.c: the arenas of blocks below `min` (small=sicm), one per
 * node with CPUs, made at load; 0, or -1 (small blocks then stay with the
 * process allocator). */
#define PL_SMALL_NODES_MAX 64
int pl_small_start(void);
/* The small arena of the node the calling thread runs on. */
sicm_arena pl_small_arena(void);
/* Whether `arena` is one of the small arenas. */
int pl_small_owns(sicm_arena arena);
/* preload_stats.c: counts a block left to the process allocator (no
 * device had room), and where a freed block's pages were. */
static inline void pl_stat_add(size_t *counter, size_t v) {
  __atomic_fetch_add(counter, v, __ATOMIC_RELAXED);
}
void pl_stats_fallback(size_t size);
void pl_stats_freed(const void *ptr, size_t size);
/* Write the statistics where pl_conf says; async-signal-safe unless
 * `with_residency` (which asks the kernel where the pages are). */
void pl_stats_write(int with_residency);

/* Small formatting into a caller's buffer without malloc (safe in signal
 * handlers and before the process allocator is known). */
typedef struct pl_text {
  char buf[512];
  size_t len;
} pl_text;
void pl_text_str(pl_text *t, const char *s);
void pl_text_num(pl_text *t, uint64_t v);
void pl_text_hex(pl_text *t, uint64_t v);
void pl_text_size(pl_text *t, uint64_t bytes); /* "12.5 MiB" */
void pl_text_flush(pl_text *t, int fd);
/* "libsicm-preload: " + message + "\n" on stderr. */
void pl_warn(const char *message, const char *detail);

#endif
