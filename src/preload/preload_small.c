/* SPDX-License-Identifier: BSD-3-Clause */
/* preload_small.c: the arenas that serve blocks below SICM_PRELOAD's `min`
 * (small=sicm, the default).  One arena per node with CPUs, bound to that
 * node's memory with the preferred policy, so that small blocks land where
 * first touch would put them and fall back elsewhere when the node is full,
 * as the process allocator's would.  They are made once at load, before
 * any thread can be inside libsicm with a lock held: a lazily made arena
 * would take libsicm's registry lock from inside malloc.  A thread uses the
 * arena of the node it ran on at its first small allocation. */
#define _GNU_SOURCE
#include <unistd.h>

#include <stdio.h>

#include "sicm_autoplace.h"
#include "preload.h"

static sicm_arena small_arenas[PL_SMALL_NODES_MAX];
static int small_nodes[PL_SMALL_NODES_MAX];
static unsigned small_count;

int pl_small_start(void) {
  const sicm_device_list *list = sicm_devices();
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (list == NULL)
    return -1;
  for (unsigned i = 0; i < list->count && small_count < PL_SMALL_NODES_MAX; i++) {
    sicm_device *dev = &list->devices[i];
    if (!dev->has_cpus || dev->huge || dev->page_size != page)
      continue;
    sicm_arena a = sicm_arena_create_devices(0, &dev, 1, SICM_ARENA_PREFERRED);
    if (a == NULL) {
      pl_warn("small blocks stay with the process allocator: no arena: ", sicm_error_detail());
      return -1;
    }
    char name[32];
    snprintf(name, sizeof name, "preload:small:node%d", dev->node);
    sicm_arena_set_name(a, name);
    small_nodes[small_count] = dev->node;
    small_arenas[small_count++] = a;
  }
  return small_count > 0 ? 0 : -1;
}

sicm_arena pl_small_arena(void) {
  int node = sicm_node_self();
  for (unsigned i = 0; i < small_count; i++)
    if (small_nodes[i] == node)
      return small_arenas[i];
  return small_arenas[0];
}

int pl_small_owns(sicm_arena arena) {
  for (unsigned i = 0; i < small_count; i++)
    if (small_arenas[i] == arena)
      return 1;
  return 0;
}
