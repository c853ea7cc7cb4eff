/* SPDX-License-Identifier: BSD-3-Clause */
/* hbw_place.c: a program written to memkind's hbwmalloc.h and nothing
 * else: it asks for high-bandwidth memory, checks where it landed with
 * move_pages and hbw_verify_memory_region, and tries the bad inputs.
 * With --moving it moves itself from CPU to CPU (0, 1, then 0 again) and
 * reports where each next allocation landed; with --interleave it sets
 * HBW_POLICY_INTERLEAVE and reports the kernel policy of its block; with
 * --huge it asks for 2 MiB and 1GB pages (hbw_posix_memalign_psize: memkind
 * gives 2 MiB pages for both) and reports the node and kernel page size of
 * what it got. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <hbwmalloc.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { SIZE = 8 << 20 };

/* The node of every page of [p, p + size), or -1 when they differ or one
 * cannot be read. */
static int node_of(char *p, size_t size) {
  long page = sysconf(_SC_PAGESIZE);
  int first = -1;
  for (size_t off = 0; off < size; off += (size_t)page) {
    void *addr = p + off;
    int status = -1;
    if (move_pages(0, 1, &addr, NULL, &status, 0) != 0 || status < 0 ||
        (off > 0 && status != first))
      return -1;
    first = status;
  }
  return first;
}

static int moving(void) {
  static const int cpus[] = {0, 1, 0};
  for (unsigned i = 0; i < sizeof cpus / sizeof cpus[0]; i++) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpus[i], &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
      printf("cannot run on CPU %d\n", cpus[i]);
      return 1;
    }
    char *p = hbw_malloc(1 << 20);
    if (p == NULL) {
      printf("on CPU %d: null\n", cpus[i]);
      continue;
    }
    memset(p, 1, 1 << 20);
    printf("on CPU %d: node %d\n", cpus[i], node_of(p, 1 << 20));
    hbw_free(p);
  }
  return 0;
}

static int interleave(void) {
  printf("hbw_set_policy(INTERLEAVE): %d\n", hbw_set_policy(HBW_POLICY_INTERLEAVE));
  void *huge = NULL;
  printf("hbw_posix_memalign_psize(2MB): %d\n",
         hbw_posix_memalign_psize(&huge, 4096, 4 << 20, HBW_PAGESIZE_2MB));
  char *p = hbw_malloc(SIZE);
  if (p == NULL) {
    printf("hbw_malloc: null\n");
    return 0;
  }
  memset(p, 7, SIZE);
  int mode = -1;
  if (get_mempolicy(&mode, NULL, 0, p, MPOL_F_ADDR) != 0)
    mode = -1;
  printf("hbw_malloc policy: %s\n", mode == MPOL_INTERLEAVE ? "interleave" : mode == MPOL_BIND ? "bind" : "other");
  printf("hbw_malloc: node %d\n", node_of(p, SIZE));
  hbw_free(p);
  return 0;
}

/* The kernel page size, in KiB, of the mapping holding p (smaps); 0. */
static unsigned long page_kb(const void *p) {
  FILE *f = fopen("/proc/self/smaps", "r");
  char line[512];
  int inside = 0;
  unsigned long lo, hi, kb = 0;
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
      inside = (unsigned long)p >= lo && (unsigned long)p < hi;
    else if (inside && sscanf(line, "KernelPageSize: %lu kB", &kb) == 1)
      break;
  }
  if (f != NULL)
    fclose(f);
  return kb;
}

static int huge(hbw_policy_t policy) {
  printf("hbw_set_policy: %d\n", hbw_set_policy(policy));
  void *p = NULL;
  int rc = hbw_posix_memalign_psize(&p, 4096, SIZE, HBW_PAGESIZE_2MB);
  printf("hbw_posix_memalign_psize(2MB): %d\n", rc);
  if (rc == 0) {
    memset(p, 3, SIZE);
    printf("2MB: node %d, %lu kB pages\n", node_of(p, SIZE), page_kb(p));
    hbw_free(p);
  }
  p = NULL;
  printf("hbw_posix_memalign_psize(1GB): %d\n",
         hbw_posix_memalign_psize(&p, 4096, SIZE, HBW_PAGESIZE_1GB));
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--huge") == 0)
    return huge(HBW_POLICY_BIND);
  if (argc == 2 && strcmp(argv[1], "--huge-preferred") == 0)
    return huge(HBW_POLICY_PREFERRED);
  if (argc == 2 && strcmp(argv[1], "--moving") == 0)
    return moving();
  if (argc == 2 && strcmp(argv[1], "--interleave") == 0)
    return interleave();
  printf("hbw_check_available: %d\n", hbw_check_available());
  printf("hbw_set_policy(42): %d\n", hbw_set_policy((hbw_policy_t)42));
  char *p = hbw_malloc(SIZE);
  if (p == NULL) {
    printf("hbw_malloc: null\n");
    return 0;
  }
  memset(p, 7, SIZE);
  int node = node_of(p, SIZE);
  if (node == -1)
    printf("hbw_malloc: mixed or unknown nodes\n");
  else
    printf("hbw_malloc: node %d\n", node);
  printf("hbw_verify_memory_region: %d\n", hbw_verify_memory_region(p, SIZE, HBW_TOUCH_PAGES));
  printf("hbw_malloc_usable_size >= size: %d\n", hbw_malloc_usable_size(p) >= SIZE);
  void *foreign = malloc(64);
  hbw_free(foreign); /* not hbw memory: must be left alone */
  free(foreign);
  hbw_free(p);
  printf("done\n");
  return 0;
}
