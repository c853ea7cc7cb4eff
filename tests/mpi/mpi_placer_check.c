/* SPDX-License-Identifier: BSD-3-Clause */
/* mpi_placer_check.c: windows of an unmodified MPI code under the placer.
 * Run with SICM_MPI_INFO_WIN_ALLOCATE giving each MPI_Win_allocate an arena
 * of its own on DRAM (sicm_arena=@call) and SICM_AUTOPLACE whose budget on
 * the fast tier holds one window, not two (tests/mpi/placer.sh).  Each
 * rank makes two windows.  It writes the first, its local one, over and
 * over until the placer has it on the fast node (every rank looks with
 * move_pages once a second).  Then it never touches either again itself:
 * its partner (the rank size/2 away: in the cluster, on the other node)
 * puts into its second window every epoch.  So the only accesses that can
 * make that window displace the local one are the other rank's one-sided
 * ones, as the target's MPI library carries them out.  Each phase ends
 * when every rank holds (or SECONDS pass); then both windows must hold
 * exactly what was put and written.
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

/* What one step of until_placed() does, and how many it did. */
typedef struct put_state {
  unsigned char *window, *source;
  int partner, epochs;
  MPI_Win win;
} put_state;

/* The local phase's step: the rank writes its window again. */
static void rewrite(put_state *st) {
  st->epochs++;
  fill(st->window, rank, 0);
}

/* The put phase's step: one epoch of a whole window put to the partner. */
static void put_epoch(put_state *st) {
  st->epochs++;
  fill(st->source, rank, st->epochs);
  MPI_Put(st->source, (int)WINDOW_BYTES, MPI_BYTE, st->partner, 0, (int)WINDOW_BYTES, MPI_BYTE,
          st->win);
  MPI_Win_fence(0, st->win);
}

/* Runs step until every rank has `on` all on the fast node and `off` with
 * no page there, looking once a second, or `limit` seconds pass (all ranks
 * agree on both, so collective steps stay matched).  Returns the seconds
 * this rank took, or -1. */
static double until_placed(unsigned char *on, unsigned char *off, int fast, double limit,
                           void (*step)(put_state *), put_state *st) {
  double start = MPI_Wtime(), next_look = start + 1, reacted = -1;
  for (int all_placed = 0; !all_placed;) {
    step(st);
    double now = MPI_Wtime();
    int look = now >= next_look, any_look;
    MPI_Allreduce(&look, &any_look, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!any_look)
      continue;
    next_look = now + 1;
    int placed = pages_off(on, WINDOW_BYTES, fast) == 0 && pages_on(off, WINDOW_BYTES, fast) == 0;
    if (placed && reacted < 0)
      reacted = now - start;
    int over = now - start > limit, stop;
    MPI_Allreduce(&placed, &all_placed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&over, &stop, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (stop)
      break;
  }
  return reacted;
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
  MPI_Win put_win, local_win;
  /* The window this rank writes first, the one its partner puts into
   * second: a placer that kept arenas in the order they were made would
   * keep the first. */
  unsigned char *local = window(&local_win, "local"), *put = window(&put_win, "put-into");
  unsigned char *source = malloc(WINDOW_BYTES);
  if (fast < 0 || put == NULL || local == NULL || source == NULL || size % 2 != 0) {
    char text[160];
    snprintf(text, sizeof text, "an HBM node (%d), both windows (%p, %p), an even number of ranks (%d)",
             fast, (void *)put, (void *)local, size);
    check(0, text);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  fill(put, rank, 0);
  MPI_Win_fence(0, put_win);
  /* First the rank works on its local window alone, until the placer has
   * it on the fast node: the put-into window must then displace it. */
  put_state writes = {.window = local, .epochs = 0};
  double first = until_placed(local, put, fast, limit, rewrite, &writes);
  char text[200];
  snprintf(text, sizeof text, "first the window this rank writes: all on node %d, the other none "
           "there, after %.1f s", fast, first);
  check(first >= 0, text);
  put_state puts = {.window = NULL, .source = source, .partner = partner, .win = put_win, .epochs = 0};
  double reacted = until_placed(put, local, fast, limit, put_epoch, &puts);
  int epoch = puts.epochs;
  snprintf(text, sizeof text,
           "then the window put into all on node %d (%zu pages off), the local one none there (%zu on), "
           "after %d epochs, %.1f s",
           fast, pages_off(put, WINDOW_BYTES, fast), pages_on(local, WINDOW_BYTES, fast), epoch,
           reacted);
  check(reacted >= 0 && pages_off(put, WINDOW_BYTES, fast) == 0 &&
            pages_on(local, WINDOW_BYTES, fast) == 0, text);
  check(holds(put, partner, epoch), "the put-into window holds the partner's last put, every byte");
  check(holds(local, rank, 0), "the local window holds what this rank wrote, every byte");
  MPI_Win_free(&local_win);
  MPI_Win_free(&put_win);
  free(source);
  int total;
  MPI_Reduce(&failures, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("mpi_placer_check: %d failed\n", total);
  sicm_fini();
  MPI_Finalize();
  return failures ? 1 : 0;
}
