/* SPDX-License-Identifier: BSD-3-Clause */
/* migrate.c: moving a whole arena to other devices — synchronously or in
 * the background — with rollback on failure and a report.
 *
 * An arena's data pages all lie in its windows (jemalloc's metadata for it
 * does not: see arena_je_hooks.c).  A migration first checks that a strict
 * target has room for what it will receive, then records the new binding
 * (windows reserved meanwhile get it) and re-binds each window with mbind
 * and no MOVE flag, so every page touched from then on faults in on the
 * target — preferred, not strict, until the move is over, so that a full
 * target makes those pages fall back rather than call the OOM killer; then
 * it moves the pages already resident in the used part of the windows
 * (migrate_move.c), and any that fell back meanwhile. */
#define _GNU_SOURCE
#include <errno.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "migrate.h"

/* Binds every window to `to` (no page moves: cheap), so that pages touched
 * from now on fault in on the target; 0 or -1. */
static int windows_bind(const sc_window *w, unsigned n, const sc_binding *to) {
  for (unsigned i = 0; i < n; i++)
    if (mbind(w[i].base, w[i].size, to->policy, to->nodes.bits, SC_NODES_MAX, 0) != 0)
      return sc_fail(errno, "mbind of the arena's windows to the target failed: %s",
                     strerror(errno));
  return 0;
}

/* Free memory the target must keep beyond the bytes a move brings: for
 * the system and for what other threads allocate while pages move. */
static size_t room_margin(size_t bytes) { return ((size_t)32 << 20) + bytes / 16; }

/* Moves of fewer resident bytes take too little time for other threads to
 * fill the target meanwhile, and fail cleanly (move_pages and mbind never
 * call the OOM killer) when it lacks room: they skip the check and the
 * preferred binding, whose sysfs reads would cost a small move many times
 * its own work (docs/bench-history.md, "The fixed cost of a move"). */
#define MOVE_GUARDED_MIN ((size_t)16 << 20)

/* A strict target must have room for the resident pages that are not on
 * it yet: a page the kernel cannot place there is reclaimed for, then the
 * OOM killer is called.  Counting resident pages is cheap; only when they
 * do not fit are those already on the target counted (a page query each).
 * 0, or -1 with ENOMEM. */
static int target_room_check(const sc_window *w, unsigned n, size_t resident,
                             const sc_binding *to) {
  long long avail = sc_binding_free(to);
  if (avail >= (long long)(resident + room_margin(resident)))
    return 0;
  size_t *per_node = calloc(SC_NODES_MAX, sizeof *per_node);
  if (per_node == NULL)
    return sc_fail(ENOMEM, "out of memory checking the target's room");
  size_t to_move = resident;
  if (sc_windows_residency(w, n, per_node, SC_NODES_MAX) == 0)
    for (unsigned i = 0; i < to->ndevices; i++)
      to_move -= per_node[to->devices[i]->node] < to_move ? per_node[to->devices[i]->node]
                                                          : to_move;
  free(per_node);
  if (avail >= (long long)(to_move + room_margin(to_move)))
    return 0;
  return sc_fail(ENOMEM, "the target devices have %lld bytes free: the arena's %zu bytes not on "
                         "them yet, with a margin of %zu, do not fit",
                 avail, to_move, room_margin(to_move));
}

/* A hugetlb page moves into a free page of the target's pool; with none
 * the kernel takes a page outside the pool and carries the reservation
 * along, resizing both nodes' pools behind the administrator's back.  So
 * the pages not on the target yet must fit its pools' free pages, or the
 * move is refused before anything moves. */
static int huge_room_check(const sc_window *w, unsigned n, const sc_binding *to) {
  size_t *per_node = calloc(SC_NODES_MAX, sizeof *per_node);
  if (per_node == NULL)
    return sc_fail(ENOMEM, "out of memory checking the target's room");
  size_t to_move = 0, avail = 0, on;
  if (sc_windows_residency(w, n, per_node, SC_NODES_MAX) == 0)
    for (unsigned node = 0; node < SC_NODES_MAX; node++)
      to_move += per_node[node];
  for (unsigned i = 0; i < to->ndevices; i++) {
    on = per_node[to->devices[i]->node];
    to_move -= on < to_move ? on : to_move;
    per_node[to->devices[i]->node] = 0; /* a node listed twice counts once */
    size_t pool = 0;
    if (sicm_device_get_free_bytes(to->devices[i], &pool) == 0)
      avail += pool;
  }
  free(per_node);
  if (avail >= to_move)
    return 0;
  return sc_fail(ENOMEM, "the target's hugetlb pools have %zu bytes free: the arena's %zu bytes "
                         "not on them yet do not fit", avail, to_move);
}

/* NUMA_FOREIGN of the target nodes: pages meant for them that the kernel
 * placed elsewhere (system-wide, so it may move for other reasons too). */
static unsigned long long nodes_foreign(const sc_binding *b) {
  unsigned long long total = 0;
  for (unsigned i = 0; i < b->ndevices; i++) {
    char path[96];
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d/numastat", b->devices[i]->node);
    FILE *f = fopen(path, "r");
    if (f == NULL)
      return ~0ull; /* unknown: the caller checks the pages */
    char key[32];
    unsigned long long v;
    while (fscanf(f, "%31s %llu", key, &v) == 2)
      if (strcmp(key, "numa_foreign") == 0)
        total += v;
    fclose(f);
  }
  return total;
}

/* Back to where the arena was after a failed move: its binding, then every
 * page it has.  Best effort: what does not move back stays where it is,
 * and the migration's own failure is what the caller reports. */
static void migrate_roll_back(sc_arena *a, const sc_binding *from, int huge) {
  sc_window windows[SC_WINDOWS_MAX];
  pthread_mutex_lock(&a->window_lock);
  sc_arena_binding_set(a, from);
  pthread_mutex_unlock(&a->window_lock);
  unsigned n = sc_window_snapshot(a, windows);
  sicm_migration_report back = {0};
  (void)windows_bind(windows, n, from); /* pages move back below even if this fails */
  (void)sc_pages_move(windows, n, from, 0, huge, a->move_flag, NULL, &back);
}

/* NUMA balancing marks pages of windows under the default policy (the
 * only ones it scans) for a hinting fault, and on some kernels (Debian
 * 12's 6.1) move_pages reports a page so marked as absent: a move would
 * leave it behind, and it would reappear on its old node at the next
 * access.  A read fault clears the mark; once the window is bound, the
 * fault moves nothing (the kernel migrates on fault only under the
 * default policy). */
static void hinting_marks_clear(const sc_window *w, unsigned n) {
  for (unsigned i = 0; i < n; i++)
    (void)sc_resident_runs(w[i].base, w[i].reach, sc_populate_run, NULL);
}

/* Binds the arena to `to` and moves its pages there; 0, or -1 with errno
 * (the caller rolls back).  New binding first (windows reserved from now
 * on get it), then the windows' policy, then a snapshot of what is used:
 * every page touched after the policy changed is already on the target.
 * A guarded move binds strict targets only preferred while pages move:
 * what other threads touch meanwhile falls back when the target is full
 * instead of meeting the OOM killer.  Pages that fell back (none unless
 * the target filled up, or another process's page missed these nodes)
 * move while the binding still lets them fall back; then the binding is
 * made strict, and what fell back in between moves last. */
static int move_to(sc_arena *a, const sc_binding *to, int guarded, int strict, int huge,
                   sc_move_watch *watch, sicm_migration_report *report) {
  sc_window windows[SC_WINDOWS_MAX];
  sc_binding during = *to;
  if (guarded && to->policy == MPOL_BIND)
    during.policy = to->ndevices == 1 ? MPOL_PREFERRED : MPOL_PREFERRED_MANY;
  int relaxed = during.policy != to->policy;
  unsigned long long foreign = relaxed ? nodes_foreign(to) : 0;
  pthread_mutex_lock(&a->window_lock);
  int hinted = a->binding.policy == MPOL_DEFAULT;
  sc_arena_binding_set(a, &during);
  pthread_mutex_unlock(&a->window_lock);
  unsigned n = sc_window_snapshot(a, windows);
  int rc = windows_bind(windows, n, &during);
  n = sc_window_snapshot(a, windows);
  if (rc == 0 && hinted)
    hinting_marks_clear(windows, n);
  if (rc == 0)
    rc = sc_pages_move(windows, n, &during, strict, huge, a->move_flag, watch, report);
  if (rc != 0 || !relaxed)
    return rc;
  unsigned long long now = nodes_foreign(to);
  if (now != foreign) {
    foreign = now;
    n = sc_window_snapshot(a, windows);
    rc = sc_pages_move(windows, n, &during, strict, huge, a->move_flag, watch, report);
  }
  if (rc == 0) {
    pthread_mutex_lock(&a->window_lock);
    sc_arena_binding_set(a, to);
    pthread_mutex_unlock(&a->window_lock);
    n = sc_window_snapshot(a, windows);
    rc = windows_bind(windows, n, to);
  }
  if (rc == 0 && nodes_foreign(to) != foreign)
    rc = sc_pages_move(windows, n, to, strict, huge, a->move_flag, watch, report);
  return rc;
}

/* Keeps the arena's last migration, begun at `start`, ended with rc
 * (errno err), and adds it to the arena's totals.  a->migrate_lock held. */
static void migration_record(sc_arena *a, sicm_migration_report *report, int rc, int err,
                             uint64_t start) {
  report->error = err;
  report->nanoseconds = sc_clock_ns(CLOCK_MONOTONIC) - start;
  a->last_migration = *report;
  a->migrated = 1;
  __atomic_fetch_add(rc == 0 ? &a->migrations_done : &a->migrations_failed, 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&a->migration_ns, report->nanoseconds, __ATOMIC_RELAXED);
  __atomic_fetch_add(&a->migration_bytes, report->bytes_moved, __ATOMIC_RELAXED);
}

/* Moves the arena; a->migrate_lock held by the caller.  0, or -1 with
 * errno and detail, the arena rolled back; the report either way. */
static int migrate_locked(sc_arena *a, const sc_binding *to, sc_move_watch *watch,
                          sicm_migration_report *report) {
  sc_window windows[SC_WINDOWS_MAX];
  uint64_t start = sc_clock_ns(CLOCK_MONOTONIC);
  *report = (sicm_migration_report){0};
  /* The kind prepares.  A private arena gives back the free pages it
   * keeps.  An arena other processes share: they must not move it
   * meanwhile, its binding may have changed there, and pages only they
   * touched must be mapped here to be moved at all. */
  if (a->ops->move_begin != NULL && a->ops->move_begin(a) != 0) {
    report->error = errno;
    return -1;
  }
  /* Preferred placement may leave pages elsewhere; only binding is strict. */
  int strict = to->policy == MPOL_BIND || sc_policy_interleaves(to->policy);
  int huge = (a->flags & SICM_ARENA_HUGEPAGES) != 0 || a->huge_page != 0;
  sc_binding from = a->binding;
  unsigned n = sc_window_snapshot(a, windows);
  /* Resident pages are committed ones: an arena with less committed than
   * the guarded minimum needs no count. */
  long pages = (strict && __atomic_load_n(&a->held, __ATOMIC_RELAXED) >= MOVE_GUARDED_MIN) || watch
                   ? sc_windows_resident_pages(windows, n)
                   : 0;
  size_t resident = pages > 0 ? (size_t)pages * sc_page_size() : 0;
  if (watch)
    __atomic_store_n(&watch->to_move, resident, __ATOMIC_RELAXED);
  if (!strict) /* counted for the watch alone: the guard is for strict targets */
    resident = 0;
  /* A huge page that finds no room on the target stays where it is (the
   * kernel reclaims nothing for hugetlb pages): no guard needed. */
  int guarded = resident >= MOVE_GUARDED_MIN && a->huge_page == 0;
  int rc = guarded     ? target_room_check(windows, n, resident, to)
           : a->huge_page ? huge_room_check(windows, n, to)
                          : 0;
  if (rc == 0) /* move_to binds every window, the placer's part too; so does a roll back */
    __atomic_store_n(&a->placer_part, 0, __ATOMIC_RELAXED);
  int rolled = rc == 0 && move_to(a, to, guarded, strict, huge, watch, report) != 0;
  if (rolled)
    rc = -1;
  int err = rc ? errno : 0;
  if (rolled) {
    char cause[256];
    snprintf(cause, sizeof cause, "%s", sicm_error_detail());
    migrate_roll_back(a, &from, huge);
    char name[SICM_ARENA_NAME_MAX];
    sc_arena_name_copy(a, name);
    sc_fail(err, "migration of arena %u%s%s failed and was rolled back: %s (%zu pages failed)",
            a->slot, name[0] ? " " : "", name, cause,
            report->pages_failed);
  }
  if (a->ops->move_end != NULL && a->ops->move_end(a, rc == 0) != 0 && rc == 0) {
    rc = -1; /* the pages moved, but other processes were not told */
    err = errno;
  }
  migration_record(a, report, rc, err, start);
  errno = err;
  return rc;
}

/* Checks arguments and builds the target binding; the live arena or NULL. */
static sc_arena *migrate_prepare(sicm_arena sa, sicm_device *const *devs, unsigned ndevs,
                                       unsigned flags, sc_binding *to) {
  sc_state *s = sc_state_get();
  sc_arena *a = s ? sc_arena_resolve(sa) : NULL;
  if (a == NULL)
    return NULL;
  if (flags & (SICM_ARENA_HUGEPAGES | SICM_ARENA_NOHUGEPAGES | SICM_ARENA_AUTOPLACE |
               SICM_ARENA_ANYWHERE))
    return sc_fail_null(EINVAL, "huge-page and placer flags belong to sicm_arena_create_devices");
  if (flags & SICM_ARENA_FIRST_TOUCH)
    return sc_fail_null(EINVAL, "a move binds the arena's pages to its target; FIRST_TOUCH "
                                "binds nothing");
  if (sc_binding_make(s, devs, ndevs, flags, to) != 0)
    return NULL;
  pthread_mutex_lock(&a->window_lock);
  unsigned ndevices = a->binding.ndevices;
  pthread_mutex_unlock(&a->window_lock);
  if (a->borrowed && ndevices == 0)
    return sc_fail_null(EINVAL, "a fixed arena made without a device leaves its memory where "
                                "the caller placed it");
  if (to->huge_page != a->huge_page)
    return sc_fail_null(EINVAL, "the arena has %zu KiB pages, the target %zu KiB: the kernel "
                                "moves pages, it does not change their size",
                        (a->huge_page ? a->huge_page : sc_page_size()) >> 10,
                        (to->huge_page ? to->huge_page : sc_page_size()) >> 10);
  return a;
}

/* The program's move: the placer leaves the arena alone from now on. */
static void migrate_by_program(sc_arena *a) {
  int automatic = SICM_AUTOPLACE_AUTO;
  __atomic_compare_exchange_n(&a->autoplace_mode, &automatic, SICM_AUTOPLACE_PIN, 0, __ATOMIC_RELAXED,
                              __ATOMIC_RELAXED);
  __atomic_fetch_add(&a->program_moves, 1, __ATOMIC_RELAXED);
}

int sicm_arena_set_devices(sicm_arena sa, sicm_device *const *devs, unsigned ndevs,
                           unsigned flags) {
  sc_binding to;
  sc_arena *a = migrate_prepare(sa, devs, ndevs, flags, &to);
  if (a == NULL)
    return -1;
  migrate_by_program(a);
  sicm_migration_report report;
  pthread_mutex_lock(&a->migrate_lock);
  int rc = migrate_locked(a, &to, NULL, &report);
  int err = errno;
  pthread_mutex_unlock(&a->migrate_lock);
  errno = err;
  return rc;
}

/* The arena the placer moves to devs, its migrate_lock held, while it is
 * still the placer's to move; NULL with errno (and the report's error,
 * when the arena went or is no longer the placer's). */
static sc_arena *placer_lock(sicm_arena sa, sicm_device *const *devs, unsigned ndevs,
                             unsigned flags, sc_binding *to, sicm_migration_report *report) {
  *report = (sicm_migration_report){0};
  sc_arena *a = migrate_prepare(sa, devs, ndevs, flags, to);
  if (a == NULL)
    return NULL;
  pthread_mutex_lock(&a->migrate_lock);
  /* The arena may have been destroyed since it was resolved: destroy ends
   * it under this lock. */
  if (__atomic_load_n(&a->live_generation, __ATOMIC_ACQUIRE) != sc_handle_generation(sa))
    report->error = ESTALE;
  else if (__atomic_load_n(&a->autoplace_mode, __ATOMIC_RELAXED) != SICM_AUTOPLACE_AUTO)
    report->error = EPERM; /* the program moved it or took it out since the placer decided */
  if (report->error == 0)
    return a;
  pthread_mutex_unlock(&a->migrate_lock);
  return sc_fail_null(report->error, report->error == ESTALE
                                         ? "the arena was destroyed"
                                         : "the arena is no longer the placer's to move");
}

int sc_arena_move(sicm_arena sa, sicm_device *const *devs, unsigned ndevs, unsigned flags,
                  sicm_migration_report *report) {
  sc_binding to;
  sc_arena *a = placer_lock(sa, devs, ndevs, flags, &to, report);
  if (a == NULL)
    return -1;
  int rc = migrate_locked(a, &to, NULL, report);
  int err = errno;
  pthread_mutex_unlock(&a->migrate_lock);
  errno = err;
  return rc;
}

/* The part of `part` bytes: the first window from its base, no further
 * than the window's committed reach, in whole 2 MiB (a boundary that never
 * splits a transparent huge page).  Its length; 0: no part. */
static size_t part_window(const sc_window *w0, size_t part, sc_window *out) {
  size_t len = w0->reach < part ? w0->reach : part;
  len &= ~(((size_t)2 << 20) - 1);
  *out = (sc_window){.base = w0->base, .size = len, .used = len, .reach = len, .room = len};
  return len;
}

int sc_arena_move_part(sicm_arena sa, sicm_device *const *devs, unsigned ndevs, size_t part,
                       sicm_migration_report *report) {
  sc_binding to;
  sc_arena *a = placer_lock(sa, devs, ndevs, SICM_ARENA_PREFERRED, &to, report);
  if (a == NULL)
    return -1;
  uint64_t start = sc_clock_ns(CLOCK_MONOTONIC);
  int rc = 0;
  if (a->ops->placer_claim != NULL || a->borrowed || a->huge_page)
    rc = sc_fail(EINVAL, "only a private arena of base pages in windows of its own is split");
  if (rc == 0 && a->ops->move_begin != NULL)
    rc = a->ops->move_begin(a);
  sc_window windows[SC_WINDOWS_MAX], cut;
  int huge = (a->flags & SICM_ARENA_HUGEPAGES) != 0;
  size_t len = 0;
  if (rc == 0 && sc_window_snapshot(a, windows) > 0)
    len = part_window(&windows[0], part, &cut);
  if (rc == 0 && len == 0)
    rc = sc_fail(EINVAL, "the arena has not 2 MiB committed for a part");
  if (rc == 0)
    rc = windows_bind(&cut, 1, &to);
  if (rc == 0)
    rc = sc_pages_move(&cut, 1, &to, 0, huge, a->move_flag, NULL, report);
  int err = rc ? errno : 0;
  if (rc != 0 && len > 0) { /* back as the arena is bound, the old part too, best effort */
    char cause[256];
    snprintf(cause, sizeof cause, "%s", sicm_error_detail());
    sc_binding home;
    pthread_mutex_lock(&a->window_lock);
    home = a->binding;
    pthread_mutex_unlock(&a->window_lock);
    sicm_migration_report back = {0};
    if (windows_bind(&cut, 1, &home) == 0) /* else the part stays bound, and counted */
      __atomic_store_n(&a->placer_part, 0, __ATOMIC_RELAXED);
    (void)sc_pages_move(&cut, 1, &home, 0, huge, a->move_flag, NULL, &back);
    sc_fail(err, "moving part of the arena failed and was rolled back: %s", cause);
  } else if (rc == 0) {
    __atomic_store_n(&a->placer_part, len, __ATOMIC_RELAXED);
  }
  migration_record(a, report, rc, err, start);
  pthread_mutex_unlock(&a->migrate_lock);
  errno = err;
  return rc;
}

int sicm_arena_set_device(sicm_arena sa, sicm_device *dev) {
  return sicm_arena_set_devices(sa, &dev, 1, 0);
}

int sicm_arena_last_migration(sicm_arena sa, sicm_migration_report *report) {
  sc_arena *a = sc_arena_resolve(sa);
  if (a == NULL)
    return -1;
  if (report == NULL)
    return sc_fail(EINVAL, "sicm_arena_last_migration: report is NULL");
  pthread_mutex_lock(&a->migrate_lock);
  int migrated = a->migrated;
  *report = a->last_migration;
  pthread_mutex_unlock(&a->migrate_lock);
  return migrated ? 0 : sc_fail(ENOENT, "the arena was never migrated");
}

/* ---- asynchronous migrations ---- */

struct sicm_migration {
  pthread_t thread;
  sc_arena *arena;
  sc_binding to;
  sc_move_watch watch;
  int done;                        /* atomic */
  int error;                       /* errno of a failed migration, 0 */
  char detail[256];                /* its description, from the mover thread */
  sicm_migration_report report;
};

static void *migration_thread(void *arg) {
  sicm_migration *m = arg;
  pthread_mutex_lock(&m->arena->migrate_lock);
  if (migrate_locked(m->arena, &m->to, &m->watch, &m->report) != 0) {
    m->error = errno;
    snprintf(m->detail, sizeof m->detail, "%s", sicm_error_detail());
  }
  pthread_mutex_unlock(&m->arena->migrate_lock);
  __atomic_store_n(&m->done, 1, __ATOMIC_RELEASE);
  return NULL;
}

sicm_migration *sicm_arena_set_devices_async(sicm_arena sa, sicm_device *const *devs,
                                             unsigned ndevs, unsigned flags) {
  sc_binding to;
  sc_arena *a = migrate_prepare(sa, devs, ndevs, flags, &to);
  if (a == NULL)
    return NULL;
  sicm_migration *m = calloc(1, sizeof *m);
  if (m == NULL)
    return sc_fail_null(ENOMEM, "out of memory");
  migrate_by_program(a);
  m->arena = a;
  m->to = to;
  if (pthread_create(&m->thread, NULL, migration_thread, m) != 0) {
    free(m);
    return sc_fail_null(EAGAIN, "no thread could be started for the migration");
  }
  return m;
}

int sicm_migration_poll(const sicm_migration *m) {
  if (m == NULL)
    return sc_fail(EINVAL, "sicm_migration_poll: NULL migration");
  return __atomic_load_n(&m->done, __ATOMIC_ACQUIRE);
}

int sicm_migration_cancel(sicm_migration *m) {
  if (m == NULL)
    return sc_fail(EINVAL, "sicm_migration_cancel: NULL migration");
  __atomic_store_n(&m->watch.cancel, 1, __ATOMIC_RELAXED);
  return 0;
}

int sicm_migration_progress(const sicm_migration *m, size_t *moved, size_t *to_move) {
  if (m == NULL || moved == NULL || to_move == NULL)
    return sc_fail(EINVAL, "sicm_migration_progress: NULL argument");
  *to_move = __atomic_load_n(&m->watch.to_move, __ATOMIC_RELAXED);
  *moved = __atomic_load_n(&m->watch.moved, __ATOMIC_RELAXED);
  return 0;
}

int sicm_migration_wait(sicm_migration *m, sicm_migration_report *report) {
  if (m == NULL)
    return sc_fail(EINVAL, "sicm_migration_wait: NULL migration");
  pthread_join(m->thread, NULL);
  if (report != NULL)
    *report = m->report;
  int err = m->error;
  if (err != 0)
    sc_fail(err, "%s", m->detail);
  free(m);
  return err ? -1 : 0;
}
