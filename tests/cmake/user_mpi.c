/* SPDX-License-Identifier: BSD-3-Clause */
/* user_mpi.c: an MPI program of the user projects, linked with
 * libsicm-mpi: MPI_Alloc_mem with a memory hint lands in a libsicm arena. */
#include <mpi.h>
#include <sicm.h>
#include <stdio.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "sicm_memory", "dram");
  void *p = NULL;
  int rc = MPI_Alloc_mem(4096, info, &p);
  int ok = rc == MPI_SUCCESS && sicm_arena_lookup(p) != NULL;
  if (rc == MPI_SUCCESS)
    MPI_Free_mem(p);
  MPI_Info_free(&info);
  MPI_Finalize();
  printf("mpi user: %s\n", ok ? "ok" : "wrong");
  return ok ? 0 : 1;
}
