/* SPDX-License-Identifier: BSD-3-Clause */
/* sicm_migration.h: moving a whole arena to other devices, at once or in
 * the background.  Included by sicm.h; including it alone includes sicm.h
 * first.  Same conventions as sicm.h: -1 or NULL on failure, errno as
 * documented, words in sicm_error_detail(). */
#ifndef SICM_MIGRATION_H
#define SICM_MIGRATION_H

#include "sicm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Migration: moving a whole arena                                          */
/* ------------------------------------------------------------------------ */

/* What the last migration of an arena did. */
typedef struct sicm_migration_report {
  int error;              /* 0, or the errno the migration failed with */
  size_t bytes_moved;     /* resident bytes that were off the target and moved to it */
  size_t pages_failed;    /* pages that could not be moved (the arena was rolled back) */
  uint64_t nanoseconds;   /* wall time of the whole call */
  unsigned threads;       /* threads that moved pages */
} sicm_migration_report;

/* Move every data page of the arena to `dev`, and bind later allocations
 * there (strict binding).  Every pointer stays valid; other threads may
 * allocate, free, read and write the arena meanwhile, but a thread that
 * touches a page being moved waits: 4 KiB-page arenas move 2 MiB at a time
 * (the kernel holds the address-space lock for writing meanwhile, so a
 * writer waits for at most one such piece at a time), huge-page arenas a
 * huge page at a time (writers wait for that page only).  The cost
 * follows the resident pages, not the address range the arena used: an
 * empty arena moves in microseconds.  A move with pages to move makes one
 * kernel call that may move them, and the kernel charges each such call a
 * fixed price whatever it moves (Linux 6.12 raised it: it drains its LRU
 * caches behind an expedited RCU grace period), so a move of a small
 * arena costs mostly that price; one call for several arenas would pay
 * it once, which this library does not offer.  Arenas created with
 * SICM_ARENA_HUGEPAGES are moved by several threads (see
 * sicm_migrate_set_threads()), at most one per 64 MiB; others by the
 * calling thread alone.  No arena gets transparent huge pages unless
 * created with SICM_ARENA_HUGEPAGES or the system's THP setting is
 * "always": in 2 MiB pages, an arena whose blocks are touched sparsely is
 * resident whole, and a strictly bound arena would fill its node.
 *
 * A move does not lead the process to the OOM killer.  Before anything
 * moves, the arena gives back the free pages it keeps.  An arena with
 * 16 MiB or more resident, moving to a strict target, needs free memory
 * there for the resident pages not on it yet plus a margin of 32 MiB and
 * 1/16 of those bytes (for the system, and for what other threads
 * allocate meanwhile); otherwise the call fails with ENOMEM at once,
 * changing nothing.  While its pages move, its binding only prefers the
 * target, so pages other threads touch meanwhile fall back to other nodes
 * when the target is full; those are moved after, and the binding becomes
 * strict.  (A smaller move is over too soon for that: a page that finds no
 * room fails the move, which rolls back.)  Once a move succeeded, the
 * arena is strictly bound: allocating more than the target holds then
 * meets the kernel's handling of a full node, as any strictly bound memory
 * does (an arena created with SICM_ARENA_PREFERRED falls back instead).
 * A hugetlb arena moves only where the target's pools have a free huge
 * page of its size for each of its pages not there yet; otherwise the
 * call fails with ENOMEM at once, changing nothing (the kernel would
 * take pages outside the pool and resize both nodes' pools).
 *
 * Returns 0 when every page is on the target, or -1 with errno, having
 * moved every page back to where the arena was bound before:
 *   EINVAL  bad handle or device (as sicm_arena_create()), or a device
 *           of another page size than the arena's;
 *   ESTALE  the arena was destroyed;
 *   ENOMEM  the target lacks free memory for the arena's pages (checked
 *           before the move, as above, or found during it);
 *   EIO     some pages could not be moved (pinned or busy);
 *   EPERM   pages mapped by several processes need CAP_SYS_NICE.
 * Migrations of one shared arena are serialized across every process
 * attached to it; the last one decides where its pages are.
 * sicm_error_detail() says why; sicm_arena_last_migration() gives numbers. */
SICM_API int sicm_arena_set_device(sicm_arena sa, sicm_device *dev);

/* As sicm_arena_set_device(), to several devices with the placement flags
 * of sicm_arena_create_devices() (PREFERRED, INTERLEAVE, WEIGHTED; FIRST_TOUCH,
 * huge-page and placer flags are not allowed here: EINVAL).  A WEIGHTED
 * move of a hugetlb arena spreads its huge pages evenly.  A move the program makes,
 * with this call or the others of this section, pins the arena against
 * the placer (sicm_arena_set_autoplace()). */
SICM_API int sicm_arena_set_devices(sicm_arena sa, sicm_device *const *devs, unsigned ndevs,
                                    unsigned flags);

/* The report of the arena's last completed migration.  Returns 0, or -1
 * with errno EINVAL (bad handle or report NULL), ESTALE, or ENOENT (never
 * migrated). */
SICM_API int sicm_arena_last_migration(sicm_arena sa, sicm_migration_report *report);

/* Threads used to move a large arena (default: the CPUs this process may
 * run on; also from SICM_MIGRATE_THREADS at sicm_init()).  How they move
 * them is SICM_MIGRATE_HUGE's at sicm_init(): one move_pages entry per
 * 2 MiB block first (default; BENCHMARKS.md compares), `subpages` (an entry
 * per 4 KiB page) or `mbind` (one thread).  Returns 0, or -1
 * with errno EINVAL when threads is 0 or above 256. */
SICM_API int sicm_migrate_set_threads(unsigned threads);

/* An asynchronous migration in progress. */
typedef struct sicm_migration sicm_migration;

/* Start moving the arena in the background, as sicm_arena_set_devices();
 * allocation in the arena continues meanwhile.  Returns the migration, to
 * be finished with sicm_migration_wait(), or NULL with errno as
 * sicm_arena_set_devices() for bad arguments, or EAGAIN (no thread could
 * be started). */
SICM_API sicm_migration *sicm_arena_set_devices_async(sicm_arena sa, sicm_device *const *devs,
                                                      unsigned ndevs, unsigned flags);

/* 1 when the migration has finished (successfully or not), 0 while it runs,
 * -1 with errno EINVAL when m is NULL. */
SICM_API int sicm_migration_poll(const sicm_migration *m);

/* Ask the migration to stop: it rolls back what it moved and finishes with
 * ECANCELED (unless it had already finished).  Returns 0, or -1 with errno
 * EINVAL when m is NULL. */
SICM_API int sicm_migration_cancel(sicm_migration *m);

/* How far the migration is: *moved receives the bytes moved so far, and
 * *to_move the arena's resident bytes when it started (0 until it has
 * counted them; pages already on the target are counted but not moved,
 * so *moved may stay below it).  Returns 0, or -1 with errno EINVAL when
 * an argument is NULL. */
SICM_API int sicm_migration_progress(const sicm_migration *m, size_t *moved, size_t *to_move);

/* Wait for the migration to finish, fill `report` if not NULL, and free m.
 * Returns 0 if it succeeded, or -1 with its errno (ECANCELED when
 * cancelled); EINVAL when m is NULL. */
SICM_API int sicm_migration_wait(sicm_migration *m, sicm_migration_report *report);

#ifdef __cplusplus
}
#endif

#endif /* SICM_MIGRATION_H */
