/* SPDX-License-Identifier: BSD-3-Clause */
/* One arena per phase: its blocks on the fastest device, all freed at
 * once by destroying the arena. */
#include <stdio.h>
#include <string.h>
#include <sicm.h>

int main(void) {
  if (sicm_init() != 0)
    return 1;
  sicm_device *fast = sicm_device_best(SICM_RANK_BANDWIDTH, SICM_INITIATOR_SELF);
  sicm_arena phase = fast ? sicm_arena_create(0, fast) : NULL;
  if (phase == NULL) {
    fprintf(stderr, "arena: %s\n", sicm_error_detail());
    return 1;
  }
  double *field = sicm_arena_alloc(phase, 1024 * sizeof *field);
  char *name = sicm_arena_aligned_alloc(phase, 64, 32);
  if (field == NULL || name == NULL)
    return 1;
  strcpy(name, "pressure");
  for (int i = 0; i < 1024; i++)
    field[i] = i;
  printf("%s: %zu bytes held on node %d, lookup %s\n", name, sicm_arena_size(phase), fast->node,
         sicm_arena_lookup(field) == phase ? "finds the arena" : "fails");
  sicm_free(name);
  sicm_arena_destroy(phase); /* frees field too */
  return sicm_fini() == 0 ? 0 : 1;
}
