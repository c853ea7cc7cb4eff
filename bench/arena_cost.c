/* SPDX-License-Identifier: BSD-3-Clause */
/* arena_cost.c: what an arena costs the process — address space, resident
 * memory and sicm_arena_size() per arena, from N arenas of one 64-byte
 * block each (sicm_arena(3)).  An absolute figure with no peer: the
 * process's own counters before and after.  `make bench-arena-cost`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sicm.h>

/* VmSize and VmRSS of this process, in KiB. */
static int vm_kib(long *size, long *rss) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  *size = *rss = -1;
  if (f == NULL)
    return -1;
  while (fgets(line, sizeof line, f)) {
    sscanf(line, "VmSize: %ld", size);
    sscanf(line, "VmRSS: %ld", rss);
  }
  fclose(f);
  return *size < 0 || *rss < 0 ? -1 : 0;
}

int main(int argc, char **argv) {
  unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 1000;
  sicm_arena *arenas = calloc(n, sizeof *arenas);
  if (n == 0 || arenas == NULL || sicm_init() != 0) {
    fprintf(stderr, "usage: arena_cost [N > 0]; sicm_init: %s\n", sicm_error_detail());
    return 1;
  }
  sicm_device *dev = sicm_device_of_node(sicm_node_self(), 0);
  long size0, rss0, size1, rss1;
  size_t held = 0;
  vm_kib(&size0, &rss0);
  for (unsigned i = 0; i < n; i++) {
    arenas[i] = sicm_arena_create(0, dev);
    void *p = arenas[i] ? sicm_arena_alloc(arenas[i], 64) : NULL;
    if (p == NULL) {
      fprintf(stderr, "arena %u: %s\n", i, sicm_error_detail());
      return 1;
    }
    memset(p, 1, 64);
    held += sicm_arena_size(arenas[i]);
  }
  if (vm_kib(&size1, &rss1) != 0)
    return 1;
  printf("| %u arenas of one 64-byte block | per arena |\n|---|---|\n", n);
  printf("| address space (VmSize) | %.1f MiB |\n", (double)(size1 - size0) / n / 1024);
  printf("| resident (VmRSS) | %.1f KiB |\n", (double)(rss1 - rss0) / n);
  printf("| sicm_arena_size() | %.1f KiB |\n", (double)held / n / 1024);
  for (unsigned i = 0; i < n; i++)
    sicm_arena_destroy(arenas[i]);
  free(arenas);
  return sicm_fini() == 0 ? 0 : 1;
}
