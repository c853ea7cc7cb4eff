/* SPDX-License-Identifier: BSD-3-Clause */
/* After most blocks of a size are freed, move the survivors out of their
 * sparse slabs so that the slabs empty; let background threads give the
 * free pages back meanwhile. */
#include <stdio.h>
#include <sicm.h>

enum { BLOCKS = 10000, KEPT_EVERY = 16 };

int main(void) {
  static void *blocks[BLOCKS];
  if (sicm_init() != 0 || sicm_background_threads(1) != 0)
    return 1;
  sicm_arena a = sicm_arena_create(0, sicm_device_of_node(sicm_node_self(), 0));
  if (a == NULL)
    return 1;
  for (int i = 0; i < BLOCKS; i++)
    if ((blocks[i] = sicm_arena_alloc(a, 64)) == NULL)
      return 1;
  for (int i = 0; i < BLOCKS; i++)
    if (i % KEPT_EVERY != 0)
      sicm_free(blocks[i]);
  int moved = 0;
  for (int i = 0; i < BLOCKS; i += KEPT_EVERY) {
    void *p = sicm_defrag_reallocate(blocks[i]);
    if (p != NULL) {
      blocks[i] = p; /* the old pointer is freed */
      moved++;
    }
  }
  printf("moved %d of %d surviving blocks\n", moved, BLOCKS / KEPT_EVERY);
  for (int i = 0; i < BLOCKS; i += KEPT_EVERY)
    sicm_free(blocks[i]);
  sicm_arena_destroy(a);
  sicm_background_threads(0);
  return sicm_fini() == 0 ? 0 : 1;
}
