/* SPDX-License-Identifier: BSD-3-Clause */
/* memkind_hbw.h: a stand-in for memkind's internal header of that name,
 * for memkind's own tests built against libsicm's memkind
 * (tests/memkind/suite.sh puts this directory on their include path).  It
 * declares only what those tests call of it, the nodes of high-bandwidth
 * memory, found through memkind's public API; nothing of it is libsicm's. */
#ifndef SICM_STANDIN_MEMKIND_HBW_H
#define SICM_STANDIN_MEMKIND_HBW_H

#include <memkind.h>
#include <numaif.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The nodes of high-bandwidth memory: those MEMKIND_HBW_ALL binds its
 * pages to, as get_mempolicy reports them for a block of that kind, in the
 * `maxnode` bits of `nodemask` (NULL: whether there are any).  0, or
 * MEMKIND_ERROR_UNAVAILABLE where the machine has none, as memkind answers.
 * `kind` is not read, as memkind does not read it. */
static inline int memkind_hbw_all_get_mbind_nodemask(struct memkind *kind,
                                                     unsigned long *nodemask,
                                                     unsigned long maxnode) {
  (void)kind;
  if (memkind_check_available(MEMKIND_HBW_ALL) != 0)
    return MEMKIND_ERROR_UNAVAILABLE;
  if (nodemask == NULL || maxnode == 0)
    return MEMKIND_SUCCESS;
  void *block = memkind_malloc(MEMKIND_HBW_ALL, 1);
  int mode = -1;
  int rc = block != NULL && get_mempolicy(&mode, nodemask, maxnode, block, MPOL_F_ADDR) == 0 &&
                   mode == MPOL_BIND
               ? MEMKIND_SUCCESS
               : MEMKIND_ERROR_UNAVAILABLE;
  memkind_free(MEMKIND_HBW_ALL, block);
  return rc;
}

#ifdef __cplusplus
}
#endif
#endif
