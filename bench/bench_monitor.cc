/* SPDX-License-Identifier: BSD-3-Clause */
// bench_monitor.cc: what the placer's measuring costs, and how soon it
// sees an arena turn hot, as the process grows.  `make bench-monitor`
// (host; in a guest with SICM_MONITOR_GIB).
//
// Monitor/resident_gib:<G>/inside:<0|1>/huge:<0|1>/arenas:<N>/cpu_pct:<P>:
// a process holding G GiB resident (in base pages or transparent huge
// pages), outside any arena (an anonymous mapping) or inside one cold
// arena; N arenas of one touched 64 KiB block each; and a 64 MiB arena,
// touched once.  The placer measures them (mode=monitor, 1 s interval,
// cpu=P%) for a window of wall time: 30 s, or ten of the intervals it
// keeps when those are longer.  A third of the way in and half an
// interval more (the middle of an interval, on average), a thread starts
// writing the 64 MiB arena over and over: the phase change.  Counters:
// the placer thread's CPU time as a share of one core over the window
// (`cpu_share`, the bound is P%), the interval it kept, its intervals, and
// `react_s`, the seconds from the phase change to the first interval that
// reads the arena as hot (referenced bytes at least half its resident
// ones): from then on the placer ranks it first (-1: not within the
// window).  Each case runs with cpu=1% and, as its peer in the same
// process, cpu=100% (no bound): the peer's share is what measuring costs
// unbounded.
#include <benchmark/benchmark.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "sicm.h"

namespace {

constexpr double kWindowSeconds = 30, kWindowIntervals = 10, kWindowMostSeconds = 400;
constexpr size_t kHotBytes = 64 << 20;

// The resident memory outside arenas, made once per size and page kind.
struct Resident {
  size_t gib = 0;
  int huge = -1;
  char *p = nullptr;
  void Make(size_t g, int h) {
    if (g == gib && h == huge) return;
    Drop();
    p = (char *)mmap(nullptr, g << 30, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      p = nullptr;
      return;
    }
    gib = g;
    huge = h;
    madvise(p, g << 30, h ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    for (size_t off = 0; off < (g << 30); off += 4096) p[off] = 1;
  }
  void Drop() {
    if (p != nullptr) munmap(p, gib << 30);
    p = nullptr;
    gib = 0;
    huge = -1;
  }
} resident;

// The interval the running placer keeps, in seconds.
double KeptSeconds() {
  sicm_autoplace_totals t;
  return sicm_autoplace_get_totals(&t) == 0 ? t.interval_kept_ms / 1000.0 : 0;
}

double Now() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

// Writes the hot arena's pages over and over until told to stop.
struct Writer {
  char *p;
  std::atomic<bool> stop{false};
  std::thread t;
  void Start(char *hot) {
    p = hot;
    t = std::thread([this] {
      while (!stop.load(std::memory_order_relaxed))
        for (size_t off = 0; off < kHotBytes; off += 4096) ((volatile char *)p)[off]++;
    });
  }
  void Stop() {
    stop = true;
    if (t.joinable()) t.join();
  }
};

// The arenas of a case: the resident one (when inside), N small ones and
// the one that turns hot.  Empty on failure, with the reason.
struct Arenas {
  sicm_arena bulk = nullptr, hot = nullptr;
  char *hot_p = nullptr;
  std::vector<sicm_arena> small;
  const char *failed = nullptr;
  Arenas(size_t gib, int inside, int huge, unsigned n) {
    sicm_device *dev = sicm_device_of_node(sicm_node_self(), 0);
    unsigned page_flag = huge ? SICM_ARENA_HUGEPAGES : SICM_ARENA_NOHUGEPAGES;
    if (inside) {
      resident.Drop();
      bulk = sicm_arena_create_devices(0, &dev, 1, page_flag);
      char *p = bulk ? (char *)sicm_arena_alloc(bulk, gib << 30) : nullptr;
      if (p == nullptr) {
        failed = "no memory for the resident arena";
        return;
      }
      for (size_t off = 0; off < (gib << 30); off += 4096) p[off] = 1;
    } else if (resident.Make(gib, huge), resident.p == nullptr) {
      failed = "no memory for the resident block";
      return;
    }
    for (unsigned i = 0; i < n; i++) {
      sicm_arena a = sicm_arena_create(0, dev);
      if (a == nullptr) break;
      memset(sicm_arena_alloc(a, 64 << 10), 1, 64 << 10);
      small.push_back(a);
    }
    hot = sicm_arena_create_devices(0, &dev, 1, page_flag);
    hot_p = hot ? (char *)sicm_arena_alloc(hot, kHotBytes) : nullptr;
    if (hot_p == nullptr) {
      failed = "no memory for the hot arena";
      return;
    }
    memset(hot_p, 1, kHotBytes);
  }
  ~Arenas() {
    for (sicm_arena a : small) sicm_arena_destroy(a);
    if (hot) sicm_arena_destroy(hot);
    if (bulk) sicm_arena_destroy(bulk);
  }
};

// Polls the hot arena's rates from the phase change on: the seconds to
// the first interval after it that reads the arena hot, or -1.
struct Reaction {
  double change = 0, seconds = -1;
  uint64_t intervals_before = 0;
  void Start(sicm_arena hot) {
    change = Now();
    sicm_arena_rates r;
    if (sicm_arena_get_rates(hot, &r) == 0) intervals_before = r.intervals;
  }
  void Poll(sicm_arena hot) {
    sicm_arena_rates r;
    if (change != 0 && seconds < 0 && sicm_arena_get_rates(hot, &r) == 0 &&
        r.intervals > intervals_before && r.resident && r.referenced_last * 2 >= r.resident)
      seconds = Now() - change;
  }
};

void BM_Monitor(benchmark::State &state) {
  Arenas arenas((size_t)state.range(0), (int)state.range(1), (int)state.range(2),
                (unsigned)state.range(3));
  if (arenas.failed != nullptr) {
    state.SkipWithError(arenas.failed);
    return;
  }
  sicm_autoplace_config cfg;
  sicm_autoplace_config_init(&cfg);
  cfg.monitor_only = 1;
  cfg.interval_ms = 1000;
  cfg.cpu_share = (double)state.range(4) / 100;
  sicm_autoplace_totals t = {};
  Reaction reaction;
  for (auto _ : state) {
    if (sicm_autoplace_start(&cfg) != 0) {
      state.SkipWithError(sicm_error_detail());
      break;
    }
    double start = Now();
    Writer writer;
    for (;;) {
      double waited = Now() - start;
      double window = std::min(std::max(kWindowSeconds, kWindowIntervals * KeptSeconds()),
                               kWindowMostSeconds);
      if (waited >= window) break;
      if (reaction.change == 0 && waited >= window / 3 + KeptSeconds() / 2) {
        reaction.Start(arenas.hot);
        writer.Start(arenas.hot_p);
      }
      reaction.Poll(arenas.hot);
      usleep(50 * 1000);
    }
    double waited = Now() - start;
    writer.Stop();
    sicm_autoplace_stop(); /* the totals stay, to the stop */
    sicm_autoplace_get_totals(&t);
    state.SetIterationTime(waited);
  }
  state.counters["arenas"] = (double)arenas.small.size();
  state.counters["cpu_share"] = t.cpu_used;
  state.counters["cpu_bound"] = cfg.cpu_share;
  state.counters["interval_kept_ms"] = t.interval_kept_ms;
  state.counters["intervals"] = (double)t.intervals;
  state.counters["react_s"] = reaction.seconds;
}

// The resident sizes: 1, 8 and 16 GiB, or the list in SICM_MONITOR_GIB
// ("1,8": what a guest holds).
std::vector<int> Sizes() {
  const char *v = getenv("SICM_MONITOR_GIB");
  std::vector<int> sizes;
  for (const char *p = v; p != nullptr && *p != '\0';) {
    char *end;
    long g = strtol(p, &end, 10);
    if (end == p || g < 1) break;
    sizes.push_back((int)g);
    p = *end == ',' ? end + 1 : end;
  }
  return sizes.empty() ? std::vector<int>{1, 8, 16} : sizes;
}

// Each case with its peer next to it, the many-arena cases last: the
// arenas a case destroys leave mappings that later cases walk too.
void Cases(benchmark::internal::Benchmark *b) {
  for (int inside : {0, 1})
    for (int gib : Sizes())
      for (int huge : {0, 1})
        for (int pct : {1, 100}) b->Args({gib, inside, huge, 10, pct});
  for (int n : {1000, 4000})
    for (int pct : {1, 100}) b->Args({1, 0, 0, n, pct});
  b->ArgNames({"resident_gib", "inside", "huge", "arenas", "cpu_pct"})
      ->UseManualTime()
      ->Iterations(1);
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
