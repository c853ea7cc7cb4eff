/* SPDX-License-Identifier: BSD-3-Clause */
/* autoplace.c: the placer — a thread that each interval measures the arenas
 * that take part (autoplace_monitor.c), updates their decaying rates, asks
 * the plan (autoplace_plan.c) what moves, and moves them with migration
 * (sc_arena_move: the placer's moves do not pin).  Demotions run before
 * promotions, so the fast tier has the room when a promotion starts.
 * Every move, refused ones included, is kept for the report. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "autoplace.h"
#include "base_settings.h"

enum {
  MIN_STAY = 2,      /* intervals an arena stays after a move */
  RETRY_AFTER = 8,   /* intervals before an arena whose move was refused is tried again */
};
/* A page referenced in an interval was accessed at least once there, and
 * in a hot arena many times, while a move copies it once: the ski rental
 * counts each referenced byte three times (a move pays once the arena
 * referenced a third of the bytes it costs).  Twice would put a whole
 * arena displacing one of its size exactly at the bar, where the
 * monitor's sampling decides. */
static const double HYSTERESIS = 0.25, MOVE_WEIGHT = 1.0 / 3;
/* A split arena's part is whole huge pages: binding it never splits one. */
static const uint64_t SPLIT_GRAIN = 2 << 20;

/* What the placer keeps of one arena slot. */
typedef struct autoplace_track {
  uint64_t generation;          /* of the arena tracked; 0: none */
  unsigned nhome;
  unsigned home_flags;
  sicm_device *home[SICM_ARENA_DEVICES_MAX]; /* where it goes off the fast tier */
  uint64_t program_moves;       /* the arena's count when last seen */
  double rate;                  /* referenced bytes per interval, decaying */
  uint64_t regret;
  unsigned since_move, retry_in;
  int placed_elsewhere;         /* shared, and another process places it */
  /* On the fast tier: its resident bytes when its pages were last counted
   * (after a promotion, and whenever it grew since), and how many of
   * them were off the tier then (a promotion only part of which fit). */
  uint64_t counted_resident, off_fast;
  sicm_arena_rates rates;
} autoplace_track;

static struct {
  pthread_mutex_t lock;         /* start, stop */
  pthread_mutex_t sleep_lock;
  pthread_cond_t wake;
  int running, stop;
  pthread_t thread;
  sicm_autoplace_config config;
  sc_nodemask fast_nodes;
  autoplace_track *tracks;          /* SC_ARENA_SLOTS */
  sc_monitor *monitor;
  sc_monitor_bytes *sample;
  sc_plan_arena *plan;          /* scratch, SC_ARENA_SLOTS each */
  unsigned *plan_slot, *order;
  sc_autoplace_totals totals;
} placer = {.lock = PTHREAD_MUTEX_INITIALIZER,
            .sleep_lock = PTHREAD_MUTEX_INITIALIZER,
            .wake = PTHREAD_COND_INITIALIZER};

static int on_fast_tier(sicm_device *const *devs, int n) {
  return sc_autoplace_on_fast(&placer.fast_nodes, devs, n);
}

static void track_home(autoplace_track *t, sc_arena *a, sicm_device *const *devs, int n) {
  t->nhome = sc_autoplace_home(a, devs, n, &placer.fast_nodes, t->home, &t->home_flags);
}

/* Moves the arena of slot `slot` whole (part 0) on or off the fast tier,
 * or places `part` bytes of it there, the rest where it is; 0 or -1. */
static int autoplace_move(unsigned slot, int promote, uint64_t part, const char *why) {
  autoplace_track *t = &placer.tracks[slot];
  sc_arena *a = sc_arena_slots[slot];
  sicm_arena sa = sc_arena_handle(a, t->generation);
  sicm_device *from[SICM_ARENA_DEVICES_MAX];
  int nfrom = sicm_arena_get_devices(sa, from, SICM_ARENA_DEVICES_MAX);
  if (nfrom <= 0)
    return -1;
  sicm_device *const *to = promote ? placer.config.devices : t->home;
  unsigned nto = promote ? placer.config.ndevices : t->nhome;
  /* Preferred on the fast tier: what the arena allocates once the tier is
   * full falls back instead of meeting the OOM killer. */
  unsigned flags = promote ? SICM_ARENA_PREFERRED : t->home_flags;
  if (nto == 0)
    return -1;
  sicm_migration_report report, first = {0};
  int rc = 0;
  uint64_t c0 = sc_clock_ns(CLOCK_THREAD_CPUTIME_ID);
  if (!promote && (a->flags & SICM_ARENA_ANYWHERE) != 0) {
    /* First onto capacity memory where it has room for the arena, and
     * preferred there (what does not fit falls back); then bound to the
     * whole home, which moves whatever fell back onto the fast tier. */
    size_t free_bytes;
    if (to[0]->kind == SICM_KIND_CAPACITY && sicm_device_get_free_bytes(to[0], &free_bytes) == 0 &&
        free_bytes > t->rates.resident + placer.config.reserve)
      rc = sc_arena_move(sa, to, 1, SICM_ARENA_PREFERRED, &first);
  }
  if (rc == 0)
    rc = part ? sc_arena_move_part(sa, to, nto, part, &report)
              : sc_arena_move(sa, to, nto, flags, &report);
  else
    report = first;
  __atomic_fetch_add(&placer.totals.move_cpu_ns, sc_clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0,
                     __ATOMIC_RELAXED);
  if (rc == 0) {
    report.bytes_moved += first.bytes_moved;
    report.nanoseconds += first.nanoseconds;
  }
  int err = rc ? errno : 0;
  if (rc != 0 && (err == ESTALE || err == EPERM))
    return -1; /* destroyed, or taken by the program, meanwhile: not the placer's */
  t->since_move = 0;
  t->retry_in = rc ? RETRY_AFTER : 0;
  if (rc == 0 && promote)
    t->rates.moves_in++;
  else if (rc == 0)
    t->rates.moves_out++;
  __atomic_fetch_add(rc ? &placer.totals.moves_failed : &placer.totals.moves, 1, __ATOMIC_RELAXED);
  if (rc)
    sc_autoplace_decision_record(slot, a, from[0]->node, to[0]->node, err, &report,
                                 "%s; refused: %s", why, sicm_error_detail());
  else
    sc_autoplace_decision_record(slot, a, from[0]->node, to[0]->node, 0, &report, "%s", why);
  return rc;
}

/* Whether the arena takes part (live, checked by the caller). */
static int takes_part(const sc_arena *a) {
  /* Hugetlb: no base-page device could take it; fixed: the caller's memory. */
  if (a->library_default || a->huge_page || a->borrowed)
    return 0;
  if (__atomic_load_n(&a->autoplace_mode, __ATOMIC_RELAXED) == SICM_AUTOPLACE_EXCLUDE)
    return 0;
  return placer.config.arenas == SICM_AUTOPLACE_ALL || (a->flags & SICM_ARENA_AUTOPLACE) != 0;
}

/* Holds a's migrate_lock while a is still the arena of `generation`, so
 * that a shared arena's segment stays mapped (destroy ends an arena under
 * that lock); 0, lock not held, when it went or a migration holds it. */
static int shared_enter(sc_arena *a, uint64_t generation) {
  if (pthread_mutex_trylock(&a->migrate_lock) != 0)
    return 0;
  if (__atomic_load_n(&a->live_generation, __ATOMIC_ACQUIRE) == generation)
    return 1;
  pthread_mutex_unlock(&a->migrate_lock);
  return 0;
}

/* When the next interval may start, from `scheduled` (the fixed rate's
 * time): no sooner than the placer's work so far, at the cpu= share of a
 * core, has been earned since it started — a token bucket, so that the
 * share holds over any run.  Measuring is most of that work; the placer
 * measures less often rather than less.  Moves are left out: the cost rule
 * bounds each by the accesses it serves.  Aimed below the share, so that
 * the interval that just ended stays within it too. */
static uint64_t interval_next(uint64_t scheduled, uint64_t started, uint64_t work_cpu_ns) {
  double earned = (double)started + (double)work_cpu_ns / (placer.config.cpu_share * 0.8);
  double latest = (double)scheduled + 3600e9;
  return earned > (double)scheduled ? (uint64_t)(earned < latest ? earned : latest) : scheduled;
}

/* The placer thread's CPU time since `cpu0`, its moves' left out. */
static uint64_t work_cpu_since(uint64_t cpu0) {
  return sc_clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0 -
         __atomic_load_n(&placer.totals.move_cpu_ns, __ATOMIC_RELAXED);
}

/* Measures every arena that takes part, counting the monitor's time; 0
 * when this interval has no measure. */
static int interval_measure(void) {
  uint64_t t0 = sc_clock_ns(CLOCK_MONOTONIC);
  int measured = sc_monitor_sample(placer.monitor, takes_part, placer.sample) == 0;
  __atomic_fetch_add(&placer.totals.monitor_ns, sc_clock_ns(CLOCK_MONOTONIC) - t0, __ATOMIC_RELAXED);
  __atomic_store_n(&placer.totals.sample_every, placer.monitor->every, __ATOMIC_RELAXED);
  __atomic_fetch_add(&placer.totals.intervals, 1, __ATOMIC_RELAXED);
  return measured;
}

/* The live arena of `slot` that takes part, its generation and devices,
 * with its track started anew when the slot holds a new arena; NULL
 * (track cleared) when there is none. */
static sc_arena *track_arena(unsigned slot, uint64_t *generation, sicm_device **devs, int *ndevs) {
  autoplace_track *t = &placer.tracks[slot];
  sc_arena *a = __atomic_load_n(&sc_arena_slots[slot], __ATOMIC_ACQUIRE);
  *generation = a ? __atomic_load_n(&a->live_generation, __ATOMIC_ACQUIRE) : 0;
  if (*generation == 0 || !takes_part(a) ||
      (*ndevs = sicm_arena_get_devices(sc_arena_handle(a, *generation), devs,
                                       SICM_ARENA_DEVICES_MAX)) <= 0) {
    t->generation = 0;
    return NULL;
  }
  if (t->generation != *generation) { /* a new arena in this slot */
    memset(t, 0, sizeof *t);
    t->generation = *generation;
    t->program_moves = __atomic_load_n(&a->program_moves, __ATOMIC_RELAXED);
    t->since_move = MIN_STAY;
    track_home(t, a, devs, *ndevs);
  }
  uint64_t moves = __atomic_load_n(&a->program_moves, __ATOMIC_RELAXED);
  if (moves != t->program_moves) { /* migrate.c pinned it */
    t->program_moves = moves;
    sc_autoplace_decision_record(slot, a, -1, devs[0]->node, 0, NULL,
                                 "the program moved it: pinned");
  }
  return a;
}

/* The bytes the arena referenced this interval: this process's, or for a
 * shared arena every process's, summed. */
static uint64_t referenced_bytes(sc_arena *a, uint64_t generation, uint64_t mine,
                                 uint64_t elapsed_ns) {
  if (a->ops->rate_share == NULL || !shared_enter(a, generation))
    return mine;
  double seconds = (double)elapsed_ns / 1e9;
  uint64_t sum = a->ops->rate_share(a, (uint64_t)llround((double)mine / seconds),
                                    (unsigned)(elapsed_ns / 1000000));
  pthread_mutex_unlock(&a->migrate_lock);
  return (uint64_t)llround((double)sum * seconds); /* rounded: a page stays a page */
}

/* Updates the decaying rate and what the arena's rates show; 0 when the
 * arena was destroyed meanwhile (its track then starts from zero). */
static int rates_update(unsigned slot, sc_arena *a, uint64_t generation, int fast,
                        uint64_t elapsed_ns, double alpha) {
  autoplace_track *t = &placer.tracks[slot];
  double seconds = (double)elapsed_ns / 1e9; /* the interval may have been stretched */
  uint64_t referenced = referenced_bytes(a, generation, placer.sample->referenced[slot],
                                         elapsed_ns);
  t->rate += alpha * ((double)referenced - t->rate);
  sicm_arena_rates *r = &t->rates;
  r->intervals++;
  r->referenced_last = referenced;
  r->resident = placer.sample->resident[slot];
  r->referenced_per_second = t->rate / seconds;
  *(fast ? &r->fast_ns : &r->slow_ns) += elapsed_ns;
  r->on_fast = fast;
  if (__atomic_load_n(&a->live_generation, __ATOMIC_ACQUIRE) != generation) {
    t->generation = 0;
    return 0;
  }
  sc_arena_usage_store(a, r);
  if (t->since_move < MIN_STAY)
    t->since_move++;
  if (t->retry_in)
    t->retry_in--;
  return 1;
}

/* Whether this process's placer places the arena: automatic, and for a
 * shared arena, claimed by this process (said once when it is not). */
static int placed_here(unsigned slot, sc_arena *a, uint64_t generation, int node) {
  autoplace_track *t = &placer.tracks[slot];
  if (__atomic_load_n(&a->autoplace_mode, __ATOMIC_RELAXED) != SICM_AUTOPLACE_AUTO)
    return 0;
  if (a->ops->placer_claim == NULL || placer.config.monitor_only)
    return 1;
  if (!shared_enter(a, generation))
    return 0; /* moving, or gone: not this interval */
  int mine = a->ops->placer_claim(a);
  pthread_mutex_unlock(&a->migrate_lock);
  if (!mine && !t->placed_elsewhere)
    sc_autoplace_decision_record(slot, a, -1, node, 0, NULL,
                                 "shared: another process's placer places it");
  t->placed_elsewhere = !mine;
  return mine;
}

/* Updates every arena's track from this interval's measure and fills the
 * plan with those this placer may move; their count.  *on_fast_bytes: the
 * bytes they hold on the fast tier (pinned arenas' are not its room). */
static unsigned interval_update(uint64_t elapsed_ns, uint64_t *on_fast_bytes) {
  unsigned n = 0;
  *on_fast_bytes = 0;
  double alpha = 1 - pow(0.5, 1.0 / placer.config.half_life); /* the rates' decay */
  for (unsigned slot = 0; slot < SC_ARENA_SLOTS; slot++) {
    autoplace_track *t = &placer.tracks[slot];
    uint64_t generation;
    sicm_device *devs[SICM_ARENA_DEVICES_MAX];
    int ndevs;
    sc_arena *a = track_arena(slot, &generation, devs, &ndevs);
    if (a == NULL)
      continue;
    int fast = on_fast_tier(devs, ndevs);
    uint64_t before = t->rates.referenced_last, resident_before = t->rates.resident;
    if (!rates_update(slot, a, generation, fast, elapsed_ns, alpha) ||
        !placed_here(slot, a, generation, devs[0]->node))
      continue;
    uint64_t part = fast ? 0 : __atomic_load_n(&a->placer_part, __ATOMIC_RELAXED);
    uint64_t grown = t->rates.resident > resident_before ? t->rates.resident - resident_before : 0;
    *on_fast_bytes += fast || part > t->rates.resident ? t->rates.resident : part;
    placer.plan[n] = (sc_plan_arena){.resident = t->rates.resident,
                                     .referenced = t->rates.referenced_last,
                                     .referenced_before = before,
                                     .grown = grown,
                                     .rate = t->rate, .on_fast = fast,
                                     .anywhere = (a->flags & SICM_ARENA_ANYWHERE) != 0,
                                     .movable = t->since_move >= MIN_STAY && t->retry_in == 0,
                                     .regret = t->regret, .splittable = sc_autoplace_splittable(a),
                                     .part = part, .part_limit = sc_autoplace_part_limit(a)};
    placer.plan_slot[n++] = slot;
  }
  return n;
}

/* The budget: the configured one, never more than the fast tier's free
 * memory (plus what the placer's arenas hold there) less the reserve. */
static uint64_t interval_budget(uint64_t on_fast_bytes) {
  uint64_t room = on_fast_bytes + sc_autoplace_fast_free(&placer.config);
  room = room > placer.config.reserve ? room - placer.config.reserve : 0;
  uint64_t budget = placer.config.budget && placer.config.budget < room ? placer.config.budget : room;
  __atomic_store_n(&placer.totals.budget, budget, __ATOMIC_RELAXED);
  return budget;
}

/* Whether an ANYWHERE arena the plan leaves off the fast tier is bound
 * elsewhere than its home (bindings keep their devices' order). */
static int away_from_home(const sc_plan_arena *p, unsigned slot) {
  autoplace_track *t = &placer.tracks[slot];
  if (p->action != SC_PLAN_STAY || !p->anywhere || p->on_fast || !p->movable || p->wanted ||
      t->nhome == 0)
    return 0;
  sicm_device *devs[SICM_ARENA_DEVICES_MAX];
  int n = sicm_arena_get_devices(sc_arena_handle(sc_arena_slots[slot], t->generation), devs,
                                 SICM_ARENA_DEVICES_MAX);
  return n > 0 && ((unsigned)n != t->nhome || devs[0] != t->home[0]);
}

/* Counts the arena's pages off the fast tier: after a promotion, and
 * whenever it grew since (what it allocates when the tier is full falls
 * back elsewhere). */
static void pages_count(unsigned slot) {
  autoplace_track *t = &placer.tracks[slot];
  sicm_arena sa = sc_arena_handle(sc_arena_slots[slot], t->generation);
  uint64_t off;
  if (sc_autoplace_bytes_off_fast(sa, &placer.fast_nodes, &off) == 0) {
    t->off_fast = off;
    t->counted_resident = t->rates.resident;
  }
}

/* An arena bound to the fast tier with pages off it (a promotion only
 * part of which fit, or growth while the tier was full) moves again once
 * the tier has room for the rest: judged by its pages, not its binding. */
static void promotion_complete(unsigned slot, const sc_plan_arena *p) {
  autoplace_track *t = &placer.tracks[slot];
  if (!p->on_fast || !p->movable || p->action != SC_PLAN_STAY)
    return;
  if (t->rates.resident > t->counted_resident)
    pages_count(slot);
  if (t->off_fast == 0 || sc_autoplace_fast_free(&placer.config) < t->off_fast + placer.config.reserve)
    return;
  char why[112];
  snprintf(why, sizeof why, "completing its promotion: %llu bytes were off the fast tier",
           (unsigned long long)t->off_fast);
  if (autoplace_move(slot, 1, 0, why) == 0)
    pages_count(slot);
}

/* Carries out the plan's n actions: demotions first, so that the fast
 * tier has the room when a promotion starts, and no promotion in an
 * interval where a demotion was refused (its room may depend on it). */
static void interval_apply(unsigned n) {
  int demotion_failed = 0;
  for (unsigned i = 0; i < n; i++) {
    sc_plan_arena *p = &placer.plan[i];
    unsigned slot = placer.plan_slot[i];
    placer.tracks[slot].regret = p->regret;
    const char *why = p->action == SC_PLAN_SHED ? "the fast tier's budget shrank"
                      : p->part ? "its part leaves the fast tier"
                                : "colder than an arena that needs the room";
    if (p->action == SC_PLAN_DEMOTE || p->action == SC_PLAN_SHED)
      demotion_failed |= autoplace_move(slot, 0, 0, why) != 0;
    else if (away_from_home(p, slot))
      autoplace_move(slot, 0, 0, "not in active use: to the cheapest memory");
  }
  char why[112];
  for (unsigned i = 0; i < n && !demotion_failed; i++) {
    sc_plan_arena *p = &placer.plan[i];
    if (p->action == SC_PLAN_SPLIT) {
      snprintf(why, sizeof why,
               "hot, larger than the room: %llu bytes of its %llu on the fast tier",
               (unsigned long long)p->part_wanted, (unsigned long long)p->resident);
      autoplace_move(placer.plan_slot[i], 1, p->part_wanted, why);
      continue;
    }
    if (p->action != SC_PLAN_PROMOTE) {
      promotion_complete(placer.plan_slot[i], p);
      continue;
    }
    snprintf(why, sizeof why,
             "hot: referenced %llu bytes off the fast tier, a third or more of the %llu the move costs",
             (unsigned long long)p->regret, (unsigned long long)p->cost);
    if (autoplace_move(placer.plan_slot[i], 1, 0, why) == 0)
      pages_count(placer.plan_slot[i]);
  }
}

/* One interval: measure, update, budget, plan, move. */
static void autoplace_interval(uint64_t elapsed_ns) {
  if (!interval_measure())
    return;
  uint64_t on_fast_bytes;
  unsigned n = interval_update(elapsed_ns, &on_fast_bytes);
  if (placer.config.monitor_only)
    return;
  sc_plan_params params = {.budget = interval_budget(on_fast_bytes), .hysteresis = HYSTERESIS,
                           .move_weight = MOVE_WEIGHT, .split_grain = SPLIT_GRAIN,
                           .heat_floor = sc_page_size()};
  sc_plan(placer.plan, n, &params, placer.order);
  interval_apply(n);
}

static void *placer_main(void *arg) {
  (void)arg;
  /* The first interval counts from now. */
  uint64_t started = sc_clock_ns(CLOCK_REALTIME), cpu0 = sc_clock_ns(CLOCK_THREAD_CPUTIME_ID);
  sc_monitor_sample(placer.monitor, takes_part, placer.sample);
  /* What the arenas hold now: an arena made later grows from nothing. */
  for (unsigned slot = 0; slot < SC_ARENA_SLOTS; slot++) {
    uint64_t generation;
    sicm_device *devs[SICM_ARENA_DEVICES_MAX];
    int ndevs;
    if (track_arena(slot, &generation, devs, &ndevs) != NULL)
      placer.tracks[slot].rates.resident = placer.sample->resident[slot];
  }
  uint64_t interval_ns = placer.config.interval_ms * 1000000ull;
  /* Intervals start at a fixed rate, the time measuring and moving take
   * included; one that overran starts the next at once, never a burst. */
  uint64_t next = interval_next(started + interval_ns, started, work_cpu_since(cpu0));
  __atomic_store_n(&placer.totals.interval_kept_ms, (next - started) / 1000000, __ATOMIC_RELAXED);
  __atomic_store_n(&placer.totals.cpu_ns, sc_clock_ns(CLOCK_THREAD_CPUTIME_ID), __ATOMIC_RELAXED);
  sc_autoplace_totals_publish(&placer.totals);
  uint64_t last = sc_clock_ns(CLOCK_MONOTONIC);
  pthread_mutex_lock(&placer.sleep_lock);
  while (!placer.stop) {
    struct timespec until = {.tv_sec = (time_t)(next / 1000000000u),
                             .tv_nsec = (long)(next % 1000000000u)};
    while (!placer.stop && pthread_cond_timedwait(&placer.wake, &placer.sleep_lock, &until) == 0) {
    }
    if (placer.stop)
      break;
    pthread_mutex_unlock(&placer.sleep_lock);
    uint64_t now = sc_clock_ns(CLOCK_MONOTONIC);
    autoplace_interval(now - last);
    last = now;
    __atomic_store_n(&placer.totals.cpu_ns, sc_clock_ns(CLOCK_THREAD_CPUTIME_ID),
                     __ATOMIC_RELAXED);
    uint64_t real = sc_clock_ns(CLOCK_REALTIME), previous = next;
    next = interval_next(next + interval_ns > real ? next + interval_ns : real, started,
                         work_cpu_since(cpu0));
    __atomic_store_n(&placer.totals.interval_kept_ms, (next - previous) / 1000000,
                     __ATOMIC_RELAXED);
    sc_autoplace_totals_publish(&placer.totals);
    pthread_mutex_lock(&placer.sleep_lock);
  }
  pthread_mutex_unlock(&placer.sleep_lock);
  return NULL;
}

static void placer_free(void) {
  free(placer.tracks);
  free(placer.monitor);
  free(placer.sample);
  free(placer.plan);
  free(placer.plan_slot);
  free(placer.order);
  placer.tracks = NULL, placer.monitor = NULL, placer.sample = NULL, placer.plan = NULL;
  placer.plan_slot = placer.order = NULL;
}

/* Starts the placer with a checked configuration; placer.lock held. */
static int placer_start(const sicm_autoplace_config *c) {
  if (placer.running)
    return sc_fail(EBUSY, "the placer already runs");
  placer.monitor = malloc(sizeof *placer.monitor);
  if (placer.monitor == NULL)
    return sc_fail(ENOMEM, "out of memory for the placer");
  if (sc_monitor_check(placer.monitor, c->interval_ms) != 0) {
    placer_free();
    return -1;
  }
  if (sc_autoplace_config_complete(c, &placer.config) != 0) {
    placer_free();
    return -1;
  }
  memset(&placer.fast_nodes, 0, sizeof placer.fast_nodes);
  for (unsigned i = 0; i < placer.config.ndevices; i++)
    sc_nodemask_add(&placer.fast_nodes, placer.config.devices[i]->node);
  placer.tracks = calloc(SC_ARENA_SLOTS, sizeof *placer.tracks);
  placer.sample = malloc(sizeof *placer.sample);
  placer.plan = calloc(SC_ARENA_SLOTS, sizeof *placer.plan);
  placer.plan_slot = calloc(SC_ARENA_SLOTS, sizeof *placer.plan_slot);
  placer.order = calloc(SC_ARENA_SLOTS, sizeof *placer.order);
  if (!placer.tracks || !placer.sample || !placer.plan || !placer.plan_slot || !placer.order) {
    placer_free();
    return sc_fail(ENOMEM, "out of memory for the placer");
  }
  placer.totals = (sc_autoplace_totals){.running = 1, .monitor_only = c->monitor_only,
                                     .interval_ms = placer.config.interval_ms,
                                     .interval_kept_ms = placer.config.interval_ms,
                                     .cpu_share = placer.config.cpu_share,
                                     .start_unix_ns = sc_clock_ns(CLOCK_REALTIME),
                                     .sample_every = 1,
                                     .fast_node = placer.config.devices[0]->node};
  placer.stop = 0;
  if (pthread_create(&placer.thread, NULL, placer_main, NULL) != 0) {
    placer_free();
    return sc_fail(EAGAIN, "no thread could be started for the placer");
  }
  placer.running = 1;
  sc_autoplace_totals_publish(&placer.totals);
  return 0;
}

int sicm_autoplace_start(const sicm_autoplace_config *c) {
  if (sc_autoplace_config_check(c) != 0)
    return -1;
  pthread_mutex_lock(&placer.lock);
  int rc = placer_start(c);
  int err = errno;
  pthread_mutex_unlock(&placer.lock);
  errno = err;
  return rc;
}

/* Gives up what the placer published or claimed in shared arenas. */
static void autoplace_release_all(void) {
  for (unsigned slot = 0; slot < SC_ARENA_SLOTS; slot++) {
    sc_arena *a = __atomic_load_n(&sc_arena_slots[slot], __ATOMIC_ACQUIRE);
    uint64_t generation = placer.tracks[slot].generation;
    if (a == NULL || generation == 0 || a->ops->placer_release == NULL)
      continue;
    pthread_mutex_lock(&a->migrate_lock);
    if (__atomic_load_n(&a->live_generation, __ATOMIC_ACQUIRE) == generation)
      a->ops->placer_release(a);
    pthread_mutex_unlock(&a->migrate_lock);
  }
}

static int placer_stop(void) {
  pthread_mutex_lock(&placer.lock);
  if (!placer.running) {
    pthread_mutex_unlock(&placer.lock);
    return sc_fail(ESRCH, "the placer does not run");
  }
  pthread_mutex_lock(&placer.sleep_lock);
  placer.stop = 1;
  pthread_cond_signal(&placer.wake);
  pthread_mutex_unlock(&placer.sleep_lock);
  pthread_join(placer.thread, NULL);
  autoplace_release_all();
  placer.running = 0;
  placer.totals.running = 0;
  sc_autoplace_totals_publish(&placer.totals);
  placer_free();
  pthread_mutex_unlock(&placer.lock);
  return 0;
}

int sicm_autoplace_stop(void) { return placer_stop(); }

void sc_autoplace_setup(void) {
  const char *text = sc_env_get("SICM_AUTOPLACE");
  int on;
  if (text == NULL || (sc_setting_bool(text, &on) == 0 && !on))
    return;
  sicm_autoplace_config c;
  int rc = sicm_autoplace_config_parse(&c, text);
  if (rc == 0) {
    pthread_mutex_lock(&placer.lock);
    rc = placer_start(&c);
    pthread_mutex_unlock(&placer.lock);
  }
  if (rc != 0)
    fprintf(stderr, "libsicm: SICM_AUTOPLACE=\"%.80s\" ignored: %s; no automatic placement\n",
            text, sicm_error_detail());
}

void sc_autoplace_before_fini(void) {
  if (__atomic_load_n(&placer.running, __ATOMIC_RELAXED))
    placer_stop();
}

void sc_autoplace_fork_child(void) {
  /* The thread is the parent's; what it allocated stays with the child. */
  pthread_mutex_init(&placer.lock, NULL);
  pthread_mutex_init(&placer.sleep_lock, NULL);
  pthread_cond_init(&placer.wake, NULL);
  placer.running = 0;
  placer.totals.running = 0;
  sc_autoplace_totals_publish(&placer.totals);
}
