/* SPDX-License-Identifier: BSD-3-Clause */
/* hbw_place.c: a program written to memkind's hbwmalloc.h and nothing
 * else: it asks for high-bandwidth memory, checks where it landed with
 * move_pages and hbw_verify_memory_region, and tries the bad inputs. */
#include <errno.h>
#include <hbwmalloc.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { SIZE = 8 << 20 };

int main(void) {
  printf("hbw_check_available: %d\n", hbw_check_available());
  printf("hbw_set_policy(42): %d\n", hbw_set_policy((hbw_policy_t)42));
  char *p = hbw_malloc(SIZE);
  if (p == NULL) {
    printf("hbw_malloc: null\n");
    return 0;
  }
  memset(p, 7, SIZE);
  long page = sysconf(_SC_PAGESIZE);
  int first = -2, mixed = 0;
  for (long off = 0; off < SIZE; off += page) {
    void *addr = p + off;
    int status = -1;
    move_pages(0, 1, &addr, NULL, &status, 0);
    if (first == -2)
      first = status;
    mixed |= status != first;
  }
  if (mixed)
    printf("hbw_malloc: mixed nodes\n");
  else
    printf("hbw_malloc: node %d\n", first);
  printf("hbw_verify_memory_region: %d\n", hbw_verify_memory_region(p, SIZE, HBW_TOUCH_PAGES));
  printf("hbw_malloc_usable_size >= size: %d\n", hbw_malloc_usable_size(p) >= SIZE);
  void *foreign = malloc(64);
  hbw_free(foreign); /* not hbw memory: must be left alone */
  free(foreign);
  hbw_free(p);
  printf("done\n");
  return 0;
}
