/* SPDX-License-Identifier: BSD-3-Clause */
/* sicm_allocator.h: OpenMP-style allocators (memory spaces and traits) and
 * intent hints, the part of the public API that runtime authors use.
 * Included by sicm.h; including it alone includes sicm.h first.  Same
 * conventions as sicm.h: -1 or NULL on failure, errno as documented, words
 * in sicm_error_detail(). */
#ifndef SICM_ALLOCATOR_H
#define SICM_ALLOCATOR_H

#include "sicm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Allocators by intent: OpenMP-5-style memory spaces and traits            */
/* ------------------------------------------------------------------------ */

/* Memory spaces (OpenMP 5.0 2.11.1), mapped to devices seen from the thread
 * that creates the allocator:
 *   DEFAULT, CONST  the DRAM of the thread's node;
 *   LARGE_CAP       capacity-kind devices, else the largest device;
 *   HIGH_BW         HBM-kind devices; none on a machine without HBM, and then
 *                   every allocation follows the fallback trait;
 *   LOW_LAT         the lowest-latency device. */
typedef enum sicm_memspace {
  SICM_MEMSPACE_DEFAULT = 0,
  SICM_MEMSPACE_LARGE_CAP,
  SICM_MEMSPACE_CONST,
  SICM_MEMSPACE_HIGH_BW,
  SICM_MEMSPACE_LOW_LAT
} sicm_memspace;

/* Trait keys and values, numbered as OpenMP's omp_alloctrait_key_t and
 * omp_alloctrait_value_t so a runtime can pass its traits through. */
typedef enum sicm_alloctrait_key {
  SICM_ATK_SYNC_HINT = 1, /* any value: a hint; allocators are always thread-safe */
  SICM_ATK_ALIGNMENT = 2, /* power of two: every allocation aligned to it */
  SICM_ATK_ACCESS = 3,    /* ALL, THREAD, PTEAM, CGROUP: memory is reachable by all */
  SICM_ATK_POOL_SIZE = 4, /* bytes the allocator may hand out (usable sizes) */
  SICM_ATK_FALLBACK = 5,  /* DEFAULT_MEM_FB (default), NULL_FB, ABORT_FB, ALLOCATOR_FB */
  SICM_ATK_FB_DATA = 6,   /* the sicm_allocator * of ALLOCATOR_FB */
  SICM_ATK_PINNED = 7,    /* FALSE only: pinned memory is not supported (ENOTSUP) */
  SICM_ATK_PARTITION = 8  /* ENVIRONMENT, NEAREST, INTERLEAVED; BLOCKED: ENOTSUP */
} sicm_alloctrait_key;

#define SICM_ATV_DEFAULT ((uintptr_t)-1)
enum sicm_alloctrait_value {
  SICM_ATV_FALSE = 0, SICM_ATV_TRUE = 1,
  SICM_ATV_CONTENDED = 3, SICM_ATV_UNCONTENDED = 4, SICM_ATV_SERIALIZED = 5,
  SICM_ATV_PRIVATE = 6,
  SICM_ATV_ALL = 7, SICM_ATV_THREAD = 8, SICM_ATV_PTEAM = 9, SICM_ATV_CGROUP = 10,
  SICM_ATV_DEFAULT_MEM_FB = 11, SICM_ATV_NULL_FB = 12, SICM_ATV_ABORT_FB = 13,
  SICM_ATV_ALLOCATOR_FB = 14,
  SICM_ATV_ENVIRONMENT = 15, SICM_ATV_NEAREST = 16, SICM_ATV_BLOCKED = 17,
  SICM_ATV_INTERLEAVED = 18
};

typedef struct sicm_alloctrait {
  sicm_alloctrait_key key;
  uintptr_t value;
} sicm_alloctrait;

typedef struct sicm_allocator sicm_allocator;

/* Create an allocator for a memory space with traits.  Its memory comes
 * from arenas of its own (see sicm_allocator_arenas()), so it can be moved
 * with sicm_arena_set_device().  Partition ENVIRONMENT (default): one arena
 * bound to the space's devices; NEAREST: one arena per device, each
 * allocation from the device nearest the calling thread; INTERLEAVED: pages
 * interleaved over the devices.  When the space has no device, the space's
 * pool is exhausted, or its devices lack free memory for a request, the
 * allocation follows the fallback trait: DEFAULT_MEM_FB allocates from the
 * default memory (the calling thread's default arena, same alignment),
 * NULL_FB returns NULL with ENOMEM, ABORT_FB prints why and aborts,
 * ALLOCATOR_FB uses the FB_DATA allocator.  POOL_SIZE bounds the usable
 * bytes of the allocator's live blocks: whichever call frees or resizes a
 * block (sicm_allocator_free(), sicm_free(), sicm_realloc(), ...), the pool
 * gets its bytes back at once: an allocator with a pool keeps no blocks in
 * thread caches, and each of its pairs goes to the arena's jemalloc arena.
 * Returns the allocator, or NULL with errno EPERM (not initialized),
 * EINVAL (unknown space, key or value, alignment not a power of two,
 * pool size 0, ALLOCATOR_FB without FB_DATA, traits NULL with ntraits > 0),
 * ENOTSUP (PINNED true, partition BLOCKED), or the errno of
 * sicm_arena_create(). */
SICM_API sicm_allocator *sicm_allocator_create(sicm_memspace space, unsigned ntraits,
                                               const sicm_alloctrait *traits);

/* Destroy the allocator and its arenas with everything allocated from them
 * (memory obtained through a fallback stays valid).  Allocators naming it
 * as FB_DATA must be destroyed first.  Returns 0, or -1 with errno EINVAL. */
SICM_API int sicm_allocator_destroy(sicm_allocator *allocator);

/* Allocate from the allocator, following its fallback when needed.
 * NULL with errno EINVAL (allocator NULL, size 0, alignment not a power of
 * two) or ENOMEM (NULL_FB, or the fallback failed too). */
SICM_API void *sicm_allocator_alloc(sicm_allocator *allocator, size_t size);
SICM_API void *sicm_allocator_aligned_alloc(sicm_allocator *allocator, size_t alignment, size_t size);
SICM_API void *sicm_allocator_calloc(sicm_allocator *allocator, size_t n, size_t size);

/* Resize memory from any sicm allocator into `allocator` (ptr NULL:
 * allocate).  NULL with errno as sicm_allocator_alloc() (ptr then stays
 * valid), or EINVAL when ptr belongs to no arena. */
SICM_API void *sicm_allocator_realloc(sicm_allocator *allocator, void *ptr, size_t size);

/* Free memory from any sicm allocator (`allocator` may be NULL: it is found
 * from ptr).  NULL does nothing; a pointer no arena owns sets errno EINVAL. */
SICM_API void sicm_allocator_free(sicm_allocator *allocator, void *ptr);

/* The allocator's arenas: writes up to max to out and returns how many it
 * has (0 for a space without devices), or -1 with errno EINVAL. */
SICM_API int sicm_allocator_arenas(sicm_allocator *allocator, sicm_arena *out, unsigned max);

/* The devices a memory space maps to, seen from `initiator` (a node, or
 * SICM_INITIATOR_SELF): writes up to max to out and returns how many there
 * are (0: none on this machine), or -1 with errno EPERM or EINVAL. */
SICM_API int sicm_memspace_devices(sicm_memspace space, int initiator, sicm_device **out, unsigned max);

/* ------------------------------------------------------------------------ */
/* Intent hints: say what the data needs, get the device that fits         */
/* ------------------------------------------------------------------------ */

enum sicm_intent_wants {
  SICM_INTENT_BANDWIDTH = 1u << 0, /* high bandwidth from the initiator */
  SICM_INTENT_LATENCY = 1u << 1,   /* low latency from the initiator */
  SICM_INTENT_CAPACITY = 1u << 2   /* large capacity */
};

/* What a group of data needs.  Start from SICM_INTENT_INIT, then set what
 * matters.
 * Soft wishes (`wants`, combined: each device scores by its rank under
 * every wanted criterion, seen from the initiator; no wish: nearest) pick
 * among the devices that meet every hard constraint.  The initiator is
 * `pci_busid` if set (the node near that PCI device: a NIC, a GPU, found
 * through hwloc's I/O locality), else `cpus` if set, else `initiator`. */
typedef struct sicm_intent {
  unsigned wants;          /* OR of enum sicm_intent_wants */
  int initiator;           /* a node with CPUs, or SICM_INITIATOR_SELF */
  const unsigned *cpus;    /* CPUs (OS indices) that use the data; NULL: none */
  size_t ncpus;
  const char *pci_busid;   /* e.g. "0000:03:00.0"; NULL: none */
  sicm_device *device;     /* hard: only this device (NULL: any) */
  uint64_t min_bandwidth;  /* hard: MB/s seen from the initiator (0: no limit) */
  uint64_t max_latency;    /* hard: ns seen from the initiator (0: no limit) */
  size_t min_free;         /* hard: free bytes now (0: no limit) */
} sicm_intent;

/* No wish, no constraint, seen from the calling thread's node. */
#define SICM_INTENT_INIT {0, SICM_INITIATOR_SELF, NULL, 0, NULL, NULL, 0, 0, 0}

/* The base-page device that best fits the intent.  A device whose bandwidth
 * or latency is unknown does not meet a limit on it.  Returns the device,
 * or NULL with errno EPERM (not initialized), EINVAL (intent NULL, unknown
 * wants, bad initiator or cpus, device not from sicm_devices()), ENOENT
 * (no such PCI device) or ENODEV (no device meets the hard constraints). */
SICM_API sicm_device *sicm_device_for_intent(const sicm_intent *intent);

/* An allocator (see sicm_allocator_create()) whose memory is the device
 * that fits the intent.  When no device does (ENODEV above), the allocator
 * is still created and every allocation follows its fallback trait; other
 * errors return NULL with the errno of sicm_device_for_intent() or of
 * sicm_allocator_create(). */
SICM_API sicm_allocator *sicm_allocator_create_for_intent(const sicm_intent *intent, unsigned ntraits,
                                                          const sicm_alloctrait *traits);

#ifdef __cplusplus
}
#endif

#endif /* SICM_ALLOCATOR_H */
