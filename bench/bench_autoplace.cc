/* SPDX-License-Identifier: BSD-3-Clause */
// bench_autoplace.cc: how well the placer places, and what its monitor
// costs.  Run in the 4-node guest by `make bench-autoplace`.
//
// Trace/<shape>: eight arenas of 16 MiB on node 0, a fast-tier budget of
// two on node 2, the placer at a 200 ms interval.  A trace is a list of
// steps, one interval each; in a step each arena has its pages touched in
// a share given by the shape (an access is one touched page).  After the
// touches of a step the fraction of each arena resident on node 2 is read
// (sicm_arena_residency), and the step's accesses count as served fast in
// that proportion.  The oracle knows every step beforehand and holds the
// step's most accessed arenas that fit the budget, at no cost; its bytes
// moved count every arena entering or leaving its set.  Counters: the
// placer's share of accesses served fast, the oracle's, their ratio, and
// the bytes each moved.
//
// Monitor/huge:<0|1>: a compute loop summing 1 GiB of arenas (base
// pages, or transparent huge pages where the kernel gives them), timed in
// pairs of windows with and without the placer measuring (mode=monitor,
// 1 s interval): the median of the pairs' ratios is the monitor's cost.
#include <benchmark/benchmark.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "sicm.h"
#include "trace_shapes.h"

namespace {

using namespace traces;

constexpr int kFast = 2;

void TraceReplay(benchmark::State &state, const Trace *trace) {
  sicm_device *home = sicm_device_of_node(0, 0), *fast = sicm_device_of_node(kFast, 0);
  if (home == nullptr || fast == nullptr) {
    state.SkipWithError("needs the 4-node guest (nodes 0 and 2)");
    return;
  }
  for (auto _ : state) {
    std::vector<sicm_arena> arenas;
    std::vector<char *> data;
    for (unsigned i = 0; i < kArenas; i++) {
      arenas.push_back(sicm_arena_create(0, home));
      data.push_back((char *)sicm_arena_alloc(arenas.back(), kArenaBytes));
      if (data.back() == nullptr) {
        state.SkipWithError("allocation failed");
        return;
      }
      memset(data.back(), 1, kArenaBytes);
    }
    sicm_autoplace_config c;
    sicm_autoplace_config_init(&c);
    c.ndevices = 1;
    c.devices[0] = fast;
    c.budget = kBudgetArenas * kArenaBytes + (1 << 20);
    c.interval_ms = kIntervalMs;
    c.cpu_share = 1; /* placement against the oracle, at the asked interval */
    if (sicm_autoplace_start(&c) != 0) {
      state.SkipWithError(sicm_error_detail());
      return;
    }
    double served = 0, total = 0, oracle = 0, oracle_moved = 0;
    std::vector<unsigned> oracle_set;
    timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (unsigned s = 0; s < trace->steps; s++) {
      std::vector<double> share = trace->shape(s);
      for (unsigned i = 0; i < kArenas; i++) {
        size_t touched = (size_t)(share[i] * kPages);
        for (size_t p = 0; p < touched; p++) data[i][p * kPage]++;
      }
      for (unsigned i = 0; i < kArenas; i++) {
        size_t bytes[8] = {0};
        sicm_arena_residency(arenas[i], bytes, 8);
        size_t resident = 0;
        for (size_t b : bytes) resident += b;
        double accesses = share[i] * kPages;
        total += accesses;
        served += resident ? accesses * (double)bytes[kFast] / (double)resident : 0;
      }
      OracleStep(share, &oracle_set, &oracle, &oracle_moved);
      SleepNextStep(&next);
    }
    sicm_autoplace_stop();
    double moved = 0;
    for (sicm_arena a : arenas) {
      sicm_arena_rates r;
      sicm_arena_get_rates(a, &r);
      moved += (double)(r.moves_in + r.moves_out) * kArenaBytes;
      sicm_arena_destroy(a);
    }
    state.counters["placer_share"] = served / total;
    state.counters["oracle_share"] = oracle / total;
    state.counters["share_ratio"] = served / oracle;
    state.counters["placer_MiB_moved"] = moved / (1 << 20);
    state.counters["oracle_MiB_moved"] = oracle_moved / (1 << 20);
  }
}

double now_s() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

// One pass over the loop's data: a long per 64 bytes.
long loop_pass(const std::vector<long *> &data, size_t per) {
  long sum = 0;
  for (long *d : data)
    for (size_t i = 0; i < per / sizeof(long); i += 8) sum += d[i];
  return sum;
}

// The loop's mean pass time, in ns, over a window of `seconds`.
double loop_window(const std::vector<long *> &data, size_t per, double seconds) {
  const double start = now_s();
  unsigned passes = 0;
  long sum = 0;
  double t;
  do {
    sum += loop_pass(data, per);
    passes++;
  } while ((t = now_s()) - start < seconds);
  benchmark::DoNotOptimize(sum);
  return (t - start) * 1e9 / passes;
}

// Sums 1 GiB over arenas of 64 MiB, in base pages or transparent huge
// pages, in pairs of windows: one with the placer measuring (monitor
// mode, 1 s interval), one without, the order alternating from pair to
// pair.  The two halves of a pair are seconds apart, so drift of the
// machine (this host's loop times move several percent over minutes)
// falls on both alike; the median of the pairs' ratios is the cost.
void Monitor(benchmark::State &state) {
  const unsigned flags = state.range(0) ? SICM_ARENA_HUGEPAGES : SICM_ARENA_NOHUGEPAGES;
  const int pairs = (int)state.range(1);
  const double window_s = 3;
  sicm_device *home = sicm_device_of_node(sicm_node_self(), 0);
  std::vector<sicm_arena> arenas;
  std::vector<long *> data;
  const size_t per = 64 << 20, total = (size_t)1 << 30;
  for (size_t done = 0; done < total; done += per) {
    arenas.push_back(sicm_arena_create_devices(0, &home, 1, flags));
    data.push_back((long *)sicm_arena_alloc(arenas.back(), per));
    if (data.back() == nullptr) {
      state.SkipWithError("allocation failed");
      return;
    }
    memset(data.back(), 1, per);
  }
  sicm_autoplace_config c;
  sicm_autoplace_config_init(&c);
  c.interval_ms = 1000;
  c.monitor_only = 1;
  c.cpu_share = 1; /* what measuring every second costs the program */
  std::vector<double> ratios, off_ns;
  for (auto _ : state) {
    for (int r = 0; r < pairs; r++) {
      double ns[2];
      for (int half = 0; half < 2; half++) {
        const bool on = (half == 0) == (r % 2 == 0);
        if (on && sicm_autoplace_start(&c) != 0) {
          state.SkipWithError(sicm_error_detail());
          return;
        }
        ns[on] = loop_window(data, per, window_s);
        if (on) sicm_autoplace_stop();
      }
      ratios.push_back(ns[1] / ns[0]);
      off_ns.push_back(ns[0]);
      fprintf(stderr, "\rMonitor/huge:%d: pair %d of %d", (int)state.range(0), r + 1, pairs);
    }
    fprintf(stderr, "\n");
  }
  std::sort(ratios.begin(), ratios.end());
  std::sort(off_ns.begin(), off_ns.end());
  const size_t n = ratios.size();
  state.counters["ratio_median"] = ratios[n / 2];
  state.counters["ratio_q1"] = ratios[n / 4];
  state.counters["ratio_q3"] = ratios[3 * n / 4];
  state.counters["pairs"] = (double)n;
  state.counters["pass_ms_without"] = off_ns[n / 2] / 1e6;
  for (sicm_arena a : arenas) sicm_arena_destroy(a);
}

}  // namespace

int main(int argc, char **argv) {
  if (sicm_init() != 0) {
    fprintf(stderr, "sicm_init: %s\n", sicm_error_detail());
    return 1;
  }
  for (const Trace &t : kTraces)
    benchmark::RegisterBenchmark((std::string("Trace/") + t.name).c_str(), TraceReplay, &t)
        ->Iterations(1)
        ->Unit(benchmark::kSecond);
  // Pairs of windows: SICM_BENCH_MONITOR_PAIRS, or 21.
  const char *pairs = getenv("SICM_BENCH_MONITOR_PAIRS");
  const long npairs = pairs && atol(pairs) > 0 ? atol(pairs) : 21;
  benchmark::RegisterBenchmark("Monitor", Monitor)
      ->ArgNames({"huge", "pairs"})
      ->ArgsProduct({{0, 1}, {npairs}})
      ->Iterations(1)
      ->Unit(benchmark::kSecond);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return sicm_fini() == 0 ? 0 : 1;
}
