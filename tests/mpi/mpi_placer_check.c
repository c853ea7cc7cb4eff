/* SPDX-License-Identifier: BSD-3-Clause */
/* mpi_placer_check.c: windows of an unmodified MPI code under the placer.
 * Run with SICM_MPI_INFO_WIN_ALLOCATE giving each MPI_Win_allocate an arena
 * of its own on DRAM (sicm_arena=@call) and SICM_AUTOPLACE whose budget on
 * the fast tier holds one window, not two (tests/mpi/placer.sh).  Each
 * rank makes two windows, "hot" and "cold", writes both once and never
 * touches them again itself: its partner (the rank size/2 away: in the
 * cluster, on the other node) puts into its hot window every epoch, and
 * nobody into its cold one.  So the only accesses that can make the hot
 * window hot are the other rank's one-sided ones, as the target's MPI
 * library carries them out.  Every rank checks with move_pages, once a
 * second, that its hot window is all on the fast node and its cold one has
 * no page there, until every rank holds (or SECONDS pass), then that both
 * windows hold exactly what was put and written.
 *   mpi_placer_check SECONDS
 * Prints "ok: ..." or "FAILED: ..." per check and rank, and each rank's
 * seconds to react; exit 0 if all passed. */
#include <mpi.h>
#include <numaif.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_check.h"
#include "sicm.h"
#include "sicm_autoplace.h"

#define WINDOW_BYTES ((size_t)16 << 20)

static int rank, size, failures;

static void check(int ok, const char *what) {
  if (!ok)
    failures++;
  printf("rank %d %s: %s\n", rank, ok ? "ok" : "FAILED", what);
  fflush(stdout);
}

static int fast_node(void) {
  const sicm_device_list *all = sicm_devices();
  for (unsigned i = 0; all != NULL && i < all->count; i++)
    if (all->devices[i].kind == SICM_KIND_HBM && !all->devices[i].huge)
      return all->devices[i].node;
  return -1;
}

static unsigned char pattern(int from, int epoch, size_t i) {
  return (unsigned char)(from * 37 + epoch * 11 + i % 251);
}

static void fill(unsigned char *p, int from, int epoch) {
  for (size_t i = 0; i < WINDOW_BYTES; i++)
    p[i] = pattern(from, epoch, i);
}

static int holds(const unsigned char *p, int from, int epoch) {
  for (size_t i = 0; i < WINDOW_BYTES; i++)
    if (p[i] != pattern(from, epoch, i))
      return 0;
  return 1;
}

/* Pages of [p, p + len) on `node`. */
static size_t pages_on(const void *p, size_t len, int node) {
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t first = (uintptr_t)p & ~(page - 1), end = (uintptr_t)p + len;
  return (end - first + page - 1) / page - pages_off(p, len, node);
}

static unsigned char *window(MPI_Win *win, const char *what) {
  unsigned char *base = NULL;
  int rc = MPI_Win_allocate((MPI_Aint)WINDOW_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, win);
  char text[160], name[64] = "(none)";
  sicm_arena arena = rc == MPI_SUCCESS ? sicm_arena_lookup(base) : NULL;
  if (arena != NULL)
    sicm_arena_get_name(arena, name, sizeof name);
  snprintf(text, sizeof text, "the %s window is an arena of its own, named %s", what, name);
  check(strncmp(name, "mpi:win#", 8) == 0, text);
  return rc == MPI_SUCCESS ? base : NULL;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double limit = argc > 1 ? atof(argv[1]) : 60;
  if (sicm_init() != 0) {
    check(0, "sicm_init");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int partner = (rank + size / 2) % size, fast = fast_node();
  MPI_Win hot_win, cold_win;
  /* The cold window first: a placer that took arenas in the order they
   * were made would pick it, and fail. */
  unsigned char *cold = window(&cold_win, "cold"), *hot = window(&hot_win, "hot");
  unsigned char *source = malloc(WINDOW_BYTES);
  if (fast < 0 || hot == NULL || cold == NULL || source == NULL || size % 2 != 0) {
    char text[160];
    snprintf(text, sizeof text, "an HBM node (%d), both windows (%p, %p), an even number of ranks (%d)",
             fast, (void *)hot, (void *)cold, size);
    check(0, text);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  fill(hot, rank, 0);
  fill(cold, rank, 0);
  check(pages_on(hot, WINDOW_BYTES, fast) == 0 && pages_on(cold, WINDOW_BYTES, fast) == 0,
        "both windows start off the fast node");
  double start = MPI_Wtime(), next_look = start + 1, reacted = -1;
  int epoch = 0, all_placed = 0;
  MPI_Win_fence(0, hot_win);
  while (!all_placed) {
    epoch++;
    fill(source, rank, epoch);
    MPI_Put(source, (int)WINDOW_BYTES, MPI_BYTE, partner, 0, (int)WINDOW_BYTES, MPI_BYTE, hot_win);
    MPI_Win_fence(0, hot_win);
    double now = MPI_Wtime();
    int look = now >= next_look, any_look;
    MPI_Allreduce(&look, &any_look, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!any_look)
      continue;
    next_look = now + 1;
    int placed = pages_off(hot, WINDOW_BYTES, fast) == 0 && pages_on(cold, WINDOW_BYTES, fast) == 0;
    if (placed && reacted < 0)
      reacted = now - start;
    int over = now - start > limit, stop;
    MPI_Allreduce(&placed, &all_placed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&over, &stop, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (stop)
      break;
  }
  char text[200];
  snprintf(text, sizeof text,
           "hot window all on node %d (%zu pages off), cold window none there (%zu on), "
           "after %d epochs, %.1f s",
           fast, pages_off(hot, WINDOW_BYTES, fast), pages_on(cold, WINDOW_BYTES, fast), epoch,
           reacted);
  check(reacted >= 0 && pages_off(hot, WINDOW_BYTES, fast) == 0 &&
            pages_on(cold, WINDOW_BYTES, fast) == 0, text);
  check(holds(hot, partner, epoch), "the hot window holds the partner's last put, every byte");
  check(holds(cold, rank, 0), "the cold window holds what this rank wrote, every byte");
  MPI_Win_free(&cold_win);
  MPI_Win_free(&hot_win);
  free(source);
  int total;
  MPI_Reduce(&failures, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("mpi_placer_check: %d failed\n", total);
  sicm_fini();
  MPI_Finalize();
  return failures ? 1 : 0;
}
