/* SPDX-License-Identifier: BSD-3-Clause */
/* memkind.h of libsicm's memkind-compatible library.
 *
 * Installed in $includedir/sicm/memkind/ with the library in
 * $libdir/sicm/memkind/, so that a program opts in by its include and
 * library paths (or LD_LIBRARY_PATH for a binary built against memkind)
 * and never by accident.  The kinds are placed on libsicm's devices: HBM is
 * found from the firmware's memory attributes (HMAT), or from
 * MEMKIND_HBW_NODES (a node list such as "2" or "2-3") when set.
 *
 * Binary-compatible with memkind 1.x for what it declares: the same kinds,
 * error values and signatures.  memkind's other calls (memkind_create_kind,
 * PMEM and fixed kinds, statistics) are not provided.
 *
 * Allocation calls return NULL with errno ENOMEM when the kind has no room
 * or no device (a size of 0 returns NULL, as in memkind); memkind_free and
 * memkind_realloc accept a NULL kind, which is then detected. */
#ifndef SICM_MEMKIND_H
#define SICM_MEMKIND_H

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SICM_MEMKIND_API __attribute__((visibility("default")))

typedef struct memkind *memkind_t;

enum {
  MEMKIND_ERROR_UNAVAILABLE = -1,          /* the kind's memory is not on this machine */
  MEMKIND_ERROR_MBIND = -2,
  MEMKIND_ERROR_MMAP = -3,
  MEMKIND_ERROR_MALLOC = -6,
  MEMKIND_ERROR_ENVIRON = -12,             /* MEMKIND_HBW_NODES does not parse */
  MEMKIND_ERROR_INVALID = -13,             /* a NULL or unknown kind */
  MEMKIND_ERROR_TOOMANY = -15,
  MEMKIND_ERROR_BADOPS = -17,
  MEMKIND_ERROR_HUGETLB = -18,             /* hugetlb kinds: not provided */
  MEMKIND_ERROR_MEMTYPE_NOT_AVAILABLE = -20, /* no device of the kind's memory type */
  MEMKIND_ERROR_OPERATION_FAILED = -21,
  MEMKIND_ERROR_ARENAS_CREATE = -22,
  MEMKIND_ERROR_RUNTIME = -255
};

enum { MEMKIND_ERROR_MESSAGE_SIZE = 128 };

/* Process memory on the default heap (the process's malloc). */
SICM_MEMKIND_API extern memkind_t MEMKIND_DEFAULT;
SICM_MEMKIND_API extern memkind_t MEMKIND_REGULAR;
/* High-bandwidth memory: the nearest HBM node (bound), all HBM nodes
 * (bound), the nearest preferred (falls back to the local node when full or
 * absent), interleaved over all HBM nodes. */
SICM_MEMKIND_API extern memkind_t MEMKIND_HBW;
SICM_MEMKIND_API extern memkind_t MEMKIND_HBW_ALL;
SICM_MEMKIND_API extern memkind_t MEMKIND_HBW_PREFERRED;
SICM_MEMKIND_API extern memkind_t MEMKIND_HBW_INTERLEAVE;
/* Interleaved over every node with memory. */
SICM_MEMKIND_API extern memkind_t MEMKIND_INTERLEAVE;
/* Capacity memory (memory-only nodes libsicm classifies as capacity, such
 * as DAX kmem, NVDIMM or CXL memory): the nearest, all, the nearest
 * preferred, interleaved over all. */
SICM_MEMKIND_API extern memkind_t MEMKIND_DAX_KMEM;
SICM_MEMKIND_API extern memkind_t MEMKIND_DAX_KMEM_ALL;
SICM_MEMKIND_API extern memkind_t MEMKIND_DAX_KMEM_PREFERRED;
SICM_MEMKIND_API extern memkind_t MEMKIND_DAX_KMEM_INTERLEAVE;
/* By attribute: the nodes of the highest capacity (all nodes, or those
 * local to the calling thread's CPUs), the lowest latency and the highest
 * bandwidth seen from the calling thread's node; bound, or preferred. */
SICM_MEMKIND_API extern memkind_t MEMKIND_HIGHEST_CAPACITY;
SICM_MEMKIND_API extern memkind_t MEMKIND_HIGHEST_CAPACITY_PREFERRED;
SICM_MEMKIND_API extern memkind_t MEMKIND_HIGHEST_CAPACITY_LOCAL;
SICM_MEMKIND_API extern memkind_t MEMKIND_HIGHEST_CAPACITY_LOCAL_PREFERRED;
SICM_MEMKIND_API extern memkind_t MEMKIND_LOWEST_LATENCY_LOCAL;
SICM_MEMKIND_API extern memkind_t MEMKIND_LOWEST_LATENCY_LOCAL_PREFERRED;
SICM_MEMKIND_API extern memkind_t MEMKIND_HIGHEST_BANDWIDTH_LOCAL;
SICM_MEMKIND_API extern memkind_t MEMKIND_HIGHEST_BANDWIDTH_LOCAL_PREFERRED;
/* Hugetlb kinds, which runtimes look up: always unavailable here
 * (MEMKIND_ERROR_HUGETLB); their allocations return NULL. */
SICM_MEMKIND_API extern memkind_t MEMKIND_HUGETLB;
SICM_MEMKIND_API extern memkind_t MEMKIND_HBW_HUGETLB;
SICM_MEMKIND_API extern memkind_t MEMKIND_HBW_PREFERRED_HUGETLB;

SICM_MEMKIND_API void *memkind_malloc(memkind_t kind, size_t size);
SICM_MEMKIND_API void *memkind_calloc(memkind_t kind, size_t num, size_t size);
/* 0, EINVAL (alignment not a power of two multiple of sizeof(void *)), or
 * ENOMEM; *memptr is untouched on failure. */
SICM_MEMKIND_API int memkind_posix_memalign(memkind_t kind, void **memptr, size_t alignment,
                                            size_t size);
/* kind NULL: detected.  size 0 frees ptr and returns NULL.  A ptr of
 * another kind is moved into `kind`. */
SICM_MEMKIND_API void *memkind_realloc(memkind_t kind, void *ptr, size_t size);
/* kind NULL: detected.  A pointer that no kind allocated is left alone
 * and reported once on stderr. */
SICM_MEMKIND_API void memkind_free(memkind_t kind, void *ptr);
SICM_MEMKIND_API size_t memkind_malloc_usable_size(memkind_t kind, void *ptr);
/* The kind that allocated ptr (MEMKIND_DEFAULT for the process heap);
 * NULL for NULL. */
SICM_MEMKIND_API memkind_t memkind_detect_kind(void *ptr);
/* 0 when the kind's memory exists for the calling thread, else one of
 * the MEMKIND_ERROR_* values. */
SICM_MEMKIND_API int memkind_check_available(memkind_t kind);
SICM_MEMKIND_API void memkind_error_message(int err, char *msg, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* SICM_MEMKIND_H */
