/* SPDX-License-Identifier: BSD-3-Clause */
/* migrate.h: whole-arena migration — what migrate.c (the public calls,
 * the target's room check, the binding's sequence) and migrate_move.c (the
 * movers of resident pages) share, and the options migration reads from
 * the environment.  Migration sits above the arenas: it reads an arena's
 * windows (arena.h) and never the other way round. */
#ifndef SC_MIGRATE_H
#define SC_MIGRATE_H

#include "arena.h"

/* How the pages of an arena in huge pages are moved (SICM_MIGRATE_HUGE);
 * bench_migrate compares them, BENCHMARKS.md says why the default won. */
typedef enum sc_move_method {
  SC_MOVE_HEADS,                /* move_pages, one entry per 2 MiB block first */
  SC_MOVE_SUBPAGES,             /* move_pages, an entry per 4 KiB page */
  SC_MOVE_MBIND,                /* mbind(MPOL_MF_MOVE) per range, one thread */
} sc_move_method;

/* Migration's options from the environment. */
typedef struct sc_migrate_options {
  unsigned threads;             /* SICM_MIGRATE_THREADS; 0: the CPUs we may run on */
  sc_move_method huge;          /* SICM_MIGRATE_HUGE */
} sc_migrate_options;

/* What the caller of a migration shares with it while it runs (atomic). */
typedef struct sc_move_watch {
  int cancel;                   /* set to stop it: it rolls back */
  size_t moved;                 /* bytes moved so far */
  size_t to_move;               /* resident bytes of the arena when it started */
} sc_move_watch;

/* ---- migrate.c ---- */
/* Moves the arena as sicm_arena_set_devices() does, for the placer: the
 * move is not the program's, so the arena is not pinned.  Fills the
 * report either way; 0, or -1 with errno (ESTALE when the arena was
 * destroyed meanwhile, EPERM when it is no longer in AUTO mode: checked
 * under the arena's migration lock, so a program's move always wins). */
int sc_arena_move(sicm_arena sa, sicm_device *const *devs, unsigned ndevs, unsigned flags,
                  sicm_migration_report *report);

/* Splits the arena for the placer: up to `part` bytes of its first
 * window from its base, within what is committed there, in whole 2 MiB,
 * preferred on devs, and their resident pages moved there as far as the
 * devices have room; a->placer_part says how many.  The arena's binding
 * does not change: the rest of it stays where it is bound, and a later
 * move of the whole arena binds every window again, the part included.  A
 * part already there stays; a larger one moves only what it adds.
 * Private arenas of base pages only.  Fills the report; 0, or -1 with
 * errno (EINVAL: not such an arena, or less than 2 MiB committed; ESTALE,
 * EPERM: as sc_arena_move), the part, old and new, bound back as the
 * arena is once anything was bound. */
int sc_arena_move_part(sicm_arena sa, sicm_device *const *devs, unsigned ndevs, size_t part,
                       sicm_migration_report *report);

/* ---- migrate_move.c ---- */
/* Reads SICM_MIGRATE_THREADS and SICM_MIGRATE_HUGE strictly (base.h);
 * called by sicm_init. */
void sc_migrate_read_options(void);
/* The options the last sicm_init read. */
sc_migrate_options sc_migrate_options_get(void);
/* Moves the resident pages of the windows' used parts to `to` (their
 * policy is the caller's); strict: a page left elsewhere is a failure;
 * huge: the arena is in huge pages; watch (NULL: none) cancels it and
 * counts what moved.  Adds to the report; 0, or -1 with errno and the
 * cause. */
int sc_pages_move(const sc_window *w, unsigned nwindows, const sc_binding *to, int strict,
                  int huge, int move_flag, sc_move_watch *watch, sicm_migration_report *report);
/* Free bytes of the binding's nodes, as the kernel reports them now. */
long long sc_binding_free(const sc_binding *b);

#endif /* SC_MIGRATE_H */
