/* SPDX-License-Identifier: BSD-3-Clause */
/* sicm_mpi.h: what libsicm-mpi's two files share: the hints an info
 * argument gives (sicm_mpi.c reads them and owns the arenas they name),
 * used by the window calls (sicm_mpi_win.c). */
#ifndef SICM_MPI_H
#define SICM_MPI_H

#include <mpi.h>

#include "sicm.h"

#define SICM_MPI_HIDDEN __attribute__((visibility("hidden")))
#define NAME_MAX_LEN 64

typedef enum fallback { FALLBACK_NULL, FALLBACK_DEFAULT, FALLBACK_ABORT } fallback;

/* What the info argument asks for. */
typedef struct hints {
  int placed;                       /* a sicm_memory key was given */
  char memory[32];
  fallback fallback;
  char arena[NAME_MAX_LEN];         /* "" : the memory's own arena */
} hints;

/* MPI_SUCCESS or the code to raise for a bad hint. */
SICM_MPI_HIDDEN int hints_read(MPI_Info info, hints *h);
/* The devices of the hints' memory into devs (*ndevs, 0: none here);
 * MPI_SUCCESS or the code to raise. */
SICM_MPI_HIDDEN int hints_devices(const hints *h, sicm_device **devs, int *ndevs);
/* The arena for the hints, with one block reserved for the caller; NULL
 * with errno (EAGAIN: libsicm's arena limit, ENODEV: no device). */
SICM_MPI_HIDDEN sicm_arena arena_for(const hints *h, sicm_device **devs, int ndevs);
/* Ends arena_for's reservation: kept, or released (may destroy the arena). */
SICM_MPI_HIDDEN void arena_done(sicm_arena a, int kept);
/* Raises code on MPI_COMM_WORLD and returns it. */
SICM_MPI_HIDDEN int raise_error(int code);
/* code, its text first written to stderr where the MPI cannot keep it. */
SICM_MPI_HIDDEN int error_with_text(int code, const char *text);
SICM_MPI_HIDDEN extern int code_arena_limit;
SICM_MPI_HIDDEN extern const char text_arena_limit[];

#endif
