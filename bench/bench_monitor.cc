/* SPDX-License-Identifier: BSD-3-Clause */
// bench_monitor.cc: what the placer's measuring costs as the process
// grows.  `make bench-monitor` (host).
//
// Monitor/resident_gib:<G>/huge:<0|1>/arenas:<N>/cpu_pct:<P>: a process
// holding G GiB resident outside any arena (an anonymous mapping touched
// whole, in base pages or transparent huge pages), N arenas of one touched
// 64 KiB block each, and the placer measuring them (mode=monitor, 1 s
// interval, cpu=P%) for a window of wall time: 30 s, or ten of the
// intervals the placer keeps when those are longer (a share holds over a
// run, within the cost of the interval that ended last).  Counters: the placer
// thread's CPU time as a share of one core over the window (`cpu_share`,
// the bound is P%), the interval it kept, and its intervals.  Each case
// runs with cpu=1% and, as its peer in the same process, cpu=100% (no
// bound): the peer's share is what measuring costs unbounded.
#include <benchmark/benchmark.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <vector>

#include "sicm.h"

namespace {

constexpr double kWindowSeconds = 30, kWindowIntervals = 10, kWindowMostSeconds = 400;

// The resident memory outside arenas, made once per size and page kind.
struct Resident {
  size_t gib = 0;
  int huge = -1;
  char *p = nullptr;
  void Make(size_t g, int h) {
    if (g == gib && h == huge) return;
    if (p != nullptr) munmap(p, gib << 30);
    gib = g;
    huge = h;
    p = (char *)mmap(nullptr, g << 30, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      p = nullptr;
      return;
    }
    madvise(p, g << 30, h ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    for (size_t off = 0; off < (g << 30); off += 4096) p[off] = 1;
  }
} resident;

// The interval the running placer keeps, in seconds.
double KeptSeconds() {
  sicm_autoplace_totals t;
  return sicm_autoplace_get_totals(&t) == 0 ? t.interval_kept_ms / 1000.0 : 0;
}

void BM_Monitor(benchmark::State &state) {
  size_t gib = (size_t)state.range(0);
  int huge = (int)state.range(1);
  unsigned narenas = (unsigned)state.range(2);
  double share = (double)state.range(3) / 100;
  resident.Make(gib, huge);
  if (resident.p == nullptr) {
    state.SkipWithError("no memory for the resident block");
    return;
  }
  sicm_device *dev = sicm_device_of_node(sicm_node_self(), 0);
  std::vector<sicm_arena> arenas;
  for (unsigned i = 0; i < narenas; i++) {
    sicm_arena a = sicm_arena_create(0, dev);
    if (a == nullptr) break;
    memset(sicm_arena_alloc(a, 64 << 10), 1, 64 << 10);
    arenas.push_back(a);
  }
  sicm_autoplace_config cfg;
  sicm_autoplace_config_init(&cfg);
  cfg.monitor_only = 1;
  cfg.interval_ms = 1000;
  cfg.cpu_share = share;
  double used = 0, kept = 0, intervals = 0;
  for (auto _ : state) {
    if (sicm_autoplace_start(&cfg) != 0) {
      state.SkipWithError(sicm_error_detail());
      break;
    }
    double waited = 0;
    while (waited < kWindowMostSeconds &&
           (waited < kWindowSeconds ||
            waited < kWindowIntervals * KeptSeconds())) {
      usleep(1000 * 1000);
      waited += 1;
    }
    sicm_autoplace_stop(); /* the totals stay, to the stop */
    sicm_autoplace_totals t;
    sicm_autoplace_get_totals(&t);
    used = t.cpu_used;
    kept = t.interval_kept_ms;
    intervals = (double)t.intervals;
    state.SetIterationTime(waited);
  }
  for (sicm_arena a : arenas) sicm_arena_destroy(a);
  state.counters["arenas"] = (double)arenas.size();
  state.counters["cpu_share"] = used;
  state.counters["cpu_bound"] = share;
  state.counters["interval_kept_ms"] = kept;
  state.counters["intervals"] = intervals;
}

// Each case with its peer next to it, the many-arena cases last: the
// arenas a case destroys leave mappings that later cases walk too.
void Cases(benchmark::internal::Benchmark *b) {
  for (int gib : {1, 4, 16})
    for (int huge : {0, 1})
      for (int pct : {1, 100}) b->Args({gib, huge, 10, pct});
  for (int n : {1000, 4000})
    for (int pct : {1, 100}) b->Args({1, 0, n, pct});
  b->ArgNames({"resident_gib", "huge", "arenas", "cpu_pct"})->UseManualTime()->Iterations(1);
}
BENCHMARK(BM_Monitor)->Apply(Cases);

}  // namespace

int main(int argc, char **argv) {
  if (sicm_init() != 0) {
    fprintf(stderr, "bench_monitor: %s\n", sicm_error_detail());
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return sicm_fini() == 0 ? 0 : 1;
}
