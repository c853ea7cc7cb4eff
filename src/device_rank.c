/* SPDX-License-Identifier: BSD-3-Clause */
/* device_rank.c: ordering the devices for an initiator by bandwidth, latency,
 * capacity or distance, with deterministic ties. */
#include <errno.h>
#include <stdlib.h>

#include "devices.h"

typedef struct rank_item {
  sicm_rank_entry entry;
  unsigned distance;
  int higher_first; /* 1: larger value ranks first */
} rank_item;

static int rank_item_compare(const void *a, const void *b) {
  const rank_item *x = a, *y = b;
  if (x->entry.value != y->entry.value) {
    int x_first = x->entry.value < y->entry.value;
    return (x->higher_first ? !x_first : x_first) ? -1 : 1;
  }
  if (x->distance != y->distance)
    return x->distance < y->distance ? -1 : 1;
  if (x->entry.device->node != y->entry.device->node)
    return x->entry.device->node < y->entry.device->node ? -1 : 1;
  return (x->entry.device->page_size > y->entry.device->page_size) -
         (x->entry.device->page_size < y->entry.device->page_size);
}

/* Fills value/source for one device; returns 0 when the criterion has no
 * value for it. */
static int rank_value(const sc_topo *topo, sicm_rank_by by, unsigned initiator,
                      unsigned target, const sicm_device *dev, sicm_rank_entry *entry) {
  sc_perf_cell seen;
  switch (by) {
  case SICM_RANK_BANDWIDTH:
  case SICM_RANK_LATENCY:
    seen = sc_perf_seen_from(topo, initiator, target);
    entry->value = by == SICM_RANK_BANDWIDTH ? sc_perf_bandwidth(&seen)
                                             : sc_perf_latency(&seen);
    entry->source = seen.source;
    return entry->value != 0;
  case SICM_RANK_CAPACITY:
    entry->value = dev->capacity;
    entry->source = SICM_SOURCE_TOPOLOGY;
    return 1;
  default:
    entry->value = sc_topo_distance(topo, initiator, target);
    entry->source = SICM_SOURCE_TOPOLOGY;
    return 1;
  }
}

/* Ranks of sources from strongest to weakest, for the summary. */
static int source_weakness(sicm_source s) {
  switch (s) {
  case SICM_SOURCE_FIRMWARE: return 0;
  case SICM_SOURCE_CONFIG: return 1;
  case SICM_SOURCE_ESTIMATE: return 2;
  default: return 3;
  }
}

int sicm_rank(sicm_rank_by by, int initiator, sicm_rank_entry *out, size_t max,
              sicm_source *source) {
  sc_state *s = sc_state_get();
  if (s == NULL)
    return -1;
  if ((unsigned)by > SICM_RANK_NEAREST)
    return sc_fail(EINVAL, "sicm_rank: unknown criterion %d", (int)by);
  if (out == NULL && max > 0)
    return sc_fail(EINVAL, "sicm_rank: out is NULL");
  int node = initiator == SICM_INITIATOR_SELF ? sicm_node_self() : initiator;
  int init = sc_topo_index(&s->topo, node);
  if (init < 0 || !s->topo.nodes[init].has_cpus)
    return sc_fail(EINVAL, "sicm_rank: initiator %d is not a NUMA node with CPUs", initiator);

  unsigned n = s->devices.count;
  rank_item *items = calloc(n, sizeof *items);
  if (items == NULL)
    return sc_fail(ENOMEM, "sicm_rank: out of memory");
  int complete = 1;
  sicm_source weakest = SICM_SOURCE_FIRMWARE;
  for (unsigned i = 0; i < n; i++) {
    sicm_device *dev = &s->devices.devices[i];
    unsigned target = (unsigned)sc_topo_index(&s->topo, dev->node);
    items[i].entry.device = dev;
    items[i].distance = sc_topo_distance(&s->topo, (unsigned)init, target);
    items[i].higher_first = by == SICM_RANK_BANDWIDTH || by == SICM_RANK_CAPACITY;
    complete &= rank_value(&s->topo, by, (unsigned)init, target, dev, &items[i].entry);
    if (source_weakness(items[i].entry.source) > source_weakness(weakest))
      weakest = items[i].entry.source;
  }
  if (!complete) {
    /* Some device has no value: rank everything by distance instead. */
    for (unsigned i = 0; i < n; i++) {
      items[i].entry.value = items[i].distance;
      items[i].entry.source = SICM_SOURCE_TOPOLOGY;
      items[i].higher_first = 0;
    }
    weakest = SICM_SOURCE_TOPOLOGY;
  }
  qsort(items, n, sizeof *items, rank_item_compare);
  for (size_t i = 0; i < n && i < max; i++)
    out[i] = items[i].entry;
  free(items);
  if (source != NULL)
    *source = weakest;
  return (int)n;
}

sicm_device *sicm_device_best(sicm_rank_by by, int initiator) {
  sicm_rank_entry first;
  if (sicm_rank(by, initiator, &first, 1, NULL) < 0)
    return NULL;
  return first.device;
}

const char *sicm_rank_by_name(sicm_rank_by by) {
  switch (by) {
  case SICM_RANK_BANDWIDTH: return "bandwidth";
  case SICM_RANK_LATENCY: return "latency";
  case SICM_RANK_CAPACITY: return "capacity";
  case SICM_RANK_NEAREST: return "nearest";
  default: return "invalid";
  }
}
