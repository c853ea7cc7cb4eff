/* SPDX-License-Identifier: BSD-3-Clause */
/* Rank the devices by bandwidth as seen from this thread's node, and say
 * where the figures came from. */
#include <stdio.h>
#include <stdlib.h>
#include <sicm.h>

int main(void) {
  if (sicm_init() != 0)
    return 1;
  unsigned n = sicm_devices()->count;
  sicm_rank_entry *order = calloc(n, sizeof *order);
  sicm_source source;
  int count = order ? sicm_rank(SICM_RANK_BANDWIDTH, SICM_INITIATOR_SELF, order, n, &source) : -1;
  if (count < 0)
    return 1;
  /* With no bandwidth known for some device the ranking is by distance. */
  printf("by bandwidth (%s):", sicm_source_name(source));
  for (int i = 0; i < count; i++)
    printf(" node %d", order[i].device->node);
  printf("\n");
  free(order);
  return sicm_fini() == 0 ? 0 : 1;
}
