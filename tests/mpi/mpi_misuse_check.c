/* SPDX-License-Identifier: BSD-3-Clause */
/* mpi_misuse_check.c: libsicm-mpi against what an outsider tries (2
 * ranks).  The window calls are collective: under every mix of hints on
 * the two ranks (none, good, a bad value, a device not here) each call
 * returns on both, and both agree whether it worked — a hang is the
 * script's timeout.  A second MPI_Free_mem of a block is refused and
 * leaves its arena and its other blocks alone; an unhinted MPI_Win_allocate
 * that fails raises its error on its own communicator (one that returns
 * errors), never on MPI_COMM_WORLD (whose default aborts the job); the kind
 * "sicm:" without a class is MPI_ERR_INFO_VALUE.
 *   mpi_misuse_check                the checks; "ok:"/"FAILED:" lines
 *   mpi_misuse_check freed-twice    (1 rank, SICM_CHECK=1) frees a block
 *                                   twice after its arena went: the
 *                                   checking mode must stop it */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "mpi_check.h"
#include "sicm.h"

static int rank, failures;

static void check(int ok, const char *what) {
  if (!ok)
    failures++;
  printf("rank %d %s: %s\n", rank, ok ? "ok" : "FAILED", what);
}

/* The hints of a case: none, good, a bad value, a device not here. */
static const char *const hint_names[] = {"none", "good", "bad", "absent"};
static MPI_Info hint_info(int which) {
  static const char *const memory[] = {NULL, "dram", "bogus", "node:1000"};
  return which == 0 ? MPI_INFO_NULL : info_of("sicm_memory", memory[which], NULL, NULL);
}

/* Every mix of hints on a window call; `shared` picks the call. */
static void window_mixes(MPI_Comm comm, int shared) {
  for (int h0 = 0; h0 < 4; h0++)
    for (int h1 = 0; h1 < 4; h1++) {
      MPI_Info info = hint_info(rank == 0 ? h0 : h1);
      MPI_Win win = MPI_WIN_NULL;
      long *base = NULL;
      int rc = shared ? MPI_Win_allocate_shared(4096, 1, info, comm, &base, &win)
                      : MPI_Win_allocate(4096, 1, info, comm, &base, &win);
      if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
      int works = h0 < 2 && h1 < 2, ok = (rc == MPI_SUCCESS) == works, agree = 0;
      MPI_Allreduce(&ok, &agree, 1, MPI_INT, MPI_MIN, comm);
      char what[160];
      snprintf(what, sizeof what, "%s with hints %s/%s returns on both ranks, %s",
               shared ? "MPI_Win_allocate_shared" : "MPI_Win_allocate", hint_names[h0],
               hint_names[h1], works ? "working" : "failing on both");
      check(ok && agree, what);
      if (rc == MPI_SUCCESS) {
        base[0] = rank;
        MPI_Win_free(&win);
      }
    }
}

static void freed_twice(void) {
  MPI_Info info = info_of("sicm_arena", "twice", NULL, NULL);
  char *big = NULL, *small = NULL;
  int rc = MPI_Alloc_mem(1 << 20, info, &big);
  rc |= MPI_Alloc_mem(64, info, &small);
  MPI_Info_free(&info);
  check(rc == MPI_SUCCESS, "two blocks of one named arena");
  if (rc != MPI_SUCCESS)
    return;
  sicm_arena arena = sicm_arena_lookup(big);
  memset(big, 1, 1 << 20);
  check(MPI_Free_mem(small) == MPI_SUCCESS, "the small block freed");
  int cls = MPI_SUCCESS;
  MPI_Error_class(MPI_Free_mem(small), &cls);
  check(cls == MPI_ERR_ARG, "freeing it again is MPI_ERR_ARG");
  check(sicm_arena_lookup(big) == arena && arena != NULL, "the arena lives on");
  memset(big, 2, 1 << 20); /* its live block is still the program's */
  check(big[12345] == 2 && MPI_Free_mem(big) == MPI_SUCCESS, "the big block freed, once");
  check(sicm_arena_lookup(big) == NULL, "its last block took the arena with it");
}

static void unhinted_failure(MPI_Comm comm) {
  MPI_Win win = MPI_WIN_NULL;
  void *base = NULL;
  int rc = MPI_Win_allocate(-1, 1, MPI_INFO_NULL, comm, &base, &win);
  check(rc != MPI_SUCCESS && win == MPI_WIN_NULL,
        "an unhinted MPI_Win_allocate of size -1 returns its error on the communicator");
}

static void kind_without_class(void) {
  const char *kinds[] = {"sicm:", "sicm: ", "mpi,sicm:", "sicm"};
  for (unsigned i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    MPI_Info info = info_of("mpi_memory_alloc_kinds", kinds[i], NULL, NULL);
    void *p = NULL;
    int cls = MPI_SUCCESS, rc = MPI_Alloc_mem(100, info, &p);
    MPI_Info_free(&info);
    MPI_Error_class(rc, &cls);
    char what[96];
    snprintf(what, sizeof what, "mpi_memory_alloc_kinds=\"%s\" is MPI_ERR_INFO_VALUE", kinds[i]);
    check(cls == MPI_ERR_INFO_VALUE, what);
    if (rc == MPI_SUCCESS)
      MPI_Free_mem(p);
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc > 1 && strcmp(argv[1], "freed-twice") == 0) {
    MPI_Info info = info_of("sicm_arena", "gone", NULL, NULL);
    void *p = NULL;
    MPI_Alloc_mem(100, info, &p);
    MPI_Free_mem(p); /* its arena's last block: the arena goes */
    MPI_Free_mem(p); /* the checking mode stops here */
    MPI_Finalize();
    return 0;
  }
  /* MPI_COMM_WORLD keeps its default handler (abort): errors of the window
   * calls belong to their communicator, which returns them. */
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  unhinted_failure(comm);
  window_mixes(comm, 0);
  window_mixes(comm, 1);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* MPI_Alloc_mem's errors */
  freed_twice();
  kind_without_class();
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("mpi_misuse_check: %d failed\n", all);
  MPI_Comm_free(&comm);
  MPI_Finalize();
  return all ? 1 : 0;
}
