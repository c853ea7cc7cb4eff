/* SPDX-License-Identifier: BSD-3-Clause */
/* autoplace_report.c: what the placer did, kept for the report — its
 * totals (copied whole under one lock, so that a report never shows half
 * of an interval) and a ring of its newest decisions, refused moves
 * included — and that part of sicm_stats_print, in text or JSON. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "autoplace.h"

static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;
static sc_autoplace_decision decisions[SC_AUTOPLACE_DECISIONS_KEPT];
static uint64_t decisions_made; /* decisions[made % KEPT] is the next */
static sc_autoplace_totals totals;

void sc_autoplace_report_fork_lock(void) { pthread_mutex_lock(&report_lock); }

/* The forking thread holds the lock in the child too: it unlocks it there. */
void sc_autoplace_report_fork_unlock(void) { pthread_mutex_unlock(&report_lock); }

void sc_autoplace_decision_record(unsigned slot, sc_arena *a, int from, int to, int error,
                                  const sicm_migration_report *r, const char *fmt, ...) {
  sc_autoplace_decision d = {.unix_ns = sc_clock_ns(CLOCK_REALTIME), .slot = slot,
                             .from_node = from, .to_node = to, .error = error};
  sc_arena_name_copy(a, d.name);
  if (r != NULL) {
    d.bytes = r->bytes_moved;
    d.ns = r->nanoseconds;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d.why, sizeof d.why, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&report_lock);
  decisions[decisions_made++ % SC_AUTOPLACE_DECISIONS_KEPT] = d;
  pthread_mutex_unlock(&report_lock);
}

void sc_autoplace_totals_publish(const sc_autoplace_totals *t) {
  sc_autoplace_totals copy = {0};
  copy.running = t->running;
  copy.monitor_only = t->monitor_only;
  copy.interval_ms = t->interval_ms;
  copy.interval_kept_ms = __atomic_load_n(&t->interval_kept_ms, __ATOMIC_RELAXED);
  copy.cpu_share = t->cpu_share;
  copy.cpu_ns = __atomic_load_n(&t->cpu_ns, __ATOMIC_RELAXED);
  copy.move_cpu_ns = __atomic_load_n(&t->move_cpu_ns, __ATOMIC_RELAXED);
  copy.published_unix_ns = sc_clock_ns(CLOCK_REALTIME);
  copy.fast_node = t->fast_node;
  copy.start_unix_ns = t->start_unix_ns;
  copy.sample_every = __atomic_load_n(&t->sample_every, __ATOMIC_RELAXED);
  copy.budget = __atomic_load_n(&t->budget, __ATOMIC_RELAXED);
  copy.intervals = __atomic_load_n(&t->intervals, __ATOMIC_RELAXED);
  copy.monitor_ns = __atomic_load_n(&t->monitor_ns, __ATOMIC_RELAXED);
  copy.moves = __atomic_load_n(&t->moves, __ATOMIC_RELAXED);
  copy.moves_failed = __atomic_load_n(&t->moves_failed, __ATOMIC_RELAXED);
  pthread_mutex_lock(&report_lock);
  totals = copy;
  pthread_mutex_unlock(&report_lock);
}

/* The share of one core the placer's thread took from its start to now
 * (to its stop, when stopped), moves left out: what the cpu= share bounds.
 * Between two publications a running placer sleeps, so its CPU time of
 * the last publication holds until now. */
static double cpu_used(const sc_autoplace_totals *t) {
  uint64_t end = t->running ? sc_clock_ns(CLOCK_REALTIME) : t->published_unix_ns;
  uint64_t work = t->cpu_ns > t->move_cpu_ns ? t->cpu_ns - t->move_cpu_ns : 0;
  return end > t->start_unix_ns ? (double)work / (double)(end - t->start_unix_ns) : 0;
}

static void totals_print(FILE *out, int json, const sc_autoplace_totals *t, uint64_t dropped) {
  if (json) {
    fprintf(out, ", \"placer\": {\"started\": %s, \"start_time\": %.6f, \"running\": %s, "
                 "\"mode\": \"%s\", "
                 "\"fast_node\": %d, \"interval_ms\": %u, \"interval_kept_ms\": %u, "
                 "\"cpu_share\": %g, \"cpu_seconds\": %.6f, \"move_cpu_seconds\": %.6f, "
                 "\"cpu_used\": %.6f, "
                 "\"budget\": %llu, \"intervals\": %llu, "
                 "\"monitor_seconds\": %.6f, \"sample_every\": %u, "
                 "\"moves\": %llu, \"moves_refused\": %llu, "
                 "\"decisions_dropped\": %llu}, \"decisions\": [",
            t->interval_ms ? "true" : "false", (double)t->start_unix_ns / 1e9,
            t->running ? "true" : "false",
            t->monitor_only ? "monitor" : "place", t->fast_node, t->interval_ms,
            t->interval_kept_ms, t->cpu_share, (double)t->cpu_ns / 1e9,
            (double)t->move_cpu_ns / 1e9, cpu_used(t),
            (unsigned long long)t->budget, (unsigned long long)t->intervals,
            (double)t->monitor_ns / 1e9, t->sample_every, (unsigned long long)t->moves,
            (unsigned long long)t->moves_failed, (unsigned long long)dropped);
  } else if (t->interval_ms) {
    fprintf(out, "placer: %s, %s, fast node %d, interval %u ms (kept %u ms for cpu=%g%%), "
                 "budget %llu; %llu intervals, cpu %.6f s (moves %.6f s; the rest %.3f%% of a "
                 "core), "
                 "monitor %.6f s, sampling 1 chunk in %u; "
                 "%llu moves, %llu refused\n",
            t->running ? "running" : "stopped", t->monitor_only ? "monitor only" : "placing",
            t->fast_node, t->interval_ms, t->interval_kept_ms, t->cpu_share * 100,
            (unsigned long long)t->budget, (unsigned long long)t->intervals,
            (double)t->cpu_ns / 1e9, (double)t->move_cpu_ns / 1e9, cpu_used(t) * 100,
            (double)t->monitor_ns / 1e9,
            t->sample_every, (unsigned long long)t->moves, (unsigned long long)t->moves_failed);
  }
}

int sicm_autoplace_get_totals(sicm_autoplace_totals *out) {
  if (out == NULL)
    return sc_fail(EINVAL, "sicm_autoplace_get_totals: out is NULL");
  pthread_mutex_lock(&report_lock);
  sc_autoplace_totals t = totals;
  pthread_mutex_unlock(&report_lock);
  if (t.interval_ms == 0)
    return sc_fail(ESRCH, "no placer was started");
  *out = (sicm_autoplace_totals){.running = t.running,
                                 .interval_ms = t.interval_ms,
                                 .interval_kept_ms = t.interval_kept_ms,
                                 .cpu_share = t.cpu_share,
                                 .cpu_used = cpu_used(&t),
                                 .cpu_seconds = (double)t.cpu_ns / 1e9,
                                 .move_cpu_seconds = (double)t.move_cpu_ns / 1e9,
                                 .intervals = t.intervals,
                                 .moves = t.moves,
                                 .moves_refused = t.moves_failed};
  return 0;
}

static void decision_print(FILE *out, int json, const sc_autoplace_decision *d, int first) {
  if (json)
    fprintf(out, "%s{\"time\": %.6f, \"arena\": %u, \"name\": \"%s\", \"from\": %d, \"to\": %d, "
                 "\"error\": %d, \"bytes\": %llu, \"seconds\": %.6f, \"why\": \"",
            first ? "" : ", ", (double)d->unix_ns / 1e9, d->slot, d->name, d->from_node,
            d->to_node, d->error, (unsigned long long)d->bytes, (double)d->ns / 1e9);
  else
    fprintf(out, "  decision %.6f: arena %u%s%s: node %d -> %d, %llu bytes in %.6f s%s: ",
            (double)d->unix_ns / 1e9, d->slot, d->name[0] ? " " : "", d->name, d->from_node,
            d->to_node, (unsigned long long)d->bytes, (double)d->ns / 1e9,
            d->error ? " (refused)" : "");
  for (const char *c = d->why; *c; c++) /* JSON-safe: no quote, backslash or control */
    fputc(*c == '"' || *c == '\\' || (unsigned char)*c < 0x20 ? '\'' : *c, out);
  fputs(json ? "\"}" : "\n", out);
}

void sc_autoplace_report_print(FILE *out, int json) {
  pthread_mutex_lock(&report_lock);
  uint64_t made = decisions_made;
  uint64_t first = made > SC_AUTOPLACE_DECISIONS_KEPT ? made - SC_AUTOPLACE_DECISIONS_KEPT : 0;
  totals_print(out, json, &totals, first);
  for (uint64_t i = first; i < made; i++)
    decision_print(out, json, &decisions[i % SC_AUTOPLACE_DECISIONS_KEPT], i == first);
  if (json)
    fputc(']', out);
  pthread_mutex_unlock(&report_lock);
}
