/* SPDX-License-Identifier: BSD-3-Clause */
/* intent_device.c: choosing a device from what the data needs — combined soft
 * wishes (bandwidth, latency, capacity) ranked from an initiator given as a
 * node, a set of CPUs or a PCI device, under hard constraints. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "devices.h"

#define MAX_CANDIDATES 256

/* The node nearest a PCI device: the CPUs of its first non-I/O ancestor. */
static int node_of_pci(const char *busid) {
  hwloc_topology_t hw = sc_topo_load_hwloc(1);
  if (hw == NULL)
    return -1;
  hwloc_obj_t dev = hwloc_get_pcidev_by_busidstring(hw, busid);
  hwloc_obj_t near = dev ? hwloc_get_non_io_ancestor_obj(hw, dev) : NULL;
  int node = -1, ncpus = near ? hwloc_bitmap_weight(near->cpuset) : -1;
  unsigned *cpus = ncpus > 0 ? calloc((size_t)ncpus, sizeof *cpus) : NULL;
  if (near == NULL || ncpus <= 0) {
    sc_fail(ENOENT, "no PCI device %s, or no CPUs near it", busid);
  } else if (cpus == NULL) {
    sc_fail(ENOMEM, "out of memory");
  } else {
    size_t n = 0;
    int cpu;
    hwloc_bitmap_foreach_begin(cpu, near->cpuset) {
      cpus[n++] = (unsigned)cpu;
    }
    hwloc_bitmap_foreach_end();
    node = sicm_node_of_cpus(cpus, n);
  }
  free(cpus);
  hwloc_topology_destroy(hw);
  return node;
}

static int intent_initiator(const sicm_intent *intent) {
  if (intent->pci_busid != NULL)
    return node_of_pci(intent->pci_busid);
  if (intent->cpus != NULL)
    return sicm_node_of_cpus(intent->cpus, intent->ncpus);
  return intent->initiator == SICM_INITIATOR_SELF ? sicm_node_self() : intent->initiator;
}

typedef struct candidate {
  sicm_device *device;
  unsigned score;      /* sum of rank positions under the wishes: lower is better */
  unsigned distance;
} candidate;

static int candidate_compare(const void *a, const void *b) {
  const candidate *x = a, *y = b;
  if (x->score != y->score)
    return x->score < y->score ? -1 : 1;
  if (x->distance != y->distance)
    return x->distance < y->distance ? -1 : 1;
  return x->device->node - y->device->node;
}

/* Position of dev in a ranking (huge-page devices skipped), and its entry. */
static unsigned rank_position(const sicm_rank_entry *order, int n, const sicm_device *dev,
                              const sicm_rank_entry **entry) {
  unsigned pos = 0;
  for (int i = 0; i < n; i++) {
    if (order[i].device->huge)
      continue;
    if (order[i].device == dev) {
      *entry = &order[i];
      return pos;
    }
    pos++;
  }
  *entry = NULL;
  return pos;
}

/* Whether a ranking value meets a hard limit; unknown values never do. */
static int meets(const sicm_rank_entry *e, uint64_t limit, int upper) {
  if (limit == 0)
    return 1;
  if (e == NULL || e->source == SICM_SOURCE_TOPOLOGY || e->value == 0)
    return 0;
  return upper ? e->value <= limit : e->value >= limit;
}

sicm_device *sicm_device_for_intent(const sicm_intent *intent) {
  sc_state *s = sc_state_get();
  if (s == NULL)
    return NULL;
  if (intent == NULL)
    return sc_fail_null(EINVAL, "sicm_device_for_intent: NULL intent");
  if (intent->wants & ~(unsigned)(SICM_INTENT_BANDWIDTH | SICM_INTENT_LATENCY | SICM_INTENT_CAPACITY))
    return sc_fail_null(EINVAL, "unknown wishes 0x%x", intent->wants);
  if (intent->device != NULL && !sc_device_is_known(s, intent->device))
    return sc_fail_null(EINVAL, "the intent's device is not from sicm_devices()");
  int node = intent_initiator(intent);
  if (node < 0)
    return NULL;
  static const sicm_rank_by criteria[] = {SICM_RANK_BANDWIDTH, SICM_RANK_LATENCY,
                                          SICM_RANK_CAPACITY};
  sicm_rank_entry *order[3] = {NULL, NULL, NULL};
  int counts[3] = {0, 0, 0}, failed = 0;
  for (int c = 0; c < 3 && !failed; c++) {
    order[c] = calloc(MAX_CANDIDATES, sizeof *order[c]);
    if (order[c] == NULL)
      failed = sc_fail(ENOMEM, "out of memory");
    else if ((counts[c] = sicm_rank(criteria[c], node, order[c], MAX_CANDIDATES, NULL)) < 0)
      failed = -1;
    else if (counts[c] > MAX_CANDIDATES)
      counts[c] = MAX_CANDIDATES;
  }
  if (failed) {
    for (int c = 0; c < 3; c++)
      free(order[c]);
    return NULL;
  }
  candidate cands[MAX_CANDIDATES];
  unsigned ncands = 0;
  int self = sc_topo_index(&s->topo, node);
  for (unsigned i = 0; i < s->devices.count && ncands < MAX_CANDIDATES; i++) {
    sicm_device *dev = &s->devices.devices[i];
    if (dev->huge || (intent->device != NULL && dev != intent->device))
      continue;
    const sicm_rank_entry *bw, *lat, *cap;
    unsigned pos_bw = rank_position(order[0], counts[0], dev, &bw);
    unsigned pos_lat = rank_position(order[1], counts[1], dev, &lat);
    unsigned pos_cap = rank_position(order[2], counts[2], dev, &cap);
    size_t free_bytes = 0;
    if (!meets(bw, intent->min_bandwidth, 0) || !meets(lat, intent->max_latency, 1) ||
        (intent->min_free && (sicm_device_get_free_bytes(dev, &free_bytes) != 0 ||
                              free_bytes < intent->min_free)))
      continue;
    unsigned score = (intent->wants & SICM_INTENT_BANDWIDTH ? pos_bw : 0) +
                     (intent->wants & SICM_INTENT_LATENCY ? pos_lat : 0) +
                     (intent->wants & SICM_INTENT_CAPACITY ? pos_cap : 0);
    unsigned target = (unsigned)sc_topo_index(&s->topo, dev->node);
    cands[ncands++] = (candidate){dev, score, sc_topo_distance(&s->topo, (unsigned)self, target)};
  }
  for (int c = 0; c < 3; c++)
    free(order[c]);
  if (ncands == 0)
    return sc_fail_null(ENODEV, "no device meets the intent's constraints");
  qsort(cands, ncands, sizeof *cands, candidate_compare);
  return cands[0].device;
}
