/* SPDX-License-Identifier: BSD-3-Clause */
/* sites_check.c: a program that never heard of libsicm — three large
 * buffers made by three functions of their own, one touched over and
 * over, two left alone — run by tests/preload/guest.sh under
 * libsicm-preload.so with sites= and SICM_AUTOPLACE.  After `seconds`, it
 * prints the node of each buffer's pages (move_pages) as
 * "NAME node:pages ..." and exits 0; the script judges. */
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { BYTES = 16 << 20, PAGE = 4096 };

__attribute__((noinline)) static char *make_field(void) { return malloc(BYTES); }
__attribute__((noinline)) static char *make_history(void) { return malloc(BYTES); }
__attribute__((noinline)) static char *make_scratch(void) { return malloc(BYTES); }

static void census(const char *name, char *p) {
  static void *pages[BYTES / PAGE + 1];
  static int status[BYTES / PAGE + 1];
  unsigned long n = 0;
  for (unsigned long a = (unsigned long)p & ~(unsigned long)(PAGE - 1); a < (unsigned long)p + BYTES;
       a += PAGE)
    pages[n++] = (void *)a;
  if (move_pages(0, n, pages, NULL, status, 0) != 0) {
    perror("move_pages");
    exit(2);
  }
  unsigned long count[8] = {0};
  for (unsigned long i = 0; i < n; i++)
    if (status[i] >= 0 && status[i] < 8)
      count[status[i]]++;
  printf("%s", name);
  for (int node = 0; node < 8; node++)
    if (count[node])
      printf(" %d:%lu", node, count[node]);
  printf("\n");
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 6;
  char *field = make_field(), *history = make_history(), *scratch = make_scratch();
  if (!field || !history || !scratch)
    return 2;
  memset(field, 1, BYTES);
  memset(history, 2, BYTES);
  memset(scratch, 3, BYTES);
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  do {
    for (size_t i = 0; i < BYTES; i += PAGE)
      field[i]++;
    usleep(20000);
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while (now.tv_sec - start.tv_sec + (now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
  census("field", field);
  census("history", history);
  census("scratch", scratch);
  free(field);
  free(history);
  free(scratch);
  return 0;
}
