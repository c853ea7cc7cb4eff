/* SPDX-License-Identifier: BSD-3-Clause */
/* memkind_regular.h: a stand-in for memkind's internal header of that
 * name, for memkind's own tests built against libsicm's memkind
 * (tests/memkind/suite.sh).  It declares only what those tests call of it:
 * memkind's regular nodes, those with CPUs, found with libnuma as memkind
 * finds them. */
#ifndef SICM_STANDIN_MEMKIND_REGULAR_H
#define SICM_STANDIN_MEMKIND_REGULAR_H

#include <memkind.h>
#include <numa.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The nodes with CPUs, in the `maxnode` bits of `nodemask`; 0, or
 * MEMKIND_ERROR_UNAVAILABLE where libnuma cannot say.  `kind` is not read. */
static inline int memkind_regular_all_get_mbind_nodemask(struct memkind *kind,
                                                         unsigned long *nodemask,
                                                         unsigned long maxnode) {
  (void)kind;
  struct bitmask out = {maxnode, nodemask};
  struct bitmask *cpus = numa_allocate_cpumask();
  if (cpus == NULL || numa_available() < 0) {
    if (cpus != NULL)
      numa_bitmask_free(cpus);
    return MEMKIND_ERROR_UNAVAILABLE;
  }
  numa_bitmask_clearall(&out);
  for (int node = 0; node <= numa_max_node() && (unsigned long)node < maxnode; node++)
    if (numa_node_to_cpus(node, cpus) == 0 && numa_bitmask_weight(cpus) > 0)
      numa_bitmask_setbit(&out, (unsigned)node);
  numa_bitmask_free(cpus);
  return MEMKIND_SUCCESS;
}

#ifdef __cplusplus
}
#endif
#endif
