/* SPDX-License-Identifier: BSD-3-Clause */
/* memkind_init.c: the memkind-compatible library's start-up, once, on
 * first use — libsicm started, the node of each CPU, MEMKIND_HBW_NODES,
 * where the rseq area's CPU lies, and whether MEMKIND_DEFAULT comes from
 * arenas.  It calls nothing else of this library's: the kinds
 * (memkind.c) and their devices (memkind_devices.c) call it.
 *
 * No lock of this library's own is ever held: a kind's arena table and
 * each of its arenas are published with one compare-and-swap, the loser of
 * a race freeing what it made.  So fork() at any moment, even while other
 * threads make their first allocations, leaves the child nothing held
 * (libsicm's own locks have its fork handlers; pthread_once restarts in a
 * child). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#if __has_include(<sys/rseq.h>)
#include <sys/rseq.h>
#endif

#include "memkind_internal.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int sicm_ready; /* sicm_init succeeded */
struct mk_machine mk_machine;

static void mk_init(void) {
  if (sicm_init() != 0) {
    fprintf(stderr, "libmemkind (libsicm): sicm_init failed: %s; only MEMKIND_DEFAULT works\n",
            sicm_error_detail());
    return;
  }
  const sicm_device_list *list = sicm_devices();
  for (unsigned i = 0; i < list->count; i++)
    if (list->devices[i].node + 1 > mk_machine.node_slots)
      mk_machine.node_slots = list->devices[i].node + 1;
  int cpus = numa_num_configured_cpus();
  short *cpu_node = cpus > 0 ? malloc((size_t)cpus * sizeof *cpu_node) : NULL;
  for (int cpu = 0; cpu_node != NULL && cpu < cpus; cpu++) {
    int node = numa_node_of_cpu(cpu);
    cpu_node[cpu] = (short)(node >= 0 && node < mk_machine.node_slots && node < SHRT_MAX ? node : -1);
  }
  mk_machine.cpu_node = cpu_node;
  mk_machine.ncpus = cpu_node != NULL ? cpus : 0;
  const char *env = getenv("MEMKIND_HBW_NODES");
  if (env != NULL && env[0] != '\0') {
    mk_machine.hbw_override = numa_parse_nodestring(env);
    if (mk_machine.hbw_override == NULL)
      fprintf(stderr, "libmemkind (libsicm): MEMKIND_HBW_NODES=\"%s\" is not a node list; "
                      "using the HBM libsicm finds\n", env);
  }
#if defined(RSEQ_SIG) && defined(__GNUC__) && !defined(__clang__)
  if (__rseq_size >= 8 && __rseq_offset + (long)offsetof(struct rseq, cpu_id) != 0)
    __atomic_store_n(&mk_fast.rseq_cpu_offset, __rseq_offset + (long)offsetof(struct rseq, cpu_id),
                     __ATOMIC_RELAXED);
#endif
  int mode = -1;
  mk_machine.local_in_arenas = get_mempolicy(&mode, NULL, 0, NULL, 0) == 0 &&
                               (mode == MPOL_DEFAULT || mode == MPOL_LOCAL);
  __atomic_store_n(&sicm_ready, 1, __ATOMIC_RELEASE);
}

/* The start-up reads files that may not exist; what it leaves in errno is
 * not the caller's (memkind's calls leave errno alone when they succeed). */
int mk_ready(void) {
  if (__atomic_load_n(&sicm_ready, __ATOMIC_ACQUIRE))
    return 1;
  int saved_errno = errno;
  pthread_once(&init_once, mk_init);
  errno = saved_errno;
  return sicm_ready;
}
