/* SPDX-License-Identifier: BSD-3-Clause */
/* sicm_mpi.h: what libsicm-mpi's files share: the hints an info argument
 * gives and the blocks of the arenas they name (sicm_mpi.c), the record
 * of those blocks (sicm_mpi_blocks.c), used by the window calls
 * (sicm_mpi_win.c), and the report of where each block was when freed
 * (sicm_mpi_report.c). */
#ifndef SICM_MPI_H
#define SICM_MPI_H

#include <mpi.h>

#include "sicm.h"

#define SICM_MPI_HIDDEN __attribute__((visibility("hidden")))
#define NAME_MAX_LEN 64

typedef enum fallback { FALLBACK_NULL, FALLBACK_DEFAULT, FALLBACK_ABORT } fallback;

/* The calls that read hints, each with a default of its own
 * (sicm_mpi_env.c). */
typedef enum call_kind { CALL_ALLOC_MEM, CALL_WIN_ALLOCATE, CALL_WIN_ALLOCATE_SHARED } call_kind;

/* What the info argument, or the environment's default, asks for. */
typedef struct hints {
  int placed;                       /* a key naming memory or an arena was given */
  char memory[32];
  fallback fallback;
  char arena[NAME_MAX_LEN];         /* "" : the memory's own arena */
  int per_call;                     /* sicm_arena=@call: an arena of this call's own */
  int window_given;                 /* a sicm_window key was given */
  int window_mpi;                   /* sicm_window=mpi: the MPI library's window memory */
} hints;

/* The hints of `info` for a call of `kind` asking for `size` bytes: the
 * info's own when it names memory or an arena, else the environment's
 * default for the call (sicm_mpi_env.c).  MPI_SUCCESS or the code to raise
 * for a bad hint. */
SICM_MPI_HIDDEN int hints_read(MPI_Info info, call_kind kind, MPI_Aint size, hints *h);
/* Where hints come from: the value of `key` in src copied to value (len
 * bytes), 1 when the key is there. */
typedef int (*hint_get)(const void *src, const char *key, char *value, int len);
/* Reads the hints of src; MPI_SUCCESS or the code to raise. */
SICM_MPI_HIDDEN int hints_parse(hint_get get, const void *src, hints *h);

/* ---- sicm_mpi_env.c: the environment's defaults ---- */
/* The default hints of calls of `kind` ("key=value;..."), and in *var the
 * variable that gave them; NULL when none applies. */
SICM_MPI_HIDDEN const char *env_default(call_kind kind, const char **var);
/* hint_get over such a string. */
SICM_MPI_HIDDEN int env_get(const void *defaults, const char *key, char *value, int len);
/* 1 when every key of the string is a hint key libsicm-mpi reads. */
SICM_MPI_HIDDEN int env_keys_known(const char *defaults);
/* The name of a per-call arena: the call's kind, its number among this
 * process's calls of that kind, and its size ("win#3 64MiB"). */
SICM_MPI_HIDDEN void per_call_name(call_kind kind, MPI_Aint size, char *out, size_t room);
/* The devices of the hints' memory into devs (*ndevs, 0: none here);
 * MPI_SUCCESS or the code to raise. */
SICM_MPI_HIDDEN int hints_devices(const hints *h, sicm_device **devs, int *ndevs);
/* A block of the hinted arena for `caller` (named if it aborts); NULL with
 * *code to raise, or MPI_SUCCESS where sicm_fallback=default hands the
 * request to the MPI library. */
SICM_MPI_HIDDEN void *hinted_block(const hints *h, MPI_Aint size, const char *caller, int *code);
/* Raises code on MPI_COMM_WORLD, or on comm, and returns it. */
SICM_MPI_HIDDEN int raise_error(int code);
SICM_MPI_HIDDEN int raise_error_on(MPI_Comm comm, int code);

/* ---- sicm_mpi_blocks.c: the blocks handed out from hinted arenas ---- */
enum { BLOCK_UNKNOWN, BLOCK_LIVE, BLOCK_FREED };
/* ptr was handed out; 0, or -1 when the record has no memory for it. */
SICM_MPI_HIDDEN int blocks_born(const void *ptr);
/* ptr is being freed: what it was (BLOCK_FREED only where the record
 * keeps freed blocks: the checking mode). */
SICM_MPI_HIDDEN int blocks_dies(const void *ptr);
/* The MPI library handed out ptr: it is no freed block of ours. */
SICM_MPI_HIDDEN void blocks_reused(const void *ptr);
/* 1 in the checking mode (SICM_CHECK). */
SICM_MPI_HIDDEN int check_mode(void);
/* In the checking mode, one line naming MPI_Free_mem(ptr) and why, then
 * abort(); otherwise nothing. */
SICM_MPI_HIDDEN void check_stop(const void *ptr, const char *why);

/* ---- sicm_mpi_report.c ---- */
/* With SICM_MPI_REPORT set, one line for the block of `bytes` about to be
 * freed: `name` (NULL: the arena's) and the resident bytes per node, those
 * of the arena, or with `base` those of [base, base + bytes) (a window's
 * part of the MPI library's memory, a fixed arena or bound in place)
 * (sicm(7), MPI DEFAULTS). */
SICM_MPI_HIDDEN void report_block_end(sicm_arena arena, const char *name, const void *base,
                                      size_t bytes);
/* Calls visit(ctx, node) for each page of [base, base + bytes) that this
 * process maps, with its node (move_pages(2) asking, in batches); 0, 1
 * when a visit returned non-zero (the walk stops), or -1 with errno. */
SICM_MPI_HIDDEN int range_nodes_each(const void *base, size_t bytes,
                                     int (*visit)(void *ctx, int node), void *ctx);

#endif
