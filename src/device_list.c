/* SPDX-License-Identifier: BSD-3-Clause */
/* device_list.c: the device list (one device per node and page size) and the
 * public queries about devices and nodes. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <numa.h>

#include "devices.h"

#define SYSFS_NODE "/sys/devices/system/node/node%d/hugepages"

/* Reads one unsigned number from a sysfs file; -1 on failure. */
static long long sysfs_read_number(const char *path) {
  FILE *f = fopen(path, "r");
  long long v = -1;
  if (f == NULL)
    return -1;
  if (fscanf(f, "%lld", &v) != 1)
    v = -1;
  fclose(f);
  return v;
}

static long long hugetlb_pages(int node, size_t page_size, const char *which) {
  char path[256];
  snprintf(path, sizeof path, SYSFS_NODE "/hugepages-%zukB/%s", node, page_size >> 10, which);
  return sysfs_read_number(path);
}

static void device_fill(sicm_device *dev, const sc_topo *topo, const sc_conf *conf,
                        unsigned idx, size_t page_size, size_t capacity) {
  const sc_node *node = &topo->nodes[idx];
  dev->node = node->id;
  dev->page_size = page_size;
  dev->capacity = capacity;
  dev->has_cpus = node->has_cpus;
  dev->huge = page_size != sc_page_size();
  dev->kind = sc_classify(topo, idx, &dev->kind_source);
  for (unsigned c = 0; c < conf->count; c++)
    if (conf->nodes[c].node == node->id && conf->nodes[c].kind != SICM_KIND_UNKNOWN) {
      dev->kind = conf->nodes[c].kind;
      dev->kind_source = SICM_SOURCE_CONFIG;
    }
  int init = sc_topo_nearest_initiator(topo, idx);
  dev->perf.initiator = -1;
  if (init >= 0) {
    sc_perf_cell cell = sc_perf_seen_from(topo, (unsigned)init, idx);
    dev->perf = (sicm_perf){cell.read_bandwidth, cell.write_bandwidth, cell.read_latency,
                            cell.write_latency, topo->nodes[init].id, cell.source};
    if (!sc_perf_bandwidth(&cell) && !sc_perf_latency(&cell))
      dev->perf.source = SICM_SOURCE_NONE;
  }
}

/* Appends the hugetlb devices of one node: each page size with pages reserved. */
static int devices_add_hugetlb(const sc_topo *topo, const sc_conf *conf, unsigned idx,
                               sicm_device_list *list) {
  char path[128];
  snprintf(path, sizeof path, SYSFS_NODE, topo->nodes[idx].id);
  DIR *dir = opendir(path);
  if (dir == NULL)
    return 0;
  struct dirent *e;
  int rc = 0;
  while (rc == 0 && (e = readdir(dir)) != NULL) {
    size_t kb;
    if (sscanf(e->d_name, "hugepages-%zukB", &kb) != 1)
      continue;
    long long pages = hugetlb_pages(topo->nodes[idx].id, kb << 10, "nr_hugepages");
    if (pages <= 0)
      continue;
    sicm_device *grown = realloc(list->devices, (list->count + 1) * sizeof *grown);
    if (grown == NULL) {
      rc = sc_fail(ENOMEM, "out of memory listing devices");
      break;
    }
    list->devices = grown;
    sicm_device *dev = &list->devices[list->count++];
    memset(dev, 0, sizeof *dev);
    device_fill(dev, topo, conf, idx, kb << 10, (size_t)pages * (kb << 10));
  }
  closedir(dir);
  return rc;
}

static int device_compare(const void *a, const void *b) {
  const sicm_device *x = a, *y = b;
  if (x->huge != y->huge)
    return x->huge - y->huge;
  if (x->node != y->node)
    return (x->node > y->node) - (x->node < y->node);
  return (x->page_size > y->page_size) - (x->page_size < y->page_size);
}

int sc_devices_build(const sc_topo *topo, const sc_conf *conf, sicm_device_list *list) {
  list->count = topo->nnodes;
  list->devices = calloc(topo->nnodes, sizeof *list->devices);
  if (list->devices == NULL)
    return sc_fail(ENOMEM, "out of memory listing devices");
  size_t base = sc_page_size();
  for (unsigned i = 0; i < topo->nnodes; i++)
    device_fill(&list->devices[i], topo, conf, i, base, topo->nodes[i].capacity);
  /* Hugetlb pools are this machine's: a foreign topology has none. */
  for (unsigned i = 0; topo->is_this_system && i < topo->nnodes; i++)
    if (devices_add_hugetlb(topo, conf, i, list) != 0) {
      sc_devices_release(list);
      return -1;
    }
  qsort(list->devices, list->count, sizeof *list->devices, device_compare);
  for (unsigned i = 0; i < list->count; i++)
    list->devices[i].index = i;
  return 0;
}

void sc_devices_release(sicm_device_list *list) {
  free(list->devices);
  list->devices = NULL;
  list->count = 0;
}

const sicm_device_list *sicm_devices(void) {
  sc_state *s = sc_state_get();
  return s ? &s->devices : NULL;
}

sicm_device *sicm_device_of_node(int node, size_t page_size) {
  sc_state *s = sc_state_get();
  if (s == NULL)
    return NULL;
  for (unsigned i = 0; i < s->devices.count; i++) {
    sicm_device *dev = &s->devices.devices[i];
    if (dev->node == node && (page_size == 0 ? !dev->huge : dev->page_size == page_size))
      return dev;
  }
  return sc_fail_null(ENODEV, "no device on node %d with page size %zu", node, page_size);
}

int sicm_device_get_free_bytes(const sicm_device *dev, size_t *free_bytes) {
  sc_state *s = sc_state_get();
  if (s == NULL)
    return -1;
  if (free_bytes == NULL || !sc_device_is_known(s, dev))
    return sc_fail(EINVAL, "sicm_device_get_free_bytes: %s", free_bytes == NULL
                     ? "free_bytes is NULL" : "not a device from sicm_devices()");
  if (!s->topo.is_this_system)
    return sc_fail(EIO, "node %d belongs to a topology loaded from a file", dev->node);
  if (dev->huge) {
    long long pages = hugetlb_pages(dev->node, dev->page_size, "free_hugepages");
    if (pages < 0)
      return sc_fail(EIO, "cannot read free hugetlb pages of node %d", dev->node);
    *free_bytes = (size_t)pages * dev->page_size;
    return 0;
  }
  long long free_now = 0;
  if (numa_node_size64(dev->node, &free_now) < 0)
    return sc_fail(EIO, "the kernel reports no memory size for node %d", dev->node);
  *free_bytes = (size_t)free_now;
  return 0;
}

int sicm_node_distance(int from_node, int to_node) {
  sc_state *s = sc_state_get();
  if (s == NULL)
    return -1;
  int from = sc_topo_index(&s->topo, from_node), to = sc_topo_index(&s->topo, to_node);
  if (from < 0 || to < 0)
    return sc_fail(EINVAL, "no NUMA node %d", from < 0 ? from_node : to_node);
  return (int)sc_topo_distance(&s->topo, (unsigned)from, (unsigned)to);
}

int sicm_node_self(void) {
  sc_state *s = sc_state_get();
  if (s == NULL)
    return -1;
  int cpu = sched_getcpu();
  int first_with_cpus = -1;
  for (unsigned i = 0; i < s->topo.nnodes; i++) {
    const sc_node *node = &s->topo.nodes[i];
    if (cpu >= 0 && hwloc_bitmap_isset(node->cpuset, (unsigned)cpu))
      return node->id;
    if (node->has_cpus && first_with_cpus < 0)
      first_with_cpus = node->id;
  }
  /* A foreign topology need not contain this CPU: use its first CPU node. */
  return first_with_cpus;
}

int sicm_node_of_cpus(const unsigned *cpus, size_t ncpus) {
  sc_state *s = sc_state_get();
  if (s == NULL)
    return -1;
  if (cpus == NULL || ncpus == 0)
    return sc_fail(EINVAL, "sicm_node_of_cpus: no CPU given");
  int best = -1;
  size_t best_count = 0;
  for (unsigned i = 0; i < s->topo.nnodes; i++) {
    size_t count = 0;
    for (size_t c = 0; c < ncpus; c++)
      count += hwloc_bitmap_isset(s->topo.nodes[i].cpuset, cpus[c]) != 0;
    if (count > best_count) {
      best = s->topo.nodes[i].id;
      best_count = count;
    }
  }
  if (best < 0)
    return sc_fail(EINVAL, "sicm_node_of_cpus: none of the %zu CPUs exists", ncpus);
  return best;
}

const char *sicm_device_kind_name(sicm_device_kind kind) {
  switch (kind) {
  case SICM_KIND_DRAM: return "dram";
  case SICM_KIND_HBM: return "hbm";
  case SICM_KIND_CAPACITY: return "capacity";
  default: return "unknown";
  }
}

const char *sicm_source_name(sicm_source source) {
  switch (source) {
  case SICM_SOURCE_FIRMWARE: return "firmware";
  case SICM_SOURCE_CONFIG: return "config";
  case SICM_SOURCE_ESTIMATE: return "estimate";
  case SICM_SOURCE_TOPOLOGY: return "topology";
  case SICM_SOURCE_SUBTYPE: return "subtype";
  case SICM_SOURCE_MEMORY_TIER: return "memory-tier";
  default: return "none";
  }
}
