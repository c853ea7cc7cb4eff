/* SPDX-License-Identifier: BSD-3-Clause */
/* sicm.h: the public C API of libsicm, from C and C++.  libsicm places
 * groups of allocations ("arenas") on memory devices (DRAM, HBM, capacity
 * memory such as NVDIMM or CXL, each a Linux NUMA node) and moves them as
 * a whole.  Functions return 0 (or a count) or a pointer on success, -1 or
 * NULL on failure, with errno as documented per function and the cause in
 * words from sicm_error_detail(); all are thread-safe unless stated. */
#ifndef SICM_H
#define SICM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Marks what libsicm.so exports: the library is built with hidden
 * visibility, so a function without it is internal. */
#if defined(__GNUC__) && !defined(SICM_API)
#define SICM_API __attribute__((visibility("default")))
#elif !defined(SICM_API)
#define SICM_API
#endif

/* Marks the calls made once per allocation.  A position-independent
 * program (the default with Debian's GCC) calls them through its GOT, as
 * -fno-plt would, rather than through a PLT stub: the stub is a second
 * indirect jump per call, and with it the cost of the same call varied
 * from one process to the next.  The GOT entries are bound at load.  Define
 * SICM_PER_CALL empty to keep the PLT. */
#if defined(__GNUC__) && defined(__has_attribute) && !defined(SICM_PER_CALL)
#if __has_attribute(noplt)
#define SICM_PER_CALL __attribute__((noplt))
#endif
#endif
#ifndef SICM_PER_CALL
#define SICM_PER_CALL
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Library lifetime                                                         */
/* ------------------------------------------------------------------------ */

/* Discover the memory devices and make them available.
 *
 * Reference counted: every successful call must be matched by one
 * sicm_fini(); the second and later calls return 0 and change nothing, so a
 * runtime and the application may both call it.  The administrator
 * configuration file is read from the path in the environment variable
 * SICM_DEVICES_CONF, or else from the default path shown by
 * sicm_devices_conf_path() if that file exists (at most 1 MiB and 65,536
 * lines).  Every environment variable libsicm reads (sicm(7) lists them)
 * is read strictly: a value that is not entirely valid is reported in one
 * line on stderr, naming the variable, the value and what is accepted, and
 * the variable then counts as unset.
 *
 * fork(): the first call registers fork handlers, so a child may create,
 * use, move and destroy arenas whatever other threads of the parent were
 * doing.  fork() waits for a migration in progress to finish.  In the
 * child, what other threads of the parent had cached stays in their
 * arenas until those are destroyed, and an asynchronous migration of the
 * parent (sicm_arena_set_devices_async()) has no thread: wait for it in
 * the parent.  The parent's hugetlb arenas are not inherited: their pages
 * stay the parent's alone (a huge page both processes map is copied at the
 * first write, and with the pool dry the kernel ends the writer, either
 * one, with SIGBUS); in the child they are gone, as if destroyed (ESTALE,
 * their blocks no arena's), and their range stays held, inaccessible, for
 * the child's life: no later mapping or arena of the child lands there.
 *
 * Returns 0, or -1 with errno:
 *   EINVAL  the configuration file is malformed (sicm_error_detail() names
 *           the file and line), holds a NUL byte or more than 65,536 lines,
 *           or is not a regular file (a FIFO, socket or device; /dev/null
 *           reads as an empty file);
 *   EFBIG   the configuration file is longer than 1 MiB;
 *   ENOENT  SICM_DEVICES_CONF names a file that does not exist;
 *   EIO     the hardware topology could not be read;
 *   ENOMEM  out of memory (the fork handlers included). */
SICM_API int sicm_init(void);

/* Flags of sicm_init_with(). */
#define SICM_INIT_SHARE_TOPOLOGY 1u

/* sicm_init() with options; flags is 0 or SICM_INIT_SHARE_TOPOLOGY.
 *
 * SICM_INIT_SHARE_TOPOLOGY: instead of running hwloc's discovery, adopt the
 * topology another process of this user on this node already discovered,
 * from a file of shared memory (SICM_TOPOLOGY_DIR, default /dev/shm, file
 * sicm-topology-UID-TAG); the first process discovers and writes it.  On a
 * node running one rank per core this saves each rank the discovery's time
 * and memory (BENCHMARKS.md).  A file is adopted only if it is this user's,
 * mode 0600, of this boot and this hardware (online CPUs and nodes, node
 * memory sizes), of this cgroup's cpuset, this hwloc version and the same
 * HWLOC_* environment, and intact; otherwise it is ignored (replaced when
 * it is this user's).  A process that cannot map the file at its address,
 * or waits more than 2 s for the process writing it, discovers on its own:
 * sicm_init_topology_source() says which happened.  The environment variable
 * SICM_SHARE_TOPOLOGY=1 turns sharing on for sicm_init() too, and =0 turns
 * it off whatever the flags; libsicm-mpi shares by default.
 *
 * As sicm_init() after the first call: a later call only counts a
 * reference and its flags change nothing.  Returns 0, or -1 with errno as
 * sicm_init(), or EINVAL for an unknown flag. */
SICM_API int sicm_init_with(unsigned flags);

/* Where sicm_init() got the topology from. */
typedef enum sicm_topology_source {
  SICM_TOPOLOGY_DISCOVERED = 0, /* hwloc's discovery in this process */
  SICM_TOPOLOGY_PUBLISHED = 1,  /* discovered here and written for the node */
  SICM_TOPOLOGY_ADOPTED = 2,    /* mapped from the node's file, no discovery */
} sicm_topology_source;

/* A sicm_topology_source, or -1 with errno EPERM when the library is not
 * initialized. */
SICM_API int sicm_init_topology_source(void);

/* Release what sicm_init() built once the last reference is dropped: the
 * library's default arenas (sicm_alloc() memory) are destroyed and every
 * sicm_device pointer becomes invalid.  Returns 0, or -1 with errno
 *   EPERM  the library is not initialized;
 *   EBUSY  this is the last reference and arenas created with
 *          sicm_arena_create*() or attached are still live (nothing is
 *          released). */
SICM_API int sicm_fini(void);

/* A description of the last failure of a sicm function on this thread
 * (e.g. "/etc/sicm/devices.conf:3: unknown key 'bandwith'"), or "" if none.
 * The string stays valid until the next failing call on this thread. */
SICM_API const char *sicm_error_detail(void);

/* The default administrator configuration file, used when
 * SICM_DEVICES_CONF is unset.  Never fails. */
SICM_API const char *sicm_devices_conf_path(void);

/* Which jemalloc this libsicm carries.  Stores its version (e.g. "5.3.0",
 * static storage) in *version when version is not NULL, and returns 1 when
 * it is libsicm's own build — prefixed, with TLS that dlopen allows, so
 * that OpenMP runtimes, MPI libraries and Python can load libsicm with
 * dlopen — or 0 when it is the system's shared jemalloc, with which
 * libsicm cannot be loaded with dlopen.  Needs no sicm_init(); never
 * fails. */
SICM_API int sicm_jemalloc_info(const char **version);

/* ------------------------------------------------------------------------ */
/* Devices                                                                  */
/* ------------------------------------------------------------------------ */

typedef enum sicm_device_kind {
  SICM_KIND_UNKNOWN = 0,
  SICM_KIND_DRAM,       /* ordinary memory of a node with CPUs */
  SICM_KIND_HBM,        /* memory-only node faster than its initiator's DRAM */
  SICM_KIND_CAPACITY    /* memory-only node slower than its initiator's DRAM
                           (NVDIMM, CXL-attached, ...) */
} sicm_device_kind;

/* Where a value came from. */
typedef enum sicm_source {
  SICM_SOURCE_NONE = 0, /* no value */
  SICM_SOURCE_FIRMWARE, /* platform memory attributes (hwloc; ACPI HMAT on Linux) */
  SICM_SOURCE_CONFIG,   /* the administrator configuration file */
  SICM_SOURCE_ESTIMATE, /* another initiator's value scaled by NUMA distance */
  SICM_SOURCE_TOPOLOGY, /* the topology alone: CPUs, capacity, NUMA distance */
  SICM_SOURCE_SUBTYPE,  /* hwloc's description of the node: its subtype (HBM,
                           MCDRAM, GPUMemory, NVM, CXL-DRAM, ...) or DAX device */
  SICM_SOURCE_MEMORY_TIER, /* Linux memory tiers (/sys/devices/virtual/memory_tiering) */
} sicm_source;

/* Access performance of a device seen from one initiator (a node with CPUs).
 * Zero means unknown. */
typedef struct sicm_perf {
  uint64_t read_bandwidth;  /* MB/s */
  uint64_t write_bandwidth; /* MB/s */
  uint64_t read_latency;    /* ns */
  uint64_t write_latency;   /* ns */
  int initiator;            /* node the values are seen from, -1 if none */
  sicm_source source;
} sicm_perf;

/* A memory device: one NUMA node with one page size.  Base pages make one
 * device per node; each hugetlb page size with pages reserved on that node
 * makes another.  Owned by the library; read-only for callers. */
typedef struct sicm_device {
  unsigned index;          /* position in sicm_devices()->devices */
  int node;                /* NUMA node (OS index) */
  sicm_device_kind kind;
  sicm_source kind_source; /* FIRMWARE, CONFIG, SUBTYPE, MEMORY_TIER or TOPOLOGY */
  size_t page_size;        /* bytes */
  size_t capacity;         /* bytes (hugetlb: pages reserved x page size) */
  int has_cpus;            /* 1 if the node has CPUs */
  int huge;                /* 1 for a hugetlb device */
  sicm_perf perf;          /* seen from the node's nearest initiator */
} sicm_device;

typedef struct sicm_device_list {
  unsigned count;
  sicm_device *devices; /* count entries, base-page devices first by node */
} sicm_device_list;

/* All devices.  Returns the list (valid until the last sicm_fini()), or NULL
 * with errno EPERM when the library is not initialized. */
SICM_API const sicm_device_list *sicm_devices(void);

/* The device of NUMA node `node` with page size `page_size` (0: base pages).
 * Returns NULL with errno EPERM (not initialized) or ENODEV (no such
 * device). */
SICM_API sicm_device *sicm_device_of_node(int node, size_t page_size);

/* Free bytes on a device now (a live query: MemFree of the node, or free
 * hugetlb pages x page size).  Returns 0, or -1 with errno
 *   EINVAL  dev or free_bytes is NULL, or dev is not from sicm_devices();
 *   EPERM   not initialized;
 *   EIO     the kernel gave no answer for this node (e.g. a topology loaded
 *           from an XML file describes another machine). */
SICM_API int sicm_device_get_free_bytes(const sicm_device *dev, size_t *free_bytes);

/* NUMA distance between two nodes (ACPI SLIT; 10 means local).
 * Returns the distance, or -1 with errno EPERM (not initialized) or EINVAL
 * (unknown node). */
SICM_API int sicm_node_distance(int from_node, int to_node);

/* The NUMA node of the calling thread's current CPU (the default initiator).
 * Returns the node, or -1 with errno EPERM (not initialized). */
SICM_API int sicm_node_self(void);

/* The node that holds most of the given CPUs (OS indices); ties go to the
 * lowest node.  Use it to rank devices for a cpuset.  Returns the node, or
 * -1 with errno EPERM (not initialized) or EINVAL (cpus NULL, ncpus 0, or no
 * listed CPU exists). */
SICM_API int sicm_node_of_cpus(const unsigned *cpus, size_t ncpus);

/* Printable names: "dram", "hbm", "capacity", "unknown"; "none",
 * "firmware", "config", "estimate", "topology", "subtype", "memory-tier".
 * Never NULL. */
SICM_API const char *sicm_device_kind_name(sicm_device_kind kind);
SICM_API const char *sicm_source_name(sicm_source source);

/* ------------------------------------------------------------------------ */
/* Ranking                                                                  */
/* ------------------------------------------------------------------------ */

typedef enum sicm_rank_by {
  SICM_RANK_BANDWIDTH = 0, /* highest bandwidth first */
  SICM_RANK_LATENCY,       /* lowest latency first */
  SICM_RANK_CAPACITY,      /* largest capacity first */
  SICM_RANK_NEAREST        /* smallest NUMA distance first */
} sicm_rank_by;

/* The initiator argument of the ranking calls: a node with CPUs, or this. */
#define SICM_INITIATOR_SELF (-1)

typedef struct sicm_rank_entry {
  sicm_device *device;
  uint64_t value;     /* MB/s, ns, bytes or distance, per criterion */
  sicm_source source; /* where value came from */
} sicm_rank_entry;

/* Order every device for an initiator node (SICM_INITIATOR_SELF: the
 * calling thread's node; see sicm_node_of_cpus() for a cpuset).
 *
 * Bandwidth and latency are the values seen from the initiator: the
 * platform's (or the configuration file's) when it gives one for that
 * initiator and device; otherwise the device's value seen from its own
 * nearest initiator, scaled by the ratio of the two NUMA distances
 * (source ESTIMATE).  When some device has no value at all, the whole
 * ranking falls back to NUMA distance (source TOPOLOGY, value = distance).
 * Ties break by distance from the initiator, then node, then page size.
 *
 * Writes up to `max` entries to `out` and returns the number of devices (which
 * may exceed max; out may be NULL when max is 0).  If `source` is not NULL it
 * receives the weakest source used (TOPOLOGY when the ranking fell back to
 * distance).  Returns -1 with errno EPERM (not initialized) or EINVAL (bad
 * criterion, out NULL with max > 0, or initiator not a node with CPUs). */
SICM_API int sicm_rank(sicm_rank_by by, int initiator, sicm_rank_entry *out, size_t max,
                       sicm_source *source);

/* The first device of sicm_rank(by, initiator).  Returns it, or NULL with
 * the errno of sicm_rank(). */
SICM_API sicm_device *sicm_device_best(sicm_rank_by by, int initiator);

/* Printable criterion name: "bandwidth", "latency", "capacity", "nearest",
 * or "invalid".  Never NULL. */
SICM_API const char *sicm_rank_by_name(sicm_rank_by by);


/* ------------------------------------------------------------------------ */
/* Arenas                                                                   */
/* ------------------------------------------------------------------------ */

/* An arena: a group of allocations placed on one set of devices and moved
 * together.  The handle is opaque; after sicm_arena_destroy() it stays
 * invalid (ESTALE) even when a new arena takes its place. */
typedef struct sicm_arena_s *sicm_arena;

/* Flags of sicm_arena_create_devices().  Placement: at most one of
 * PREFERRED, INTERLEAVE, WEIGHTED and FIRST_TOUCH (default: strict binding).  Huge
 * pages: at most one of HUGEPAGES and NOHUGEPAGES (default: the system's
 * THP setting). */
enum sicm_arena_flags {
  SICM_ARENA_PREFERRED = 1u << 0,   /* prefer the devices, fall back elsewhere when full */
  /* Interleave pages over the devices.  A page whose device is full goes
   * to another node, as the kernel interleaves; a move puts every page on
   * the devices. */
  SICM_ARENA_INTERLEAVE = 1u << 1,
  SICM_ARENA_HUGEPAGES = 1u << 2,   /* ask for transparent huge pages (MADV_HUGEPAGE) */
  SICM_ARENA_NOHUGEPAGES = 1u << 3, /* never transparent huge pages (MADV_NOHUGEPAGE) */
  /* No memory policy of the arena's own (MPOL_DEFAULT): a page goes where
   * the policy of the thread that first touches it puts it, by default
   * that thread's node, as malloc's pages do (a hugetlb arena's are
   * touched as it commits them, by the allocating thread).  The devices
   * give the page size and are the arena's for sicm_arena_get_devices();
   * its capacity is all memory.  Not with the placer's flags, nor in a
   * move (sicm_arena_set_devices()). */
  SICM_ARENA_FIRST_TOUCH = 1u << 6,
  /* Interleave pages over the devices in proportion to their weights
   * (sicm_interleave_weights()), so that devices of different bandwidth
   * serve one array together at their summed bandwidth: the kernel's
   * MPOL_WEIGHTED_INTERLEAVE (Linux 6.9 and later), with the system's
   * weights per node, which root sets.  On an older kernel the pages
   * interleave evenly, as with INTERLEAVE.  A move keeps the proportions:
   * the kernel places each moved page by the weights.  A page whose
   * device is full goes elsewhere, as with INTERLEAVE. */
  SICM_ARENA_WEIGHTED = 1u << 7,
};

/* The weights a WEIGHTED arena over devs[0..ndevs) interleaves by: of
 * every sum-of-weights pages, weights[i] are on devs[i].  They are the
 * system's (/sys/kernel/mm/mempolicy/weighted_interleave/nodeN).  Returns
 * 0; 1 when this kernel has no weighted interleave, and such an arena
 * interleaves evenly (every weight is 1); -1 with errno EINVAL (ndevs 0 or
 * over SICM_ARENA_DEVICES_MAX, a NULL pointer, a device not from
 * sicm_devices()) or an errno of reading the weights. */
SICM_API int sicm_interleave_weights(sicm_device *const *devs, unsigned ndevs, unsigned *weights);

/* Weights in proportion to each device's bandwidth (its perf, the mean of
 * read and write where both are known), in lowest terms, each from 1 to
 * 255: what an administrator may write to the system's weights of these
 * devices' nodes (as root, in the files sicm_interleave_weights() reads).
 * The library itself never writes them: they are the whole system's.
 * Returns 0, or -1 with
 * errno EINVAL (as sicm_interleave_weights()) or ENODATA (a device's
 * bandwidth is unknown). */
SICM_API int sicm_interleave_weights_from_bandwidth(sicm_device *const *devs, unsigned ndevs,
                                                     unsigned *weights);

/* Most devices one arena can be bound to. */
#define SICM_ARENA_DEVICES_MAX 64

/* Create an arena whose every data page is on `dev` (strict binding).
 * `maxsize` bounds the bytes the arena holds (sicm_arena_size()); 0 means
 * unlimited.  It bounds live memory, not what the allocator keeps for
 * reuse (see sicm_arena_size()): once every block is freed, a block of 80%
 * of maxsize less a page of the arena's page size (a huge page in a
 * hugetlb arena) always fits (the allocator rounds a large size up to its
 * size class, at most 25% more, plus a base page).  Under concurrent
 * traffic an allocation is refused when it does not fit beside what every
 * thread holds and caches, after the arena has given back the calling
 * thread's cached regions and every free page and tried once more; a
 * refusal leaves nothing behind.  An arena with a maxsize below 256 MiB
 * caches per thread at most 1/64 of it, with no allocator thread cache
 * behind that.  The allocator's metadata for the arena lives in ordinary
 * memory near the threads that use it: it takes no room on `dev`, does not
 * count against maxsize and is not moved by sicm_arena_set_device().
 *
 * Cost: an arena reserves 16 GiB of address space (no memory) and a little
 * metadata; threads that use it at the same time get allocator arenas of
 * their own, up to one per CPU and at most 8 (one for a maxsize below
 * 256 MiB); a thread caches up to 256 KiB per size class and arena, and
 * the one large block (up to 4 MiB) it freed last, given back at thread
 * exit or destroy.  What a destroyed arena leaves is reused by the next
 * ones, so a process that creates and destroys arenas in a loop stays flat.
 * On a hugetlb device the pages come from the node's reserved pool as the
 * arena commits them (a pool run dry is ENOMEM, never SIGBUS); maxsize counts
 * whole huge pages, and the arena moves to devices of its page size only.
 * Returns the arena, or NULL with errno
 *   EPERM   library not initialized;
 *   EINVAL  dev NULL or not from sicm_devices();
 *   ENOMEM  out of address space, or out of memory;
 *   EAGAIN  the allocator has no free arena index (about 4000 arenas live). */
SICM_API sicm_arena sicm_arena_create(size_t maxsize, sicm_device *dev);

/* As sicm_arena_create(), bound to `ndevs` devices with `flags`
 * (enum sicm_arena_flags).  Errors as sicm_arena_create(), and EINVAL for
 * devs NULL, ndevs 0 or above SICM_ARENA_DEVICES_MAX, a device listed twice,
 * devices of different page sizes, or an unknown or conflicting flag. */
SICM_API sicm_arena sicm_arena_create_devices(size_t maxsize, sicm_device *const *devs, unsigned ndevs,
                                              unsigned flags);

/* Destroy an arena and free everything allocated from it, including what
 * every thread's cache holds; its pointers become invalid and its address
 * range is unmapped.  Must not race with other calls on the same arena.
 * Returns 0, or -1 with errno EINVAL (not an arena) or ESTALE (already
 * destroyed). */
SICM_API int sicm_arena_destroy(sicm_arena sa);

/* Allocate `sz` bytes from the arena.  Returns the memory (aligned for any
 * object), or NULL with errno
 *   EINVAL  sa is not an arena, or sz is 0;
 *   ESTALE  sa was destroyed;
 *   ENOMEM  the arena would exceed its maxsize, sz is more than the
 *           arena's devices could ever hold (their capacity — all memory
 *           for SICM_ARENA_PREFERRED — plus swap; e.g. SIZE_MAX), or
 *           memory is exhausted. */
SICM_API SICM_PER_CALL void *sicm_arena_alloc(sicm_arena sa, size_t sz);

/* As sicm_arena_alloc(), aligned to `alignment` bytes (arguments in the
 * order of C11 aligned_alloc); EINVAL also when alignment is not a power
 * of two. */
SICM_API SICM_PER_CALL void *sicm_arena_aligned_alloc(sicm_arena sa, size_t alignment, size_t sz);

/* As sicm_arena_alloc() for n * sz zeroed bytes; ENOMEM when n * sz
 * overflows, EINVAL when it is 0.  From 1 MiB, whole pages are zeroed by
 * dropping them (a zero page on the arena's devices at first touch). */
SICM_API SICM_PER_CALL void *sicm_arena_calloc(sicm_arena sa, size_t n, size_t sz);

/* Resize `ptr` within the arena it belongs to (contents kept up to the
 * smaller size; it may move).  ptr NULL allocates from the calling thread's
 * default arena, as sicm_alloc().  Returns the new pointer, or NULL with
 * errno (ptr then stays valid and unchanged):
 *   EINVAL  ptr belongs to no arena, is not where an allocation starts
 *           (see sicm_free()), or sz is 0;
 *   ENOMEM  as sicm_arena_alloc(). */
SICM_API SICM_PER_CALL void *sicm_realloc(void *ptr, size_t sz);

/* As sicm_realloc(), but `ptr` must belong to arena `sa` (NULL: allocate
 * from sa).  EINVAL also when ptr belongs to another arena: it stays there,
 * valid and unchanged. */
SICM_API SICM_PER_CALL void *sicm_arena_realloc(sicm_arena sa, void *ptr, size_t sz);

/* Free memory from any arena.  NULL does nothing.  A pointer that no arena
 * owns (glibc malloc, stack, ...) is not freed: errno is set to EINVAL and
 * nothing else happens.  Thread-safe; any thread may free any block.
 * Inside an arena created with sicm_arena_create*(), an address where no
 * allocation can start is refused the same way, in O(1): one in a page
 * where no allocation starts (a page never handed out, the inside of a
 * large block), or one not placed as a block of its page's size class
 * starts.  Freeing a block twice is refused the same way (EINVAL, nothing
 * freed) when the block is large, or when it is the block freed last into
 * this thread's bin of its size; any other double free, an address inside
 * a small block that is placed like a block start, and a pointer into an
 * arena that was destroyed are undefined, as with free(3): once another
 * block lives at that address (a new arena may reuse the address range),
 * no check short of a record of every block tells the two apart: that is
 * the checking mode (SICM_CHECK=1 in sicm(7), or --enable-checking), which
 * stops the process with one line and abort() at any such free or resize. */
SICM_API SICM_PER_CALL void sicm_free(void *ptr);

/* For a library whose own entry points free or resize arena blocks
 * (memkind's hbw_free, MPI_Free_mem, a preloaded free): sicm_free() and
 * sicm_realloc(), except that the checking mode's line names `call`, the
 * function the program called (NULL: the sicm_ name).  Same errors. */
SICM_API void sicm_free_named(void *ptr, const char *call);
SICM_API void *sicm_realloc_named(void *ptr, size_t sz, const char *call);

/* Usable size of an allocation (at least the size asked for).  Returns it,
 * or 0 with errno EINVAL when ptr is NULL, belongs to no arena, or is not
 * where an allocation starts (see sicm_free()). */
SICM_API SICM_PER_CALL size_t sicm_usable_size(const void *ptr);

/* The arena that owns the address `ptr` (any byte of an allocation), or
 * NULL when no arena does (errno is not changed).  O(1) and lock-free;
 * never faults, whatever the pointer. */
SICM_API SICM_PER_CALL sicm_arena sicm_arena_lookup(const void *ptr);

/* Bytes the arena holds: memory it has committed for data, never more than
 * its maxsize.  That includes freed memory the allocator keeps for reuse:
 * regions in thread caches, and free pages, which it gives back over about
 * 10 s, before a migration, and whenever an allocation would otherwise
 * pass maxsize (the arena then gives back the calling thread's cached
 * regions and every free page, and tries once more before ENOMEM).
 * Returns it, or 0 with errno EINVAL or ESTALE (bad handle). */
SICM_API size_t sicm_arena_size(sicm_arena sa);

/* The arena's devices: writes up to `max` to `out` and returns how many
 * the arena has, or -1 with errno EINVAL (bad handle, or out NULL with
 * max > 0) or ESTALE. */
SICM_API int sicm_arena_get_devices(sicm_arena sa, sicm_device **out, unsigned max);

/* The arena's first device, or NULL with errno EINVAL or ESTALE. */
SICM_API sicm_device *sicm_arena_get_device(sicm_arena sa);

/* Set the calling thread's default arena (NULL: back to the library's
 * default).  Returns 0, or -1 with errno EINVAL or ESTALE. */
SICM_API int sicm_arena_set_default(sicm_arena sa);

/* The calling thread's default arena: the one set with
 * sicm_arena_set_default(), else the library's default arena of the node the
 * thread runs on (preferred binding, created on first use, destroyed with
 * its memory by the last sicm_fini()).  NULL with errno as
 * sicm_arena_create() when that arena cannot be created. */
SICM_API sicm_arena sicm_arena_get_default(void);

/* Allocate from the calling thread's default arena.  NULL with errno as
 * sicm_arena_alloc() or sicm_arena_get_default(). */
SICM_API SICM_PER_CALL void *sicm_alloc(size_t sz);

/* The live arenas created with sicm_arena_create*(): writes up to `max` to
 * `out` and returns how many there are, or -1 with errno EINVAL (out NULL
 * with max > 0). */
SICM_API int sicm_arenas_list(sicm_arena *out, size_t max);

typedef struct sicm_arena_stats {
  size_t allocated; /* bytes in live allocations (thread caches included) */
  size_t active;    /* bytes of pages backing active extents */
  size_t resident;  /* bytes of data pages the allocator counts as resident */
  size_t mapped;    /* bytes the allocator has mapped, its metadata included */
  size_t held;      /* sicm_arena_size() */
  size_t maxsize;   /* 0: unlimited */
} sicm_arena_stats;

/* Statistics of one arena (jemalloc's, refreshed on each call).  Returns 0,
 * or -1 with errno EINVAL (bad handle or out NULL), ESTALE, or EIO. */
SICM_API int sicm_arena_get_stats(sicm_arena sa, sicm_arena_stats *out);

/* Flags of sicm_stats_print(). */
enum sicm_stats_flags {
  SICM_STATS_JSON = 1u << 0, /* one JSON object instead of text lines */
};

/* Print what every live arena holds and did — its name, devices, bytes
 * held (now and at most) and allocated, resident bytes per NUMA node,
 * migrations done with their total time and bytes moved, and, once the
 * placer measured it, its
 * rates, time on and off the fast tier and the placer's moves — then the
 * same totals for arenas destroyed before, and the placer's totals and
 * decisions (the newest 4096: when, which arena, from and to which node,
 * bytes, time taken, why), to `out` (NULL: stderr).  JSON is one line
 * holding one object, with pid, MPI rank (null without MPI), host and time
 * (JSON Lines when appended).  The library's default arenas are included
 * and marked.  Setting the environment variable SICM_STATS before
 * sicm_init() prints this report at exit (or at the last sicm_fini(),
 * whichever comes first): `1` or `text` to stderr, `json` to stderr as
 * JSON, anything else is a file to append to (JSON when it ends in
 * `.json`).  Unset, it costs nothing.  Returns 0, or -1 with errno EPERM
 * (not initialized), EINVAL (unknown flag) or EIO (writing failed). */
SICM_API int sicm_stats_print(FILE *out, unsigned flags);

/* Where the arena's pages are: adds to bytes[n] the bytes of its resident
 * pages on node n, for n < nnodes (pages on higher nodes are not counted).
 * A FIRST_TOUCH arena's page that NUMA balancing has marked for a hinting
 * fault (it scans no other kind) is not counted on kernels whose
 * move_pages(2) reports such a page absent (Debian 12's 6.1) until it is
 * touched again; moves take it all the same.
 * Returns 0, or -1 with errno EINVAL (bad handle, or bytes NULL even with
 * nnodes 0),
 * ESTALE, or the errno of move_pages(2). */
SICM_API int sicm_arena_residency(sicm_arena sa, size_t *bytes, size_t nnodes);

/* The NUMA node of the page holding `ptr`, or -1 with errno EFAULT (no
 * page there: unmapped, or never touched) or that of move_pages(2). */
SICM_API int sicm_node_of_ptr(const void *ptr);

#ifdef __cplusplus
}
#endif

/* Topics declared apart, each in a header of its own. */
#include "sicm_migration.h"
#include "sicm_shared.h"
#include "sicm_fixed.h"
#include "sicm_upkeep.h"
#include "sicm_allocator.h"
#include "sicm_autoplace.h"
#include "sicm_inline.h"

#endif /* SICM_H */
