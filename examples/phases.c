/* SPDX-License-Identifier: BSD-3-Clause */
/* phases.c: per-phase arenas, the hot one placed on the highest-bandwidth
 * device near this thread.  Prints where each arena's pages are, and exits 1
 * if the hot arena's pages are not all on its device. */
#include <stdio.h>
#include <string.h>

#include "sicm.h"

enum { PHASES = 3, HOT = 1 };
static const char *const phase_names[PHASES] = {"setup", "solve", "output"};

static void print_residency(const char *name, const size_t *bytes, int nnodes) {
  printf("  %-7s", name);
  for (int n = 0; n < nnodes; n++)
    if (bytes[n])
      printf(" node%d=%zu MiB", n, bytes[n] >> 20);
  printf("\n");
}

int main(void) {
  if (sicm_init() != 0) {
    fprintf(stderr, "phases: %s\n", sicm_error_detail());
    return 1;
  }
  sicm_device *dram = sicm_device_of_node(sicm_node_self(), 0);
  sicm_device *fast = sicm_device_best(SICM_RANK_BANDWIDTH, SICM_INITIATOR_SELF);
  printf("phases: DRAM is node %d, highest bandwidth is node %d (%s)\n", dram->node, fast->node,
         sicm_device_kind_name(fast->kind));

  sicm_arena arenas[PHASES];
  for (int p = 0; p < PHASES; p++) {
    arenas[p] = sicm_arena_create(0, p == HOT ? fast : dram);
    if (arenas[p] == NULL) {
      fprintf(stderr, "phases: %s\n", sicm_error_detail());
      return 1;
    }
    size_t len = (size_t)(p == HOT ? 64 : 16) << 20;
    char *data = sicm_arena_alloc(arenas[p], len);
    if (data == NULL) {
      fprintf(stderr, "phases: %s\n", sicm_error_detail());
      return 1;
    }
    memset(data, p, len); /* first touch places the pages */
  }

  enum { NODES = 64 };
  int misplaced = 0;
  printf("residency:\n");
  for (int p = 0; p < PHASES; p++) {
    size_t bytes[NODES] = {0};
    if (sicm_arena_residency(arenas[p], bytes, NODES) != 0) {
      fprintf(stderr, "phases: %s\n", sicm_error_detail());
      return 1;
    }
    print_residency(phase_names[p], bytes, NODES);
    int node = sicm_arena_get_device(arenas[p])->node;
    for (int n = 0; n < NODES; n++)
      misplaced |= n != node && bytes[n] != 0;
  }
  for (int p = 0; p < PHASES; p++)
    sicm_arena_destroy(arenas[p]);
  sicm_fini();
  if (misplaced)
    printf("phases: some pages are not on their arena's device\n");
  return misplaced;
}
