/* SPDX-License-Identifier: BSD-3-Clause */
/* device_topo.c: discovery of NUMA nodes, distances and memory attributes through hwloc. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <numa.h>

#include "devices.h"

int sc_topo_index(const sc_topo *topo, int node) {
  for (unsigned i = 0; i < topo->nnodes; i++)
    if (topo->nodes[i].id == node)
      return (int)i;
  return -1;
}

unsigned sc_topo_distance(const sc_topo *topo, unsigned from, unsigned to) {
  return topo->distance[from * topo->nnodes + to];
}

sc_perf_cell *sc_topo_perf(const sc_topo *topo, unsigned initiator, unsigned target) {
  return &topo->perf[initiator * topo->nnodes + target];
}

int sc_topo_nearest_initiator(const sc_topo *topo, unsigned target) {
  int best = -1;
  for (unsigned i = 0; i < topo->nnodes; i++) {
    if (!topo->nodes[i].has_cpus)
      continue;
    /* Nodes are sorted by id, so the first of equal distances is the lowest. */
    if (best < 0 || sc_topo_distance(topo, i, target) <
                        sc_topo_distance(topo, (unsigned)best, target))
      best = (int)i;
  }
  return best;
}

static int node_obj_compare(const void *a, const void *b) {
  unsigned x = (*(hwloc_obj_t const *)a)->os_index, y = (*(hwloc_obj_t const *)b)->os_index;
  return (x > y) - (x < y);
}

/* Whether a node has CPUs of its own.  hwloc gives a memory-only node the
 * cpuset of the CPUs it is attached to, so ask the kernel when the topology
 * is this machine's.  For a foreign (XML) topology, the first node of each
 * distinct cpuset is taken as the one with CPUs, as firmware lists them. */
static int node_has_cpus(const sc_topo *topo, unsigned idx, hwloc_obj_t *objs) {
  if (topo->is_this_system) {
    struct bitmask *cpus = numa_allocate_cpumask();
    int has = numa_node_to_cpus((int)objs[idx]->os_index, cpus) == 0 &&
              numa_bitmask_weight(cpus) > 0;
    numa_free_cpumask(cpus);
    return has;
  }
  if (hwloc_bitmap_iszero(objs[idx]->cpuset))
    return 0;
  for (unsigned j = 0; j < idx; j++)
    if (hwloc_bitmap_isequal(objs[j]->cpuset, objs[idx]->cpuset))
      return 0;
  return 1;
}

static void topo_read_distances(sc_topo *topo, hwloc_topology_t hw, hwloc_obj_t *objs) {
  unsigned n = topo->nnodes, nr = 1;
  struct hwloc_distances_s *dist = NULL;
  for (unsigned i = 0; i < n; i++)
    for (unsigned j = 0; j < n; j++)
      topo->distance[i * n + j] = i == j ? 10 : 20;
  if (hwloc_distances_get_by_type(hw, HWLOC_OBJ_NUMANODE, &nr, &dist,
                                  HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) != 0 || nr == 0)
    return;
  for (unsigned i = 0; i < n; i++)
    for (unsigned j = 0; j < n; j++) {
      hwloc_uint64_t there, back;
      if (hwloc_distances_obj_pair_values(dist, objs[i], objs[j], &there, &back) == 0)
        topo->distance[i * n + j] = (unsigned)there;
    }
  hwloc_distances_release(hw, dist);
}

/* Stores one attribute of one target for every CPU node that an initiator covers. */
static void topo_read_attribute(sc_topo *topo, hwloc_topology_t hw, hwloc_obj_t target,
                                unsigned target_idx, hwloc_memattr_id_t attr) {
  struct hwloc_location locs[64];
  hwloc_uint64_t values[64];
  unsigned nr = 64;
  if (hwloc_memattr_get_initiators(hw, attr, target, 0, &nr, locs, values) != 0)
    return;
  if (nr > 64)
    nr = 64;
  for (unsigned k = 0; k < nr; k++) {
    if (locs[k].type != HWLOC_LOCATION_TYPE_CPUSET)
      continue;
    for (unsigned i = 0; i < topo->nnodes; i++) {
      if (!topo->nodes[i].has_cpus ||
          !hwloc_bitmap_intersects(locs[k].location.cpuset, topo->nodes[i].cpuset))
        continue;
      sc_perf_cell *cell = sc_topo_perf(topo, i, target_idx);
      uint64_t v = values[k];
      switch (attr) {
      case HWLOC_MEMATTR_ID_READ_BANDWIDTH: cell->read_bandwidth = v; break;
      case HWLOC_MEMATTR_ID_WRITE_BANDWIDTH: cell->write_bandwidth = v; break;
      case HWLOC_MEMATTR_ID_READ_LATENCY: cell->read_latency = v; break;
      case HWLOC_MEMATTR_ID_WRITE_LATENCY: cell->write_latency = v; break;
      /* Access (read+write) values fill only what the specific ones left. */
      case HWLOC_MEMATTR_ID_BANDWIDTH:
        if (!cell->read_bandwidth) cell->read_bandwidth = v;
        if (!cell->write_bandwidth) cell->write_bandwidth = v;
        break;
      case HWLOC_MEMATTR_ID_LATENCY:
        if (!cell->read_latency) cell->read_latency = v;
        if (!cell->write_latency) cell->write_latency = v;
        break;
      default: break;
      }
      cell->source = SICM_SOURCE_FIRMWARE;
    }
  }
}

static void topo_read_perf(sc_topo *topo, hwloc_topology_t hw, hwloc_obj_t *objs) {
  /* Specific attributes first, so that access values only fill the gaps. */
  static const hwloc_memattr_id_t attrs[] = {
      HWLOC_MEMATTR_ID_READ_BANDWIDTH, HWLOC_MEMATTR_ID_WRITE_BANDWIDTH,
      HWLOC_MEMATTR_ID_READ_LATENCY,   HWLOC_MEMATTR_ID_WRITE_LATENCY,
      HWLOC_MEMATTR_ID_BANDWIDTH,      HWLOC_MEMATTR_ID_LATENCY};
  for (unsigned t = 0; t < topo->nnodes; t++)
    for (size_t a = 0; a < sizeof attrs / sizeof attrs[0]; a++)
      topo_read_attribute(topo, hw, objs[t], t, attrs[a]);
}

hwloc_topology_t sc_topo_load_hwloc(int io) {
  hwloc_topology_t hw;
  if (hwloc_topology_init(&hw) != 0)
    return sc_fail_null(ENOMEM, "hwloc_topology_init failed");
  if (io) {
    hwloc_topology_set_io_types_filter(hw, HWLOC_TYPE_FILTER_KEEP_ALL);
    /* PCI from Linux sysfs: the libpciaccess plugin leaks at every load. */
    hwloc_topology_set_components(hw, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci");
  }
  if (hwloc_topology_load(hw) != 0) {
    hwloc_topology_destroy(hw);
    return sc_fail_null(EIO, "hwloc could not load the topology");
  }
  return hw;
}

int sc_topo_discover(sc_topo *topo, int share) {
  memset(topo, 0, sizeof *topo);
  sicm_topology_source source = SICM_TOPOLOGY_DISCOVERED;
  hwloc_topology_t hw = share ? sc_topo_share_load(&source) : sc_topo_load_hwloc(0);
  if (hw == NULL)
    return -1;
  int n = hwloc_get_nbobjs_by_type(hw, HWLOC_OBJ_NUMANODE);
  if (n <= 0) {
    hwloc_topology_destroy(hw);
    return sc_fail(EIO, "hwloc found no NUMA node");
  }
  hwloc_obj_t *objs = calloc((size_t)n, sizeof *objs);
  topo->nnodes = (unsigned)n;
  topo->nodes = calloc((size_t)n, sizeof *topo->nodes);
  topo->distance = calloc((size_t)n * (size_t)n, sizeof *topo->distance);
  topo->perf = calloc((size_t)n * (size_t)n, sizeof *topo->perf);
  if (!objs || !topo->nodes || !topo->distance || !topo->perf) {
    free(objs);
    sc_topo_release(topo);
    hwloc_topology_destroy(hw);
    return sc_fail(ENOMEM, "out of memory describing %d NUMA nodes", n);
  }
  topo->is_this_system = hwloc_topology_is_thissystem(hw);
  topo->source = source;
  for (int i = 0; i < n; i++)
    objs[i] = hwloc_get_obj_by_type(hw, HWLOC_OBJ_NUMANODE, (unsigned)i);
  qsort(objs, (size_t)n, sizeof *objs, node_obj_compare);
  for (unsigned i = 0; i < topo->nnodes; i++) {
    sc_node *node = &topo->nodes[i];
    node->id = (int)objs[i]->os_index;
    node->capacity = objs[i]->attr->numanode.local_memory;
    node->has_cpus = node_has_cpus(topo, i, objs);
    node->cpuset = node->has_cpus ? hwloc_bitmap_dup(objs[i]->cpuset) : hwloc_bitmap_alloc();
    if (objs[i]->subtype != NULL)
      snprintf(node->subtype, sizeof node->subtype, "%s", objs[i]->subtype);
    /* hwloc's Linux backend names the DAX device behind a kmem node. */
    node->dax = hwloc_obj_get_info_by_name(objs[i], "DAXDevice") != NULL;
    node->memory_tier = -1;
  }
  if (topo->is_this_system)
    sc_memory_tiers_read("/sys/devices/virtual/memory_tiering", topo);
  topo_read_distances(topo, hw, objs);
  topo_read_perf(topo, hw, objs);
  free(objs);
  hwloc_topology_destroy(hw);
  return 0;
}

void sc_topo_release(sc_topo *topo) {
  for (unsigned i = 0; topo->nodes && i < topo->nnodes; i++)
    hwloc_bitmap_free(topo->nodes[i].cpuset);
  free(topo->nodes);
  free(topo->distance);
  free(topo->perf);
  memset(topo, 0, sizeof *topo);
}
