/* SPDX-License-Identifier: BSD-3-Clause */
/* Allocate from a buffer the program mapped itself: every block lies in
 * it, and it is the program's again once the arena is gone. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sicm.h>

int main(void) {
  size_t len = 16 << 20;
  char *buffer = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (buffer == MAP_FAILED || sicm_init() != 0)
    return 1;
  sicm_arena pool = sicm_arena_create_fixed(buffer, len, NULL);
  char *block = pool ? sicm_arena_alloc(pool, 1 << 20) : NULL;
  if (block == NULL) {
    fprintf(stderr, "fixed arena: %s\n", sicm_error_detail());
    return 1;
  }
  strcpy(block, "inside the buffer");
  printf("%s: offset %td of %zu bytes\n", block, block - buffer, len);
  sicm_free(block);
  sicm_arena_destroy(pool);
  munmap(buffer, len);
  return sicm_fini() == 0 ? 0 : 1;
}
