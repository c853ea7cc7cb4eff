/* SPDX-License-Identifier: BSD-3-Clause */
/* stats_check.c: processes for tests/stats.sh, each a fresh process whose
 * SICM_STATS report (written once, at exit or at the last sicm_fini) the
 * script reads.
 *
 *   stats_check arenas N [DIR]  N named arenas, each holding a block, left
 *                             live: the report at exit lists them; with
 *                             DIR, says it is ready (DIR/ready.PID) and
 *                             exits once DIR/go exists, so that several
 *                             processes exit together
 *   stats_check scale N M     prints the time sicm_stats_print takes with
 *                             N live arenas, then with M
 *   stats_check ebusy         a last sicm_fini refused with EBUSY stops
 *                             nothing: the placer runs on, the report waits
 *                             for the fini that succeeds (ebusy-no-placer:
 *                             the same where the placer cannot run)
 * Exit status 0, or the number of the step that failed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sicm.h"

static sicm_arena named_arena(sicm_device *dev, unsigned i) {
  sicm_arena a = sicm_arena_create(0, dev);
  char name[32];
  snprintf(name, sizeof name, "stats-%u", i);
  if (a == NULL || sicm_arena_set_name(a, name) != 0 || sicm_arena_alloc(a, 64) == NULL) {
    fprintf(stderr, "stats_check: arena %u: %s\n", i, sicm_error_detail());
    exit(3);
  }
  return a;
}

static void barrier(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/ready.%ld", dir, (long)getpid());
  FILE *ready = fopen(path, "w");
  if (ready == NULL)
    exit(5);
  fclose(ready);
  snprintf(path, sizeof path, "%s/go", dir);
  while (access(path, F_OK) != 0)
    usleep(1000);
}

static double print_seconds(void) {
  FILE *out = fopen("/dev/null", "w");
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rc = sicm_stats_print(out, SICM_STATS_JSON);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  fclose(out);
  if (rc != 0)
    exit(4);
  return (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
}

/* Whether the text report (sicm_stats_print) says `what`. */
static int report_says(const char *what) {
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  int says = out != NULL && sicm_stats_print(out, 0) == 0 && fclose(out) == 0 &&
             strstr(text, what) != NULL;
  free(text);
  return says;
}

static int ebusy(sicm_device *dev, int with_placer) {
  const char *path = getenv("SICM_STATS");
  struct stat st;
  sicm_arena early = sicm_arena_create(0, dev);
  if (early == NULL)
    return 10;
  errno = 0;
  if (sicm_fini() != -1 || errno != EBUSY)
    return 11;
  if (path == NULL || (stat(path, &st) == 0 && st.st_size != 0))
    return 12; /* the refused fini wrote the report */
  sicm_arena late = sicm_arena_create(0, dev);
  if (late == NULL || (with_placer && !report_says("placer: running")))
    return 13;
  if (sicm_arena_destroy(early) != 0 || sicm_arena_destroy(late) != 0)
    return 14;
  return sicm_fini() == 0 ? 0 : 15;
}

int main(int argc, char **argv) {
  if (sicm_init() != 0) {
    fprintf(stderr, "stats_check: sicm_init: %s\n", sicm_error_detail());
    return 2;
  }
  sicm_device *dev = sicm_device_of_node(sicm_node_self(), 0);
  if ((argc == 3 || argc == 4) && strcmp(argv[1], "arenas") == 0) {
    for (unsigned i = 0, n = (unsigned)atoi(argv[2]); i < n; i++)
      named_arena(dev, i);
    if (argc == 4)
      barrier(argv[3]);
    return 0; /* the arenas stay: the report at exit lists them */
  }
  if (argc == 4 && strcmp(argv[1], "scale") == 0) {
    unsigned n = (unsigned)atoi(argv[2]), m = (unsigned)atoi(argv[3]), i = 0;
    for (; i < n; i++)
      named_arena(dev, i);
    double first = print_seconds();
    for (; i < m; i++)
      named_arena(dev, i);
    printf("%u %.6f %u %.6f\n", n, first, m, print_seconds());
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "ebusy") == 0)
    return ebusy(dev, 1);
  if (argc == 2 && strcmp(argv[1], "ebusy-no-placer") == 0)
    return ebusy(dev, 0);
  fprintf(stderr, "usage: stats_check arenas N [DIR] | scale N M | ebusy | ebusy-no-placer\n");
  return 2;
}
