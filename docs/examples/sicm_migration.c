/* SPDX-License-Identifier: BSD-3-Clause */
/* Move a whole arena to the highest-bandwidth device before a kernel and
 * back afterwards; its pointers stay valid. */
#include <stdio.h>
#include <sicm.h>

int main(void) {
  if (sicm_init() != 0)
    return 1;
  sicm_device *home = sicm_device_of_node(sicm_node_self(), 0);
  sicm_device *fast = sicm_device_best(SICM_RANK_BANDWIDTH, SICM_INITIATOR_SELF);
  sicm_arena hot = home ? sicm_arena_create(0, home) : NULL;
  long *data = hot ? sicm_arena_alloc(hot, 1 << 20) : NULL;
  if (data == NULL || fast == NULL)
    return 1;
  data[0] = 42;
  sicm_migration_report report;
  if (sicm_arena_set_device(hot, fast) != 0 || sicm_arena_last_migration(hot, &report) != 0) {
    fprintf(stderr, "move: %s\n", sicm_error_detail());
    return 1;
  }
  printf("moved %zu bytes to node %d; data[0] = %ld\n", report.bytes_moved, fast->node, data[0]);
  if (sicm_arena_set_device(hot, home) != 0) /* after the kernel */
    return 1;
  sicm_arena_destroy(hot);
  return sicm_fini() == 0 ? 0 : 1;
}
