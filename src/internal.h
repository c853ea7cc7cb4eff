/* internal.h: what the files of libsicm share.  Nothing here is public. */
#ifndef SICM_INTERNAL_H
#define SICM_INTERNAL_H

#include <stdarg.h>
#include <stdint.h>

#include <hwloc.h>
#include <jemalloc/jemalloc.h>
#include <pthread.h>

#include "sicm.h"

/* Access performance from one initiator node to one target node; 0 = unknown. */
typedef struct sicm_perf_cell {
  uint64_t read_bandwidth, write_bandwidth; /* MB/s */
  uint64_t read_latency, write_latency;     /* ns */
  sicm_source source;
} sicm_perf_cell;

typedef struct sicm_node {
  int id;                 /* OS index */
  int has_cpus;
  uint64_t capacity;      /* bytes of base-page memory */
  hwloc_bitmap_t cpuset;  /* CPUs of the node (OS indices) */
} sicm_node;

/* The NUMA topology as discovered, then amended by the configuration file. */
typedef struct sicm_topo {
  unsigned nnodes;
  sicm_node *nodes;
  unsigned *distance;     /* nnodes x nnodes, row = from */
  sicm_perf_cell *perf;   /* nnodes x nnodes, row = initiator, column = target */
  int is_this_system;     /* 0 when hwloc loaded a foreign XML topology */
} sicm_topo;

/* Per-node settings from the administrator configuration file. */
typedef struct sicm_conf_node {
  int node;
  sicm_device_kind kind;  /* SICM_KIND_UNKNOWN: not set */
  sicm_perf_cell perf;    /* zero fields: not set */
} sicm_conf_node;

typedef struct sicm_conf {
  unsigned count;
  sicm_conf_node *nodes;
} sicm_conf;

/* ---- error.c: errno plus a thread-local description ---- */
/* Sets errno to err and the description; returns -1 for "return sicm_fail(...)". */
int sicm_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void *sicm_fail_null(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- topo.c: discovery through hwloc ---- */
int sicm_topo_discover(sicm_topo *topo);
void sicm_topo_release(sicm_topo *topo);
int sicm_topo_index(const sicm_topo *topo, int node);   /* position of node, or -1 */
unsigned sicm_topo_distance(const sicm_topo *topo, unsigned from, unsigned to);
sicm_perf_cell *sicm_topo_perf(const sicm_topo *topo, unsigned initiator, unsigned target);
/* Position of the CPU node nearest to `target` (ties: lowest node), or -1. */
int sicm_topo_nearest_initiator(const sicm_topo *topo, unsigned target);

/* ---- conf.c: administrator configuration file ---- */
/* Parses `path`; unknown nodes are checked against topo.  On failure returns -1
 * with errno and a description naming path:line. */
int sicm_conf_parse(const char *path, const sicm_topo *topo, sicm_conf *conf);
void sicm_conf_apply(const sicm_conf *conf, sicm_topo *topo);
void sicm_conf_release(sicm_conf *conf);

/* ---- perf.c: perf seen from any initiator, classification ---- */
/* Perf of target as seen from initiator: measured, configured or estimated. */
sicm_perf_cell sicm_perf_seen_from(const sicm_topo *topo, unsigned initiator, unsigned target);
/* Mean of the known read/write values; 0 when unknown. */
uint64_t sicm_perf_bandwidth(const sicm_perf_cell *cell);
uint64_t sicm_perf_latency(const sicm_perf_cell *cell);
sicm_device_kind sicm_classify(const sicm_topo *topo, unsigned target, sicm_source *source);

/* ---- device.c: the device list ---- */
int sicm_devices_build(const sicm_topo *topo, const sicm_conf *conf, sicm_device_list *list);
void sicm_devices_release(sicm_device_list *list);

/* ---- init.c: the one global state, valid between sicm_init and sicm_fini ---- */
typedef struct sicm_state {
  sicm_topo topo;
  sicm_conf conf;
  sicm_device_list devices;
} sicm_state;

/* The state, or NULL with errno EPERM when not initialized. */
sicm_state *sicm_state_get(void);
/* 1 if dev points into the device list of state. */
int sicm_device_is_known(const sicm_state *state, const sicm_device *dev);

/* ---- arenas ---- */
#define SICM_ARENA_SLOTS 4096         /* jemalloc allows ~4086 user arenas */
#define SICM_CHUNK_SHIFT 34           /* address windows come in 16 GiB chunks */
#define SICM_CHUNK_SIZE ((size_t)1 << SICM_CHUNK_SHIFT)
#define SICM_ADDRESS_BITS 47          /* user address space without 5-level paging */
#define SICM_WINDOWS_MAX 64

/* A reserved PROT_NONE range, opened piece by piece from the bottom. */
typedef struct sicm_window {
  char *base;
  size_t size;
  size_t used;                  /* bytes handed to jemalloc, from base */
} sicm_window;

/* Where an arena's pages go: the devices and the mbind policy over them. */
typedef struct sicm_binding {
  int policy;                   /* MPOL_BIND, MPOL_PREFERRED(_MANY), MPOL_INTERLEAVE */
  unsigned long nodemask[16];   /* nodes of the devices (1024 nodes) */
  unsigned ndevices;
  sicm_device *devices[SICM_ARENA_DEVICES_MAX];
} sicm_binding;

typedef struct sicm_arena_rec {
  extent_hooks_t hooks;         /* first: hooks receive &hooks */
  uint64_t live_generation;     /* atomic: handle generation while live, 0 when not */
  uint64_t last_generation;     /* generation of the newest arena in this slot */
  unsigned slot;
  unsigned je_index;            /* jemalloc arena index */
  int library_default;          /* 1: a default arena sicm_fini() destroys */
  unsigned flags;
  size_t maxsize;               /* 0: unlimited */
  size_t held;                  /* atomic: committed bytes */
  sicm_binding binding;         /* changed by migration under window_lock */
  int thp_advised;              /* atomic: windows got MADV_HUGEPAGE for size */
  pthread_mutex_t window_lock;  /* windows and binding; never held on the fast path */
  unsigned nwindows;
  sicm_window windows[SICM_WINDOWS_MAX];
  pthread_mutex_t tcache_lock;  /* the explicit tcaches of threads using the arena */
  unsigned ntcaches, tcache_cap;
  unsigned *tcaches;
  pthread_mutex_t migrate_lock; /* one migration at a time; destroy waits for it */
  void *owner;                  /* the sicm_allocator the arena serves, or NULL */
  struct shm_header *shm;       /* a shared arena's segment (shm.h), or NULL */
  uint64_t shm_dev, shm_ino;    /* identity of its object, for attach */
  int migrated;                 /* last_migration is valid */
  sicm_migration_report last_migration;
} sicm_arena_rec;

/* arena.c: slots, handles, lifecycle */
/* Checks devices and placement flags (EINVAL/ENOTSUP); 0 or -1. */
int sicm_binding_make(const sicm_state *s, sicm_device *const *devs, unsigned ndevs,
                      unsigned flags, sicm_binding *out);
extern sicm_arena_rec *sicm_arena_slots[SICM_ARENA_SLOTS];
/* The live arena of a handle, or NULL with errno EINVAL/ESTALE. */
sicm_arena_rec *sicm_arena_resolve(sicm_arena sa);
sicm_arena sicm_arena_handle(const sicm_arena_rec *rec, uint64_t generation);
sicm_arena sicm_arena_create_internal(size_t maxsize, sicm_device *const *devs, unsigned ndevs,
                                      unsigned flags, int library_default);
/* The allocator (allocator.c) an arena serves: set once after creation. */
void sicm_arena_set_owner(sicm_arena sa, void *owner);
/* The owner of the live arena holding ptr, or NULL. */
void *sicm_arena_owner_of(const void *ptr);
/* Makes a mapped shared segment a live arena (no jemalloc arena behind it);
 * the handle, or NULL with EAGAIN when every slot is in use. */
sicm_arena sicm_arena_register_shared(struct shm_header *h, size_t size,
                                      const sicm_binding *binding, uint64_t dev, uint64_t ino);
/* The attached shared arena whose object is (dev, ino), or NULL. */
sicm_arena sicm_arena_find_shared(uint64_t dev, uint64_t ino);
/* Destroys the library's default arenas; -1 with EBUSY if user arenas live. */
int sicm_arenas_release_all(void);

/* window.c: address windows and the chunk -> arena table */
/* The live arena owning address p, or NULL.  Lock-free. */
sicm_arena_rec *sicm_window_owner(const void *p);
/* Makes [base, base + size) — a shared arena's segment, chunk-aligned — the
 * arena's one window. */
void sicm_window_adopt(sicm_arena_rec *rec, void *base, size_t size);
/* Takes size bytes (aligned) from the arena's windows, reserving a new
 * window when needed; NULL when out of address space. Caller holds window_lock. */
void *sicm_window_take(sicm_arena_rec *rec, void *new_addr, size_t size, size_t alignment);
void sicm_window_release_all(sicm_arena_rec *rec);
/* Arenas past this many committed bytes get transparent huge pages. */
#define SICM_THP_THRESHOLD ((size_t)64 << 20)
void sicm_window_advise_huge(sicm_arena_rec *rec);

/* extent_hooks.c */
void sicm_extent_hooks_init(extent_hooks_t *hooks);

/* thread_cache.c: per-(thread, arena) caches.  Small regions freed by a
 * thread wait in its bins for the next allocation of their size class in
 * the same arena; misses go to an explicit jemalloc tcache of that thread
 * and arena (jemalloc's default tcache would mix arenas). */
#define SICM_BIN_CAP 32
#define SICM_NBINS 36                  /* jemalloc's small classes, 8 B .. 14 KiB */
#define SICM_BIN_MAXSIZE ((size_t)14336)

typedef struct sicm_bin {
  unsigned count;
  void *slots[SICM_BIN_CAP];
} sicm_bin;

typedef struct sicm_thread_cache {
  uint64_t generation;                 /* of the arena it was filled for */
  int flag;                            /* MALLOCX_TCACHE(id), or MALLOCX_TCACHE_NONE */
  sicm_bin bins[SICM_NBINS];
} sicm_thread_cache;

/* initial-exec: one %fs-relative load on the fast path instead of a
 * __tls_get_addr call (libjemalloc.so already needs static TLS). */
#define SICM_TLS __thread __attribute__((tls_model("initial-exec")))
extern SICM_TLS sicm_thread_cache **sicm_thread_caches;
extern SICM_TLS unsigned sicm_thread_caches_cap;

/* This thread's cache for the arena, or NULL when none can be made. */
sicm_thread_cache *sicm_thread_cache_slow(sicm_arena_rec *rec, uint64_t generation);
/* Destroys every thread's jemalloc tcache of the arena (before arena destroy). */
void sicm_thread_caches_release(sicm_arena_rec *rec);
/* Gives one bin's regions back to jemalloc. */
void sicm_bin_flush(sicm_bin *bin, int flag, unsigned keep);

static inline sicm_thread_cache *sicm_thread_cache_get(sicm_arena_rec *rec, uint64_t generation) {
  if (rec->slot < sicm_thread_caches_cap) {
    sicm_thread_cache *cache = sicm_thread_caches[rec->slot];
    if (cache != NULL && cache->generation == generation)
      return cache;
  }
  return sicm_thread_cache_slow(rec, generation);
}

static inline int sicm_cache_flag(const sicm_thread_cache *cache) {
  return cache ? cache->flag : MALLOCX_TCACHE_NONE;
}

/* jemalloc's size class index of a small size (1 .. SICM_BIN_MAXSIZE). */
static inline unsigned sicm_size_class(size_t size) {
  if (size <= 8)
    return 0;
  if (size <= 64)
    return 1 + (unsigned)((size - 1) >> 4);
  unsigned lg = 63u - (unsigned)__builtin_clzl(size - 1);
  return 5 + (lg - 6) * 4 + (unsigned)((size - 1 - ((size_t)1 << lg)) >> (lg - 2));
}

#endif /* SICM_INTERNAL_H */
