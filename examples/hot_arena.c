/* SPDX-License-Identifier: BSD-3-Clause */
/* hot_arena.c: an HPC-style time-step loop.  Each step has a setup phase
 * and a kernel phase with its own arena; the kernel's arena moves to the
 * highest-bandwidth device before the kernel runs and back to DRAM after,
 * with every pointer still valid.  Prints the arena's residency at each step
 * and exits 1 if a page is ever not where it should be. */
#include <stdio.h>
#include <stdlib.h>

#include "sicm.h"

enum { STEPS = 3, NODES = 64 };
static const size_t N = (size_t)4 << 20; /* doubles per array: 3 x 32 MiB */

/* Prints where the arena's pages are; returns 1 if any is off `node`. */
static int report(const char *when, sicm_arena arena, int node) {
  size_t bytes[NODES] = {0};
  if (sicm_arena_residency(arena, bytes, NODES) != 0) {
    fprintf(stderr, "hot_arena: %s\n", sicm_error_detail());
    return 1;
  }
  int misplaced = 0;
  printf("  %-16s", when);
  for (int n = 0; n < NODES; n++)
    if (bytes[n]) {
      printf(" node%d=%zu MiB", n, bytes[n] >> 20);
      misplaced |= n != node;
    }
  printf("%s\n", misplaced ? "  <- misplaced" : "");
  return misplaced;
}

static int move(sicm_arena arena, sicm_device *dev) {
  if (sicm_arena_set_device(arena, dev) == 0)
    return 0;
  fprintf(stderr, "hot_arena: %s\n", sicm_error_detail());
  return 1;
}

int main(void) {
  if (sicm_init() != 0) {
    fprintf(stderr, "hot_arena: %s\n", sicm_error_detail());
    return 1;
  }
  sicm_device *dram = sicm_device_of_node(sicm_node_self(), 0);
  sicm_device *fast = sicm_device_best(SICM_RANK_BANDWIDTH, SICM_INITIATOR_SELF);
  printf("hot_arena: DRAM node %d, highest bandwidth node %d (%s)\n", dram->node, fast->node,
         sicm_device_kind_name(fast->kind));
  sicm_arena hot = sicm_arena_create(0, dram);
  double *a = sicm_arena_alloc(hot, N * sizeof *a), *b = sicm_arena_alloc(hot, N * sizeof *b);
  double *c = sicm_arena_alloc(hot, N * sizeof *c);
  if (!a || !b || !c) {
    fprintf(stderr, "hot_arena: %s\n", sicm_error_detail());
    return 1;
  }
  for (size_t i = 0; i < N; i++) {
    a[i] = 0;
    b[i] = (double)i;
    c[i] = 2;
  }
  int bad = 0;
  for (int step = 0; step < STEPS && !bad; step++) {
    printf("step %d\n", step);
    /* Setup phase: scratch data in an arena of its own, on DRAM. */
    sicm_arena scratch = sicm_arena_create(0, dram);
    double *tmp = sicm_arena_alloc(scratch, N / 4 * sizeof *tmp);
    for (size_t i = 0; i < N / 4; i++)
      tmp[i] = (double)(step + 1);
    bad |= report("setup (DRAM)", hot, dram->node);
    /* Kernel phase: the hot arena on the fast device, a STREAM triad. */
    bad |= move(hot, fast) || report("kernel (fast)", hot, fast->node);
    for (size_t i = 0; i < N; i++)
      a[i] = b[i] + tmp[i % (N / 4)] * c[i];
    bad |= move(hot, dram) || report("after (DRAM)", hot, dram->node);
    sicm_arena_destroy(scratch);
  }
  /* a[i] = i + STEPS * 2 after the last step. */
  for (size_t i = 0; i < N && !bad; i += N / 8)
    if (a[i] != (double)i + STEPS * 2.0) {
      printf("hot_arena: wrong result at %zu\n", i);
      bad = 1;
    }
  sicm_arena_destroy(hot);
  sicm_fini();
  printf("hot_arena: %s\n", bad ? "FAILED" : "ok");
  return bad;
}
