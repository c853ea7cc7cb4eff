/* SPDX-License-Identifier: BSD-3-Clause */
/* autoplace.h: automatic placement (sicm_autoplace.h) — the monitor that
 * measures the bytes each arena referenced (autoplace_monitor.c), the plan
 * that picks the arenas for the fast tier (autoplace_plan.c, pure: no
 * system call), its configuration (autoplace_conf.c), the placer thread
 * that measures, plans and moves (autoplace.c), and what it did, kept for
 * the report (autoplace_report.c).  It sits above migration and moves
 * arenas only through it. */
#ifndef SC_AUTOPLACE_H
#define SC_AUTOPLACE_H

#include <stdio.h>

#include "migrate.h"

/* ---- autoplace_monitor.c ---- */
/* Bytes per arena slot, from one reading of /proc/self/smaps. */
typedef struct sc_monitor_bytes {
  uint64_t referenced[SC_ARENA_SLOTS]; /* referenced since the last clear (of the sample) */
  uint64_t resident[SC_ARENA_SLOTS];   /* Rss */
  uint64_t huge[SC_ARENA_SLOTS];       /* AnonHugePages: transparent huge pages */
  uint64_t unattributed;               /* referenced bytes of mappings over several arenas */
} sc_monitor_bytes;
/* What the monitor keeps of an arena slot from the last clear. */
typedef struct sc_monitor_slot {
  uint64_t generation;          /* of the arena cleared; 0: none */
  int whole;                    /* the whole process was cleared */
  uintptr_t chunk;              /* the sample: chunks of this size, */
  unsigned every;               /* one in `every`, */
  uint64_t phase;               /* at this turn */
  uint64_t sample;              /* resident bytes of the sample when cleared */
} sc_monitor_slot;
/* A range of one arena's window to clear whole. */
typedef struct sc_monitor_range {
  uintptr_t lo, hi;
  unsigned slot;
  uint64_t generation;          /* of the arena gathered */
} sc_monitor_range;
typedef struct sc_monitor {
  unsigned interval_ms;
  int refused;                  /* MADV_COLD unusable: the whole process, every interval */
  int restores;                 /* MADV_POPULATE_READ makes pages read as referenced */
  unsigned every;               /* the last interval's sample: one chunk in this many */
  unsigned every_fixed;         /* 0, or the stride always (tests) */
  uint64_t phase;
  sc_monitor_slot slots[SC_ARENA_SLOTS];
  unsigned mappings;            /* of /proc/self/smaps, read in the last interval */
  uint64_t runs, runs_counted;  /* calls that cleared arenas whole: the last interval's, this one's */
  unsigned nclear;              /* ranges gathered to be cleared together */
  sc_monitor_range clear[SC_ARENA_SLOTS];
} sc_monitor;
typedef int (*sc_monitor_takes_part)(const sc_arena *a);
/* Checks that this kernel tells this process which of its pages were
 * referenced, on a probe mapping of its own; readies m for an interval of
 * interval_ms.  0, or -1 with
 * ENOTSUP (or the errno of the step that failed) and the reason in words. */
int sc_monitor_check(sc_monitor *m, unsigned interval_ms);
/* Reads every arena's referenced and resident bytes (referenced estimated
 * from the sample cleared last time), then clears the next sample of each
 * arena that takes part; 0, or -1 with errno. */
int sc_monitor_sample(sc_monitor *m, sc_monitor_takes_part takes_part, sc_monitor_bytes *out);

/* ---- autoplace_plan.c ---- */
/* DEMOTE: leaves the fast tier for a hotter arena's room (a split arena:
 * its part leaves); SHED: leaves it because the budget shrank below what
 * the arenas there hold; SPLIT: `part_wanted` bytes of it go to the fast
 * tier, the rest stays. */
enum { SC_PLAN_STAY, SC_PLAN_PROMOTE, SC_PLAN_DEMOTE, SC_PLAN_SHED, SC_PLAN_SPLIT };
/* One arena as the plan sees it.  The caller fills everything but
 * `action`; `regret` carries over from one interval to the next. */
typedef struct sc_plan_arena {
  uint64_t resident;            /* bytes */
  uint64_t referenced;          /* bytes referenced in the last interval */
  double rate;                  /* decaying referenced bytes per interval */
  int on_fast;
  int anywhere;                 /* SICM_ARENA_ANYWHERE: demoted first */
  int movable;                  /* 0: stays where it is this interval (min stay, back-off) */
  uint64_t regret;              /* bytes it referenced off the fast tier while it ranked in */
  int wanted;                   /* out: ranks in the set that fits the budget */
  int action;                   /* out: SC_PLAN_* */
  uint64_t cost;                /* out, PROMOTE, SPLIT: bytes the move costs (displaced included) */
  int splittable;               /* may be placed in part */
  uint64_t part;                /* bytes of it placed on the fast tier in part (off it: 0) */
  uint64_t part_limit;          /* the largest part it may have (sc_arena_move_part's reach) */
  uint64_t referenced_before;   /* bytes referenced in the interval before the last */
  uint64_t grown;               /* resident bytes it gained in the last interval */
  uint64_t part_wanted;         /* out, SPLIT: the part's new size */
} sc_plan_arena;
typedef struct sc_plan_params {
  uint64_t budget;              /* bytes the arenas on the fast tier may hold */
  double hysteresis;            /* an arena on the fast tier ranks with rate * (1 + this) */
  double move_weight;           /* move when regret >= weight * bytes the move costs */
  uint64_t split_grain;         /* a part is a multiple of this; 0: no arena is split */
  uint64_t heat_floor;          /* heat below this is none (see autoplace_plan.c) */
} sc_plan_params;
/* Decides each arena's action for this interval: ranks by rate per
 * resident byte, keeps the set that fits the budget, promotes by the ski
 * rental rule, demotes only what a promotion or the budget needs; the
 * room the set leaves goes in part to the hottest arena too large for it.
 * `order` is scratch of n entries.  Returns the number of moves. */
unsigned sc_plan(sc_plan_arena *a, unsigned n, const sc_plan_params *p, unsigned *order);

/* ---- autoplace_conf.c ---- */
/* The checks of sicm_autoplace_start(): 0, or -1 with errno and words. */
int sc_autoplace_config_check(const sicm_autoplace_config *c);
/* The configuration the placer runs with: c, checked, with the defaults
 * filled in where c leaves them to the library (no fast device, cpu_share
 * 0); 0 or -1 with errno. */
int sc_autoplace_config_complete(const sicm_autoplace_config *c, sicm_autoplace_config *out);

/* ---- autoplace_home.c ---- */
/* Whether devs (n of them) all lie on the fast tier `fast`. */
int sc_autoplace_on_fast(const sc_nodemask *fast, sicm_device *const *devs, int n);
/* Where arena a (bound to devs) goes when it leaves the fast tier: the
 * device(s) it was bound to when it joined, or, when it joined on the
 * fast tier, the nearest device off it, preferred.  An ANYWHERE arena:
 * bound to every device off the fast tier, capacity memory first (the
 * placer puts its pages on capacity memory first when there is room), so
 * that no page of it ever reaches the fast tier, whatever fills the other
 * nodes.  Fills home and *flags; the count of devices. */
unsigned sc_autoplace_home(sc_arena *a, sicm_device *const *devs, int n, const sc_nodemask *fast,
                           sicm_device **home, unsigned *flags);
/* The devices of base pages off the fast tier (`fast`), capacity memory
 * first, then by free bytes: an ANYWHERE arena's home.  Their count. */
unsigned sc_autoplace_off_fast(const sc_nodemask *fast, sicm_device **out);
/* *off: the arena's resident bytes on nodes outside `fast`; 0, or -1
 * with errno (the arena went meanwhile). */
int sc_autoplace_bytes_off_fast(sicm_arena sa, const sc_nodemask *fast, uint64_t *off);

/* Whether the placer may put part of the arena on the fast tier: a
 * private arena of base pages in windows of its own, not declared idle
 * (SICM_ARENA_ANYWHERE). */
int sc_autoplace_splittable(const sc_arena *a);
/* The largest part of the arena the placer may place on the fast tier:
 * what is committed of its first window (sc_arena_move_part). */
uint64_t sc_autoplace_part_limit(sc_arena *a);
/* Free bytes of the fast tier's devices, as the kernel reports them now. */
uint64_t sc_autoplace_fast_free(const sicm_autoplace_config *c);

/* ---- autoplace_report.c ---- */
/* One decision of the placer, as reports show it. */
typedef struct sc_autoplace_decision {
  uint64_t unix_ns;             /* when it was taken (CLOCK_REALTIME) */
  unsigned slot;
  char name[SICM_ARENA_NAME_MAX];
  int from_node, to_node;       /* first node of the bindings; -1: none */
  int error;                    /* 0, or the errno of the refused move */
  uint64_t bytes, ns;           /* moved, and the time the move took */
  char why[112];
} sc_autoplace_decision;
/* Keeps d for the report (the newest SC_AUTOPLACE_DECISIONS_KEPT). */
#define SC_AUTOPLACE_DECISIONS_KEPT 4096
/* The share of one core the placer's measuring may take, unless told. */
#define SC_AUTOPLACE_CPU_DEFAULT 0.01
/* Keeps a decision on the arena of `slot`: a move from node `from` to
 * `to` (-1: none), refused with `error` or done as `r` reports (NULL: not
 * tried), and why, in words. */
void sc_autoplace_decision_record(unsigned slot, sc_arena *a, int from, int to, int error,
                                  const sicm_migration_report *r, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
/* The placer's totals; the report shows the copy published last. */
typedef struct sc_autoplace_totals {
  int running, monitor_only;
  unsigned interval_ms;         /* asked */
  unsigned interval_kept_ms;     /* atomic: the last one, stretched to keep within cpu_share */
  double cpu_share;             /* of one core, the cpu= budget */
  uint64_t cpu_ns;              /* atomic: the placer thread's CPU time */
  uint64_t move_cpu_ns;         /* atomic: the part its moves took */
  uint64_t published_unix_ns;   /* when the report's copy was taken */
  int fast_node;                /* first node of the fast tier */
  uint64_t start_unix_ns;       /* when it started (CLOCK_REALTIME) */
  uint64_t budget, intervals, monitor_ns, moves, moves_failed;
  unsigned sample_every;        /* its last sample: one chunk of 2 MiB in this many */
} sc_autoplace_totals;
void sc_autoplace_totals_publish(const sc_autoplace_totals *t);
/* The placer's part of sicm_stats_print: its totals, then its decisions. */
void sc_autoplace_report_print(FILE *out, int json);
/* Around fork(): the report's lock (taken last, a leaf). */
void sc_autoplace_report_fork_lock(void);
void sc_autoplace_report_fork_unlock(void);

/* ---- autoplace.c ---- */
/* Starts the placer from SICM_AUTOPLACE (sicm_init, first reference). */
void sc_autoplace_setup(void);
/* Stops the placer (the last sicm_fini, once no arena of the program is
 * left and before the devices go). */
void sc_autoplace_before_fini(void);
/* In a fork child: the placer's thread is the parent's. */
void sc_autoplace_fork_child(void);

#endif /* SC_AUTOPLACE_H */
