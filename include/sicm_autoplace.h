/* SPDX-License-Identifier: BSD-3-Clause */
/* sicm_autoplace.h: arenas that find the fast tier by themselves — arena
 * names, per-arena access rates, and the placer that moves the arenas
 * hottest per byte onto the fast device(s) under a budget.  Included by
 * sicm.h; including it alone includes sicm.h first.  Same conventions as
 * sicm.h: -1 or NULL on failure, errno as documented, words in
 * sicm_error_detail(). */
#ifndef SICM_AUTOPLACE_H
#define SICM_AUTOPLACE_H

#include "sicm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Automatic placement: names, access rates and the placer                  */
/* ------------------------------------------------------------------------ */

/* Longest arena name, its terminating NUL included. */
#define SICM_ARENA_NAME_MAX 32

/* Name the arena (NULL or "": no name) for statistics, reports and errors.
 * Printable ASCII without '"' or '\\', at most SICM_ARENA_NAME_MAX - 1
 * characters.  Returns 0, or -1 with errno EINVAL (bad handle or name) or
 * ESTALE. */
SICM_API int sicm_arena_set_name(sicm_arena sa, const char *name);

/* Copies the arena's name ("" when it has none) to out, which holds
 * `size` bytes (SICM_ARENA_NAME_MAX always suffices).  Returns the name's
 * length, or -1 with errno EINVAL (bad handle, out NULL, or size too
 * small) or ESTALE. */
SICM_API int sicm_arena_get_name(sicm_arena sa, char *out, size_t size);

/* What the monitor measured of one arena.  The monitor runs while the
 * placer runs (in any mode, sicm_autoplace_start()).  Each interval it
 * reads, per mapping of the process, the bytes whose pages were
 * referenced since their accessed bits were cleared (/proc/self/smaps),
 * then clears them again (madvise MADV_COLD) for a sample of each arena
 * sized so that setting them again costs the program under 1/100 of the
 * interval; referenced_last is the sample's share scaled to the arena.
 * That is recency per page and interval, not a count of accesses:
 * a page read once and a page read a million times in one interval count
 * the same, so the rate is a decaying average over intervals.  The monitor
 * reads no arena data.  A shared arena is measured in each process that
 * attaches it and runs a placer, for that process's own accesses; each
 * publishes its figure in the arena, and referenced_last is the sum over
 * the processes whose figures are fresh.  One of them places the arena:
 * the first whose placer (not in monitor mode) claims it, until its
 * figures go stale (it stopped, detached or died). */
typedef struct sicm_arena_rates {
  uint64_t intervals;          /* intervals measured since the arena took part */
  uint64_t referenced_last;    /* bytes referenced in the last interval */
  uint64_t resident;           /* bytes resident at the last interval */
  double referenced_per_second; /* decaying average of referenced bytes per second */
  double density;              /* that rate per resident byte (per second) */
  uint64_t fast_ns, slow_ns;   /* time spent on the fast tier and elsewhere while measured */
  uint64_t moves_in, moves_out; /* the placer's moves onto and off the fast tier */
  int mode;                    /* enum sicm_autoplace_mode */
  int on_fast;                 /* 1 when its binding is on the fast device(s) */
} sicm_arena_rates;

/* The arena's rates.  Returns 0, or -1 with errno EINVAL (bad handle or
 * out NULL) or ESTALE.  All zero for an arena never measured. */
SICM_API int sicm_arena_get_rates(sicm_arena sa, sicm_arena_rates *out);

/* Flags of sicm_arena_create_devices() for the placer (numbered after the
 * placement and huge-page flags of sicm.h). */
enum sicm_arena_place_flags {
  /* Takes part in automatic placement when the placer was started with
   * SICM_AUTOPLACE_FLAGGED (with SICM_AUTOPLACE_ALL every arena does). */
  SICM_ARENA_AUTOPLACE = 1u << 4,
  /* Its data is not in active use: the placer puts it where memory costs
   * least (capacity memory first, when it has room for the arena, then
   * DRAM), binds it to every device off the fast tier so that none of its
   * pages reaches the fast tier whatever fills the others, and demotes it
   * first when the fast tier needs room. */
  SICM_ARENA_ANYWHERE = 1u << 5,
};

/* How the placer treats one arena (sicm_arena_set_autoplace()). */
enum sicm_autoplace_mode {
  SICM_AUTOPLACE_AUTO = 0,    /* placed by the placer when it takes part */
  SICM_AUTOPLACE_PIN = 1,     /* measured, never moved; set by any move the program makes */
  SICM_AUTOPLACE_EXCLUDE = 2, /* neither measured nor moved */
};

/* Which arenas take part. */
enum sicm_autoplace_arenas {
  SICM_AUTOPLACE_ALL = 0,     /* every arena of sicm_arena_create*() (not the defaults) */
  SICM_AUTOPLACE_FLAGGED = 1, /* those created with SICM_ARENA_AUTOPLACE */
};

typedef struct sicm_autoplace_config {
  /* The fast tier: 1 to SICM_ARENA_DEVICES_MAX devices of base pages.
   * ndevices 0: the device ranked first by bandwidth from the calling
   * thread's node (sicm_device_best()). */
  unsigned ndevices;
  sicm_device *devices[SICM_ARENA_DEVICES_MAX];
  /* Bytes of the fast tier the placer may fill; 0: all of it.  Either way
   * it never fills beyond the tier's free memory less `reserve`. */
  size_t budget;
  size_t reserve;             /* bytes kept free on the fast tier */
  unsigned interval_ms;       /* between two measurements, >= 10 */
  unsigned half_life;         /* intervals for a rate to decay by half, >= 1 */
  unsigned arenas;            /* enum sicm_autoplace_arenas */
  int monitor_only;           /* 1: measure, never move */
  /* The share of one core (0 to 1; 0: the default, 0.01) that measuring
   * may take: when a measure costs more than this share of an interval,
   * the placer lengthens its intervals until it does not (the report
   * gives the interval it keeps).  A measure costs per arena and per
   * resident page of the arenas (per 2 MiB in transparent huge pages),
   * nothing for memory outside arenas: many GiB of arenas in base pages
   * lengthen the interval, the same in SICM_ARENA_HUGEPAGES do not. */
  double cpu_share;
} sicm_autoplace_config;

/* Fills c with the defaults: the fast device by bandwidth, budget 0 (the
 * tier's free memory), reserve 64 MiB, interval 1000 ms, half-life 1
 * intervals, every arena, placing, 1% of a core for measuring.  Returns 0, or -1 with errno EINVAL (c
 * NULL) or EPERM (not initialized), or ENODEV (no device). */
SICM_API int sicm_autoplace_config_init(sicm_autoplace_config *c);

/* Fill c as SICM_AUTOPLACE's text would: the defaults of
 * sicm_autoplace_config_init(), then the settings of `text` (sicm(7),
 * SETTINGS: "fast=2,budget=2G,interval=500ms"; "on" or "1": the defaults
 * alone), checked as sicm_autoplace_start() checks them.  For a runtime
 * that takes the placer's settings from its own users.  Returns 0, or -1
 * with errno EINVAL (c or text NULL, or a setting that does not parse or
 * check; sicm_error_detail() names it), EPERM or ENODEV (as
 * sicm_autoplace_config_init()); on failure *c is unchanged. */
SICM_API int sicm_autoplace_config_parse(sicm_autoplace_config *c, const char *text);

/* Start the placer: a thread that each interval measures every arena that
 * takes part, ranks them by referenced bytes per resident byte, picks the
 * set that fits the budget, and moves arenas onto and off the fast tier
 * with the library's migration.  A cold arena leaves the fast tier only
 * when a hotter one needs its room, and goes back to the device(s) it was
 * bound to when it joined (SICM_ARENA_ANYWHERE: off the fast tier, the
 * cheapest first).  An arena on the fast tier with pages off it (the tier
 * was full when they were made, or when it moved) is moved again once the
 * tier has room for them: the placer judges by the pages, not by the
 * binding.
 *
 * Ranking: by heat per resident byte, the heat being the bytes an arena
 * referenced in the last interval or its decaying rate, whichever is more,
 * so that an arena that turns hot ranks in after one interval.  Heat under
 * a page an interval is none: an arena whose rate has decayed below it
 * holds no room in the set, and an idle SICM_ARENA_ANYWHERE arena goes to
 * the cheapest memory.
 * Cost rule (ski rental): an arena that ranks in the set but sits off the
 * fast tier accrues, per interval, the bytes it referenced there of pages
 * it held before the interval (what it gained was first touches: an arena
 * written as it is made does not move for it); it moves once those reach a
 * third of the bytes the move costs (its resident bytes plus those of the
 * arenas it displaces): a referenced page was accessed at least once, a
 * move copies it once.  Hysteresis: an arena on the fast
 * tier ranks with a quarter more than its heat, and stays at least two
 * intervals after it moved.  A move the kernel or the room check refuses
 * leaves the arena where it was; the placer reports it and retries that
 * arena no sooner than 8 intervals later.  An arena the program moves
 * itself is pinned (SICM_AUTOPLACE_PIN) until set back to AUTO.
 *
 * Split: the room the set leaves goes to the hottest arena too large for
 * it, in part — the first bytes of its first window, in whole 2 MiB,
 * preferred on the fast tier — by the same cost rule on the part's share
 * of its accesses.  The rest of the arena stays where it is bound, and its
 * binding does not change (sicm_arena_get_devices(), and on_fast 0 in its
 * rates).  The part needs the heat held over two intervals in a row (data
 * written once never moves in part), grows once the room grew by a
 * quarter of it, and goes home whole when a promotion needs its room,
 * another arena ranks above it, or the budget no longer holds it.  One
 * arena at a time is split: a private arena of base pages, not
 * SICM_ARENA_ANYWHERE.  The part is chosen by address, not by heat within
 * the arena: the monitor measures arenas, not pages.
 *
 * The same placer starts without code change from the environment
 * variable SICM_AUTOPLACE, read by the first sicm_init() (sicm(7)).
 *
 * Beside the kernel's own tiering: NUMA balancing (kernel.numa_balancing,
 * 1 or the tiering mode 2) moves only pages with no binding of their own:
 * a bound arena's pages stay where they are (tests/numa/numa_coexist), and
 * a FIRST_TOUCH arena's pages, which have none, it may move (slowly: its
 * scanner spends a budget of address space per period, and most of an
 * arena's window is address space the arena does not use).  Demotion
 * (/sys/kernel/mm/numa/demotion_enabled) overrides bindings: when a node
 * fills, reclaim moves its coldest pages, a bound arena's too, to the next
 * lower tier (BENCHMARKS.md, "Beside the kernel's tiering").  Such pages
 * are off the arena's devices (sicm_arena_residency()) until the arena
 * moves again; the placer counts them where they are.  DAMON's schemes
 * on physical addresses (migrate_hot, migrate_cold) move any page, a
 * bound arena's too; the placer does not chase the pages they move (it
 * moves whole arenas), so the two do not fight in a loop.  When to use
 * which (BENCHMARKS.md, "the placer beside the kernel's tiering"): the
 * placer for arenas, without privilege, and for memory-only fast nodes
 * (HBM) that NUMA balancing never promotes to, since it promotes toward
 * the accessing CPU's node; NUMA balancing for data no arena holds, and
 * where the fast tier is the DRAM of the CPU that touches the data and
 * its hot pages are scattered within blocks (it promotes pages by their
 * accesses, the placer arenas, or the first bytes of one, by address:
 * hpcc above capacity memory); DAMON, system-wide by physical address.
 * Held to the default cpu_share, the placer measures arenas in huge pages
 * (SICM_ARENA_HUGEPAGES; the preload's pages=huge, sicm(7)) at short
 * intervals; many MiB in 4 KiB pages
 * lengthen them, and it then lags phases shorter than its interval.
 *
 * Returns 0, or -1 with errno (nothing started, nothing moved):
 *   EINVAL  c NULL; a device not from sicm_devices(), of huge pages or
 *           listed twice; interval_ms below 10; half_life 0; unknown
 *           arenas value; cpu_share not in 0 to 1; budget or reserve above the fast tier's
 *           capacity (with no device: the default fast tier's);
 *   EBUSY   the placer already runs (from this call or SICM_AUTOPLACE);
 *   ENOTSUP the kernel does not report referenced pages to this process
 *           (sicm_error_detail() says which check failed);
 *   EPERM   not initialized;
 *   EAGAIN  no thread could be started. */
SICM_API int sicm_autoplace_start(const sicm_autoplace_config *c);

/* Stop the placer, waiting for a move in progress to finish; arenas stay
 * where they are.  Returns 0, or -1 with errno ESRCH (not running). */
SICM_API int sicm_autoplace_stop(void);

/* What the placer did since it last started (sicm_stats_print() prints
 * the same, with its decisions). */
typedef struct sicm_autoplace_totals {
  int running;                 /* 1 while it runs */
  unsigned interval_ms;        /* the interval asked */
  unsigned interval_kept_ms;   /* the last one, longer when cpu_share asked it */
  double cpu_share;            /* the share of one core it may take, moves aside */
  double cpu_used;             /* the share it took, moves aside, to now (or its stop) */
  double cpu_seconds;          /* its thread's CPU time */
  double move_cpu_seconds;     /* the part its moves took */
  uint64_t intervals, moves, moves_refused;
} sicm_autoplace_totals;

/* The placer's totals.  Returns 0, or -1 with errno EINVAL (out NULL) or
 * ESRCH (no placer was started since the first sicm_init()). */
SICM_API int sicm_autoplace_get_totals(sicm_autoplace_totals *out);

/* Set how the placer treats the arena (enum sicm_autoplace_mode).  Returns
 * 0, or -1 with errno EINVAL (bad handle or mode) or ESTALE. */
SICM_API int sicm_arena_set_autoplace(sicm_arena sa, int mode);

#ifdef __cplusplus
}
#endif

#endif /* SICM_AUTOPLACE_H */
