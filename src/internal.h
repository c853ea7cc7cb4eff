/* internal.h: what the files of libsicm share.  Nothing here is public. */
#ifndef SICM_INTERNAL_H
#define SICM_INTERNAL_H

#include <stdarg.h>
#include <stdint.h>

#include <hwloc.h>

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

#endif /* SICM_INTERNAL_H */
