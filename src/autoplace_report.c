/* SPDX-License-Identifier: BSD-3-Clause */
/* autoplace_report.c: what the placer did, kept for the report — its
 * totals (copied whole under one lock, so that a report never shows half
 * of an interval) and a ring of its newest decisions, refused moves
 * included — and that part of sicm_stats_print, in text or JSON. */
#include <pthread.h>
#include <stdio.h>

#include "autoplace.h"

static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;
static sc_autoplace_decision decisions[SC_AUTOPLACE_DECISIONS_KEPT];
static uint64_t decisions_made; /* decisions[made % KEPT] is the next */
static sc_autoplace_totals totals;

void sc_autoplace_report_fork_lock(void) { pthread_mutex_lock(&report_lock); }

/* The forking thread holds the lock in the child too: it unlocks it there. */
void sc_autoplace_report_fork_unlock(void) { pthread_mutex_unlock(&report_lock); }

void sc_autoplace_decision_keep(const sc_autoplace_decision *d) {
  pthread_mutex_lock(&report_lock);
  decisions[decisions_made++ % SC_AUTOPLACE_DECISIONS_KEPT] = *d;
  pthread_mutex_unlock(&report_lock);
}

void sc_autoplace_totals_publish(const sc_autoplace_totals *t) {
  sc_autoplace_totals copy = {0};
  copy.running = t->running;
  copy.monitor_only = t->monitor_only;
  copy.interval_ms = t->interval_ms;
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

static void totals_print(FILE *out, int json, const sc_autoplace_totals *t, uint64_t dropped) {
  if (json) {
    fprintf(out, ", \"placer\": {\"started\": %s, \"start_time\": %.6f, \"running\": %s, "
                 "\"mode\": \"%s\", "
                 "\"fast_node\": %d, \"interval_ms\": %u, \"budget\": %llu, \"intervals\": %llu, "
                 "\"monitor_seconds\": %.6f, \"sample_every\": %u, "
                 "\"moves\": %llu, \"moves_refused\": %llu, "
                 "\"decisions_dropped\": %llu}, \"decisions\": [",
            t->interval_ms ? "true" : "false", (double)t->start_unix_ns / 1e9,
            t->running ? "true" : "false",
            t->monitor_only ? "monitor" : "place", t->fast_node, t->interval_ms,
            (unsigned long long)t->budget, (unsigned long long)t->intervals,
            (double)t->monitor_ns / 1e9, t->sample_every, (unsigned long long)t->moves,
            (unsigned long long)t->moves_failed, (unsigned long long)dropped);
  } else if (t->interval_ms) {
    fprintf(out, "placer: %s, %s, fast node %d, interval %u ms, budget %llu; %llu intervals, "
                 "monitor %.6f s, sampling 1 chunk in %u; "
                 "%llu moves, %llu refused\n",
            t->running ? "running" : "stopped", t->monitor_only ? "monitor only" : "placing",
            t->fast_node, t->interval_ms, (unsigned long long)t->budget,
            (unsigned long long)t->intervals, (double)t->monitor_ns / 1e9, t->sample_every,
            (unsigned long long)t->moves, (unsigned long long)t->moves_failed);
  }
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
