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
 * Binary-compatible with memkind 1.14 for what it declares: the same kinds,
 * types, error values and signatures.  memkind's fixed kinds are not
 * provided yet.
 *
 * Allocation calls return NULL with errno ENOMEM when the kind has no room
 * or no device (a size of 0 returns NULL, as in memkind); memkind_free and
 * memkind_realloc accept a NULL kind, which is then detected. */
#ifndef SICM_MEMKIND_H
#define SICM_MEMKIND_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SICM_MEMKIND_API __attribute__((visibility("default")))

typedef struct memkind *memkind_t;

/* memkind_create_kind()'s arguments, memkind's values. */
typedef enum memkind_memtype_t {
  MEMKIND_MEMTYPE_DEFAULT = 1 << 0,
  MEMKIND_MEMTYPE_HIGH_BANDWIDTH = 1 << 1
} memkind_memtype_t;
typedef enum memkind_policy_t {
  MEMKIND_POLICY_BIND_LOCAL = 0,
  MEMKIND_POLICY_BIND_ALL,
  MEMKIND_POLICY_PREFERRED_LOCAL,
  MEMKIND_POLICY_INTERLEAVE_LOCAL,
  MEMKIND_POLICY_INTERLEAVE_ALL,
  MEMKIND_POLICY_MAX_VALUE
} memkind_policy_t;
typedef enum memkind_bits_t { MEMKIND_MASK_PAGE_SIZE_2MB = 21ull } memkind_bits_t;

enum memkind_const {
  MEMKIND_MAX_KIND = 512,
  MEMKIND_ERROR_MESSAGE_SIZE = 128,
  MEMKIND_PMEM_MIN_SIZE = 1024 * 1024 * 16
};

enum {
  MEMKIND_SUCCESS = 0,
  MEMKIND_ERROR_UNAVAILABLE = -1,          /* the kind's memory is not on this machine */
  MEMKIND_ERROR_MBIND = -2,
  MEMKIND_ERROR_MMAP = -3,
  MEMKIND_ERROR_MALLOC = -6,
  MEMKIND_ERROR_ENVIRON = -12,             /* MEMKIND_HBW_NODES does not parse */
  MEMKIND_ERROR_INVALID = -13,             /* a NULL or unknown kind */
  MEMKIND_ERROR_TOOMANY = -15,
  MEMKIND_ERROR_BADOPS = -17,
  MEMKIND_ERROR_HUGETLB = -18,             /* no huge pages reserved for the kind */
  MEMKIND_ERROR_MEMTYPE_NOT_AVAILABLE = -20, /* no device of the kind's memory type */
  MEMKIND_ERROR_OPERATION_FAILED = -21,
  MEMKIND_ERROR_ARENAS_CREATE = -22,
  MEMKIND_ERROR_RUNTIME = -255
};

typedef enum memkind_mem_usage_policy {
  MEMKIND_MEM_USAGE_POLICY_DEFAULT = 0,
  MEMKIND_MEM_USAGE_POLICY_CONSERVATIVE = 1,
  MEMKIND_MEM_USAGE_POLICY_MAX_VALUE
} memkind_mem_usage_policy;

typedef enum memkind_stat_type {
  MEMKIND_STAT_TYPE_RESIDENT = 0,
  MEMKIND_STAT_TYPE_ACTIVE = 1,
  MEMKIND_STAT_TYPE_ALLOCATED = 2,
  MEMKIND_STAT_TYPE_MAX_VALUE
} memkind_stat_type;

/* The configuration of memkind_create_pmem_with_config(). */
struct memkind_config;

/* memkind_stats_print() honours JSON_FORMAT and OMIT_GENERAL (the totals);
 * the others name parts of jemalloc's report, which it does not print. */
typedef enum memkind_stat_print_opt {
  MEMKIND_STAT_PRINT_ALL = 0,
  MEMKIND_STAT_PRINT_JSON_FORMAT = 1U << 0,
  MEMKIND_STAT_PRINT_OMIT_GENERAL = 1U << 1,
  MEMKIND_STAT_PRINT_OMIT_MERGED_ARENA = 1U << 2,
  MEMKIND_STAT_PRINT_OMIT_DESTROYED_MERGED_ARENA = 1U << 3,
  MEMKIND_STAT_PRINT_OMIT_PER_ARENA = 1U << 4,
  MEMKIND_STAT_PRINT_OMIT_PER_SIZE_CLASS_BINS = 1U << 5,
  MEMKIND_STAT_PRINT_OMIT_PER_SIZE_CLASS_LARGE = 1U << 6,
  MEMKIND_STAT_PRINT_OMIT_MUTEX = 1U << 7,
  MEMKIND_STAT_PRINT_OMIT_EXTENT = 1U << 8,
} memkind_stat_print_opt;

/* Process memory as the default policy places it (the process's malloc
 * under another policy); memory bound to the nodes with CPUs (memkind's
 * regular nodes). */
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
/* Hugetlb kinds (2 MiB pages, the GBTLB ones too, as memkind's) from the
 * pools the system reserved on each node (vm.nr_hugepages, per node in
 * sysfs): MEMKIND_ERROR_HUGETLB where the kind's nodes have none; a pool
 * run dry is NULL with ENOMEM. */
SICM_MEMKIND_API extern memkind_t MEMKIND_HUGETLB;
SICM_MEMKIND_API extern memkind_t MEMKIND_HBW_HUGETLB;
SICM_MEMKIND_API extern memkind_t MEMKIND_HBW_ALL_HUGETLB;
SICM_MEMKIND_API extern memkind_t MEMKIND_HBW_PREFERRED_HUGETLB;
SICM_MEMKIND_API extern memkind_t MEMKIND_GBTLB;
SICM_MEMKIND_API extern memkind_t MEMKIND_HBW_GBTLB;
SICM_MEMKIND_API extern memkind_t MEMKIND_HBW_PREFERRED_GBTLB;

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

/* The memkind API version this library implements, as memkind encodes it
 * (major * 1000000 + minor * 1000 + patch): 1014000. */
SICM_MEMKIND_API int memkind_get_version(void);
/* The kind of memkind's table of supported (memtype, policy, flags): one of
 * the kinds above, never a new one.  MEMKIND_SUCCESS;
 * MEMKIND_ERROR_MEMTYPE_NOT_AVAILABLE when its memory is absent (a
 * PREFERRED_LOCAL policy then gives MEMKIND_DEFAULT); MEMKIND_ERROR_INVALID
 * for a NULL kind, a memtype of 0 or unknown bits, unknown flags or
 * policy, or a combination memkind does not support. */
SICM_MEMKIND_API int memkind_create_kind(memkind_memtype_t memtype_flags, memkind_policy_t policy,
                                         memkind_bits_t flags, memkind_t *kind);
/* A file-backed kind is destroyed with its memory; the static kinds live
 * as long as the process (MEMKIND_SUCCESS, nothing freed).
 * MEMKIND_ERROR_INVALID for an unknown kind. */
SICM_MEMKIND_API int memkind_destroy_kind(memkind_t kind);
/* Bytes of the memory the kind allocates from, for the calling thread's
 * node: the sum of its devices' capacities (every node for
 * MEMKIND_DEFAULT and MEMKIND_REGULAR; a file-backed kind's size); -1 for a preferred or hugetlb
 * kind (its memory is not one set of nodes) or an unknown kind. */
SICM_MEMKIND_API ssize_t memkind_get_capacity(memkind_t kind);
/* Refreshes the figures memkind_get_stat() reads: MEMKIND_SUCCESS. */
SICM_MEMKIND_API int memkind_update_cached_stats(void);
/* Bytes resident, active (in pages holding blocks) or allocated, of the
 * kind's arenas (the heap's, from mallinfo2, for kinds that are the
 * process heap), or of every kind when kind is NULL, as of the last
 * memkind_update_cached_stats().  MEMKIND_SUCCESS, or MEMKIND_ERROR_INVALID
 * (unknown kind or stat, value NULL). */
SICM_MEMKIND_API int memkind_get_stat(memkind_t kind, memkind_stat_type stat, size_t *value);
/* Writes each kind's figures, and their totals, through write_cb (NULL:
 * to stderr), as text or JSON (MEMKIND_STAT_PRINT_JSON_FORMAT).
 * MEMKIND_SUCCESS, or MEMKIND_ERROR_INVALID for unknown opts. */
SICM_MEMKIND_API int memkind_stats_print(void (*write_cb)(void *, const char *), void *cbopaque,
                                         memkind_stat_print_opt opts);
/* File-backed kinds (memkind's PMEM kinds): each a libsicm file-backed
 * arena (sicm_arena_create_file(3)) in a file of no name in `dir` — a DAX
 * file system holding persistent or CXL memory, tmpfs, or any other — of
 * max_size bytes (0: the file system's free space), gone when the kind is
 * destroyed or the process ends.  MEMKIND_SUCCESS; MEMKIND_ERROR_INVALID
 * for dir or kind NULL, a max_size below MEMKIND_PMEM_MIN_SIZE but not 0,
 * or a directory where no file can be made; MEMKIND_ERROR_MMAP when the
 * file system cannot hold max_size; MEMKIND_ERROR_TOOMANY when 64
 * file-backed kinds exist.  memkind_destroy_kind() frees its memory. */
SICM_MEMKIND_API int memkind_create_pmem(const char *dir, size_t max_size, memkind_t *kind);
/* The same from a configuration: its path and size (the usage policy is
 * accepted and changes nothing: freed memory is reused either way).
 * MEMKIND_ERROR_INVALID also for cfg NULL or an unknown policy. */
SICM_MEMKIND_API int memkind_create_pmem_with_config(struct memkind_config *cfg, memkind_t *kind);
/* A configuration: NULL when out of memory.  The path is kept, not copied. */
SICM_MEMKIND_API struct memkind_config *memkind_config_new(void);
SICM_MEMKIND_API void memkind_config_delete(struct memkind_config *cfg);
SICM_MEMKIND_API void memkind_config_set_path(struct memkind_config *cfg, const char *pmem_dir);
SICM_MEMKIND_API void memkind_config_set_size(struct memkind_config *cfg, size_t pmem_size);
SICM_MEMKIND_API void memkind_config_set_memory_usage_policy(struct memkind_config *cfg,
                                                             memkind_mem_usage_policy policy);
/* A kind on memory the caller owns: the whole pages of [addr, addr + size),
 * which must stay mapped until the kind is destroyed (a libsicm fixed
 * arena, sicm_arena_create_fixed(3): bytes never assumed zero, no page
 * given back, placement the caller's).  MEMKIND_SUCCESS;
 * MEMKIND_ERROR_INVALID for addr or kind NULL, size 0, no whole page, or
 * a range that overlaps another fixed kind's or lies in a kind's arena;
 * MEMKIND_ERROR_TOOMANY when 64 kinds of one arena (file-backed and
 * fixed) exist; MEMKIND_ERROR_MALLOC when out of memory.
 * memkind_destroy_kind() leaves the range to the caller. */
SICM_MEMKIND_API int memkind_create_fixed(void *addr, size_t size, memkind_t *kind);
/* 0 when pmem_dir is on a DAX file system (a file there maps with
 * MAP_SYNC), MEMKIND_ERROR_MMAP when it is not, MEMKIND_ERROR_RUNTIME when
 * no file can be made there. */
SICM_MEMKIND_API int memkind_check_dax_path(const char *pmem_dir);

/* A block moved out of a sparse slab, or NULL when it stays
 * (sicm_defrag_reallocate(3)); kind is not needed (NULL: any). */
SICM_MEMKIND_API void *memkind_defrag_reallocate(memkind_t kind, void *ptr);
/* Start (true) or stop the allocator's background threads, which give
 * free pages back as they age (sicm_background_threads(3)).
 * MEMKIND_SUCCESS, or MEMKIND_ERROR_OPERATION_FAILED. */
SICM_MEMKIND_API int memkind_set_bg_threads(bool state);

/* Deprecated in memkind: the kind of a partition number
 * (MEMKIND_PARTITION_*).  0, or MEMKIND_ERROR_UNAVAILABLE (unknown
 * partition, or kind NULL). */
SICM_MEMKIND_API int memkind_get_kind_by_partition(int partition, memkind_t *kind);
enum memkind_base_partition {
  MEMKIND_PARTITION_DEFAULT = 0,
  MEMKIND_PARTITION_HBW = 1,
  MEMKIND_PARTITION_HBW_HUGETLB = 2,
  MEMKIND_PARTITION_HBW_PREFERRED = 3,
  MEMKIND_PARTITION_HBW_PREFERRED_HUGETLB = 4,
  MEMKIND_PARTITION_HUGETLB = 5,
  MEMKIND_PARTITION_HBW_GBTLB = 6,
  MEMKIND_PARTITION_HBW_PREFERRED_GBTLB = 7,
  MEMKIND_PARTITION_GBTLB = 8,
  MEMKIND_PARTITION_HBW_INTERLEAVE = 9,
  MEMKIND_PARTITION_INTERLEAVE = 10,
  MEMKIND_PARTITION_REGULAR = 11,
  MEMKIND_PARTITION_HBW_ALL = 12,
  MEMKIND_PARTITION_HBW_ALL_HUGETLB = 13,
  MEMKIND_PARTITION_DAX_KMEM = 14,
  MEMKIND_PARTITION_DAX_KMEM_ALL = 15,
  MEMKIND_PARTITION_DAX_KMEM_PREFERRED = 16,
  MEMKIND_PARTITION_DAX_KMEM_INTERLEAVE = 17,
  MEMKIND_PARTITION_HIGHEST_CAPACITY = 18,
  MEMKIND_PARTITION_HIGHEST_CAPACITY_PREFERRED = 19,
  MEMKIND_PARTITION_HIGHEST_CAPACITY_LOCAL = 20,
  MEMKIND_PARTITION_HIGHEST_CAPACITY_LOCAL_PREFERRED = 21,
  MEMKIND_PARTITION_LOWEST_LATENCY_LOCAL = 22,
  MEMKIND_PARTITION_LOWEST_LATENCY_LOCAL_PREFERRED = 23,
  MEMKIND_PARTITION_HIGHEST_BANDWIDTH_LOCAL = 24,
  MEMKIND_PARTITION_HIGHEST_BANDWIDTH_LOCAL_PREFERRED = 25,
  MEMKIND_NUM_BASE_KIND
};

#ifdef __cplusplus
}
#endif

#endif /* SICM_MEMKIND_H */
