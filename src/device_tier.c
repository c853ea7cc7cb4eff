/* SPDX-License-Identifier: BSD-3-Clause */
/* device_tier.c: Linux memory tiers (kernel 6.1 and later), read for
 * classification when the firmware gives no memory attributes.  The kernel
 * puts each node in memory_tierN, N growing with the node's "abstract
 * distance": DRAM in one tier, DAX kmem memory (persistent or CXL memory)
 * in a slower one.  A memory-only node in a slower tier than its
 * initiator's DRAM is capacity memory; in a faster one, HBM. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "devices.h"

/* Marks the nodes of a list such as "0-1,3" with `tier`. */
static void tier_mark(sc_topo *topo, const char *list, int tier) {
  const char *p = list;
  while (*p != '\0' && *p != '\n') {
    char *end;
    long first = strtol(p, &end, 10), last = first;
    if (end == p)
      return;
    if (*end == '-') {
      p = end + 1;
      last = strtol(p, &end, 10);
      if (end == p)
        return;
    }
    for (long node = first; node <= last && node - first < 4096; node++) {
      int idx = sc_topo_index(topo, (int)node);
      if (idx >= 0)
        topo->nodes[idx].memory_tier = tier;
    }
    p = *end == ',' ? end + 1 : end;
  }
}

unsigned sc_memory_tiers_read(const char *dir, sc_topo *topo) {
  DIR *d = opendir(dir);
  if (d == NULL)
    return 0;
  unsigned tiers = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    int tier;
    char tail;
    if (sscanf(e->d_name, "memory_tier%d%c", &tier, &tail) != 1 || tier < 0)
      continue;
    char path[512], list[1024];
    snprintf(path, sizeof path, "%s/%s/nodelist", dir, e->d_name);
    FILE *f = fopen(path, "r");
    if (f == NULL)
      continue;
    if (fgets(list, sizeof list, f) != NULL) {
      tier_mark(topo, list, tier);
      tiers++;
    }
    fclose(f);
  }
  closedir(d);
  return tiers;
}
