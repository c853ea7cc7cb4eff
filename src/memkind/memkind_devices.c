/* SPDX-License-Identifier: BSD-3-Clause */
/* memkind_devices.c: which of libsicm's devices each kind uses, seen from
 * an initiator node, and which are HBM (libsicm's classification, or
 * MEMKIND_HBW_NODES). */
#include <numa.h>

#include "memkind_internal.h"

int mk_is_hbw_device(const sicm_device *d) {
  return mk_machine.hbw_override ? numa_bitmask_isbitset(mk_machine.hbw_override, (unsigned)d->node)
                      : d->kind == SICM_KIND_HBM;
}

/* Whether d is memory of k's type, in k's page size. */
static int of_memory(const sicm_device *d, const struct memkind *k) {
  if (k->huge_page ? !d->huge || d->page_size != k->huge_page : d->huge)
    return 0;
  switch (k->memory) {
  case MEM_HBW: return mk_is_hbw_device(d);
  case MEM_REGULAR: return d->has_cpus;
  case MEM_CAPACITY: return d->kind == SICM_KIND_CAPACITY;
  default: return 1;
  }
}

/* Whether d is local to CPUs of `node`: the node itself or a memory-only
 * node whose nearest initiator it is. */
static int is_local(const sicm_device *d, int node) {
  return d->node == node || (!d->has_cpus && d->perf.initiator == node);
}

/* The best device of a ranking from node, if the ranking rests on measured
 * or configured attributes (not on distances alone). */
static sicm_device *best_by(sicm_rank_by by, int node) {
  sicm_rank_entry first;
  sicm_source source;
  if (sicm_rank(by, node, &first, 1, &source) < 1 || source == SICM_SOURCE_TOPOLOGY)
    return NULL;
  return first.device;
}

unsigned mk_kind_devices(const struct memkind *k, int node, sicm_device **out) {
  const sicm_device_list *list = sicm_devices();
  unsigned n = 0;
  if (k->memory == MEM_LOCAL) {
    out[0] = sicm_device_of_node(node, 0);
    return out[0] != NULL;
  }
  if (k->memory == MEM_LOWEST_LATENCY || k->memory == MEM_HIGHEST_BANDWIDTH) {
    out[0] = best_by(k->memory == MEM_LOWEST_LATENCY ? SICM_RANK_LATENCY : SICM_RANK_BANDWIDTH,
                     node);
    return out[0] != NULL;
  }
  size_t best_capacity = 0;
  int best_distance = -1;
  for (unsigned i = 0; i < list->count; i++) {
    sicm_device *d = &list->devices[i];
    if (!of_memory(d, k) || (k->scope == SCOPE_LOCAL && !is_local(d, node)))
      continue;
    if (k->memory == MEM_HIGHEST_CAPACITY) {
      if (d->capacity < best_capacity)
        continue;
      if (d->capacity > best_capacity)
        n = 0;
      best_capacity = d->capacity;
    } else if (k->scope == SCOPE_NEAREST) {
      int distance = sicm_node_distance(node, d->node);
      if (best_distance >= 0 && distance >= best_distance)
        continue; /* ties: the lowest node, listed first */
      best_distance = distance;
      n = 0;
    }
    if (n < SICM_ARENA_DEVICES_MAX)
      out[n++] = d;
  }
  return n;
}

int mk_hbw_available(void) {
  if (!mk_ready())
    return 0;
  const sicm_device_list *list = sicm_devices();
  for (unsigned i = 0; i < list->count; i++)
    if (of_memory(&list->devices[i], MEMKIND_HBW))
      return 1;
  return 0;
}

int mk_is_hbw_node(int node) {
  if (!mk_ready())
    return 0;
  sicm_device *d = sicm_device_of_node(node, 0);
  return d != NULL && mk_is_hbw_device(d);
}
