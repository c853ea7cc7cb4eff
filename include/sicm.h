/* sicm.h: the public C API of libsicm.
 *
 * libsicm places groups of allocations ("arenas") on memory devices (DRAM,
 * HBM, capacity memory such as NVDIMM or CXL, each a Linux NUMA node) and
 * moves them as a whole.  This header is usable from C and C++.
 *
 * Conventions: functions that return int return 0 (or a count) on success
 * and -1 on failure; functions that return a pointer return NULL on failure.
 * On failure errno is set as documented per function, and
 * sicm_error_detail() describes the failure in words.  Every function is
 * thread-safe unless stated otherwise.
 */
#ifndef SICM_H
#define SICM_H

#include <stddef.h>
#include <stdint.h>

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
 * sicm_devices_conf_path() if that file exists.
 *
 * Returns 0, or -1 with errno:
 *   EINVAL  the configuration file is malformed (sicm_error_detail() names
 *           the file and line);
 *   ENOENT  SICM_DEVICES_CONF names a file that does not exist;
 *   EIO     the hardware topology could not be read;
 *   ENOMEM  out of memory. */
int sicm_init(void);

/* Release what sicm_init() built once the last reference is dropped.  After
 * the last sicm_fini() every sicm_device pointer is invalid.
 * Returns 0, or -1 with errno EPERM when the library is not initialized. */
int sicm_fini(void);

/* A description of the last failure of a sicm function on this thread
 * (e.g. "/etc/sicm/devices.conf:3: unknown key 'bandwith'"), or "" if none.
 * The string stays valid until the next failing call on this thread. */
const char *sicm_error_detail(void);

/* The default administrator configuration file, used when
 * SICM_DEVICES_CONF is unset.  Never fails. */
const char *sicm_devices_conf_path(void);

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
  sicm_source kind_source; /* TOPOLOGY, FIRMWARE or CONFIG */
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
const sicm_device_list *sicm_devices(void);

/* The device of NUMA node `node` with page size `page_size` (0: base pages).
 * Returns NULL with errno EPERM (not initialized) or ENODEV (no such
 * device). */
sicm_device *sicm_device_of_node(int node, size_t page_size);

/* Free bytes on a device now (a live query: MemFree of the node, or free
 * hugetlb pages x page size).  Returns 0, or -1 with errno
 *   EINVAL  dev or free_bytes is NULL, or dev is not from sicm_devices();
 *   EPERM   not initialized;
 *   EIO     the kernel gave no answer for this node (e.g. a topology loaded
 *           from an XML file describes another machine). */
int sicm_device_free(const sicm_device *dev, size_t *free_bytes);

/* NUMA distance between two nodes (ACPI SLIT; 10 means local).
 * Returns the distance, or -1 with errno EPERM (not initialized) or EINVAL
 * (unknown node). */
int sicm_node_distance(int from_node, int to_node);

/* The NUMA node of the calling thread's current CPU (the default initiator).
 * Returns the node, or -1 with errno EPERM (not initialized). */
int sicm_node_self(void);

/* The node that holds most of the given CPUs (OS indices); ties go to the
 * lowest node.  Use it to rank devices for a cpuset.  Returns the node, or
 * -1 with errno EPERM (not initialized) or EINVAL (cpus NULL, ncpus 0, or no
 * listed CPU exists). */
int sicm_node_of_cpus(const unsigned *cpus, size_t ncpus);

/* Printable names: "dram", "hbm", "capacity", "unknown"; "none",
 * "firmware", "config", "estimate", "topology".  Never NULL. */
const char *sicm_device_kind_name(sicm_device_kind kind);
const char *sicm_source_name(sicm_source source);

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
int sicm_rank(sicm_rank_by by, int initiator, sicm_rank_entry *out, size_t max,
              sicm_source *source);

/* The first device of sicm_rank(by, initiator).  Returns it, or NULL with
 * the errno of sicm_rank(). */
sicm_device *sicm_device_best(sicm_rank_by by, int initiator);

/* Printable criterion name: "bandwidth", "latency", "capacity", "nearest",
 * or "invalid".  Never NULL. */
const char *sicm_rank_by_name(sicm_rank_by by);

#ifdef __cplusplus
}
#endif

#endif /* SICM_H */
