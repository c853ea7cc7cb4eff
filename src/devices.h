/* SPDX-License-Identifier: BSD-3-Clause */
/* devices.h: the devices layer — the NUMA topology as hwloc and the
 * administrator's configuration file describe it, access performance and
 * classification, the device list and its ranking, and the one library
 * state that sicm_init() builds from them. */
#ifndef SC_DEVICES_H
#define SC_DEVICES_H

#include <hwloc.h>

#include "base.h"

/* Access performance from one initiator node to one target node; 0 = unknown. */
typedef struct sc_perf_cell {
  uint64_t read_bandwidth, write_bandwidth; /* MB/s */
  uint64_t read_latency, write_latency;     /* ns */
  sicm_source source;
} sc_perf_cell;

typedef struct sc_node {
  int id;                 /* OS index */
  int has_cpus;
  uint64_t capacity;      /* bytes of base-page memory */
  hwloc_bitmap_t cpuset;  /* CPUs of the node (OS indices) */
  char subtype[16];       /* hwloc's subtype ("HBM", "MCDRAM", "NVM", ...), or "" */
  int dax;                /* memory of a DAX device given to the kernel (kmem) */
  int memory_tier;        /* Linux memory tier (higher: slower), -1 when unknown */
} sc_node;

/* The NUMA topology as discovered, then amended by the configuration file. */
typedef struct sc_topo {
  unsigned nnodes;
  sc_node *nodes;
  unsigned *distance;     /* nnodes x nnodes, row = from */
  sc_perf_cell *perf;     /* nnodes x nnodes, row = initiator, column = target */
  int is_this_system;     /* 0 when hwloc loaded a foreign XML topology */
  sicm_topology_source source;
} sc_topo;

/* Per-node settings from the administrator configuration file. */
typedef struct sc_conf_node {
  int node;
  sicm_device_kind kind;  /* SICM_KIND_UNKNOWN: not set */
  sc_perf_cell perf;      /* zero fields: not set */
} sc_conf_node;

typedef struct sc_conf {
  unsigned count;
  sc_conf_node *nodes;
} sc_conf;

/* ---- device_topo.c: discovery through hwloc ---- */
/* A loaded hwloc topology of this machine (or of HWLOC_XMLFILE), with I/O
 * objects when io is set; NULL with errno. */
hwloc_topology_t sc_topo_load_hwloc(int io);
/* Reads the topology into topo; through the node's shared file (below)
 * when share is set. */
int sc_topo_discover(sc_topo *topo, int share);
void sc_topo_release(sc_topo *topo);
int sc_topo_index(const sc_topo *topo, int node);   /* position of node, or -1 */
unsigned sc_topo_distance(const sc_topo *topo, unsigned from, unsigned to);
sc_perf_cell *sc_topo_perf(const sc_topo *topo, unsigned initiator, unsigned target);
/* Position of the CPU node nearest to `target` (ties: lowest node), or -1. */
int sc_topo_nearest_initiator(const sc_topo *topo, unsigned target);

/* ---- device_share.c: one topology per node in shared memory ---- */
/* A loaded hwloc topology without I/O objects: adopted from the node's file
 * when a valid one matches this process, else discovered and, if this
 * process may, published there for the others; *source says which.  NULL
 * with errno only when discovery itself fails. */
hwloc_topology_t sc_topo_share_load(sicm_topology_source *source);

/* ---- device_tier.c: Linux memory tiers ---- */
/* Sets memory_tier of the nodes listed under `dir` (normally
 * /sys/devices/virtual/memory_tiering: memory_tierN/nodelist).  Returns how
 * many tiers it read; 0 when there are none (kernels before 6.1). */
unsigned sc_memory_tiers_read(const char *dir, sc_topo *topo);

/* ---- device_conf.c: administrator configuration file ---- */
/* Parses `path`; unknown nodes are checked against topo.  On failure -1
 * with errno and a description naming path:line. */
int sc_conf_parse(const char *path, const sc_topo *topo, sc_conf *conf);
void sc_conf_apply(const sc_conf *conf, sc_topo *topo);
void sc_conf_release(sc_conf *conf);

/* ---- device_perf.c: perf seen from any initiator, classification ---- */
/* Perf of target as seen from initiator: measured, configured or estimated. */
sc_perf_cell sc_perf_seen_from(const sc_topo *topo, unsigned initiator, unsigned target);
/* Mean of the known read/write values; 0 when unknown. */
uint64_t sc_perf_bandwidth(const sc_perf_cell *cell);
uint64_t sc_perf_latency(const sc_perf_cell *cell);
sicm_device_kind sc_classify(const sc_topo *topo, unsigned target, sicm_source *source);

/* ---- device_list.c: the device list ---- */
int sc_devices_build(const sc_topo *topo, const sc_conf *conf, sicm_device_list *list);
void sc_devices_release(sicm_device_list *list);

/* ---- state.c: the one library state, valid between the first sicm_init
 * and the last sicm_fini (init.c builds and releases it) ---- */

/* Options from the environment, read once by sicm_init. */
typedef struct sc_options {
  int share_topology;           /* SICM_SHARE_TOPOLOGY, or sicm_init_with's flag */
} sc_options;

typedef struct sc_state {
  sc_topo topo;
  sc_conf conf;
  sicm_device_list devices;
  sc_options options;
} sc_state;

/* The state, or NULL with errno EPERM when not initialized. */
sc_state *sc_state_get(void);
/* 1 if dev points into the device list of state. */
int sc_device_is_known(const sc_state *state, const sicm_device *dev);
/* init.c's side: the state object, and whether it is published. */
sc_state *sc_state_storage(void);
void sc_state_publish(int live);

#endif /* SC_DEVICES_H */
