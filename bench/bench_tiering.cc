/* SPDX-License-Identifier: BSD-3-Clause */
// bench_tiering.cc: the placer beside the kernel's own tiering, on the
// traces of trace_shapes.h, in the multi-NUMA guest as root on a kernel
// that has both (Linux 6.12; `make bench-tiering`).
//
// Tiering/<trace>/<mode>: eight arenas of 16 MiB start on the slow node
// (SICM_TIERING_SLOW, default 0) and the fast node (SICM_TIERING_FAST,
// default 2) has room for two: its free memory above the watermarks is
// cut to that with hugetlb pages, for every mode alike.  The modes:
//   none       arenas bound to the slow node, nothing moves them;
//   placer     the same arenas, libsicm's placer (unprivileged) moving
//              them, 200 ms interval, fast budget of two arenas;
//   placer-1%cpu  the same, measuring bounded to its default 1% of a core
//              (the interval lengthened as it needs);
//   placer-1%cpu-thp  the same with arenas in transparent huge pages
//              (SICM_ARENA_HUGEPAGES), which the placer measures per
//              huge page;
//   balancing  the same data in mappings of no policy (MakeData), NUMA
//              balancing in tiering mode with demotion;
//   damon      those mappings, DAMON's migrate_hot/migrate_cold schemes;
//   placer+balancing, placer+damon: the placer's bound arenas with the
//              kernel's mechanism on too (coexistence: who wins, and
//              whether they fight).
// Per run: the share of accesses served from the fast node (the accesses
// of a step, weighted by the share of each one's data resident there
// after them, as bench_autoplace counts it, but no more fast bytes than the
// budget: ServedWithinBudget), the oracle's share, MiB migrated
// (the kernel's pgmigrate_success: every mechanism's moves, ours too;
// the placer's own whole-arena moves apart),
// CPU seconds of the process (its hinting faults and the placer's
// thread) and of the kernel's tiering threads (kdamond, kswapd), the
// placer's own thread's (and of that, its moves'), and the reaction:
// the mean time from a change of the hot pair until 90% of it is on the
// fast node (a change it never reaches counts until the next change;
// react_missed counts those).
#include <benchmark/benchmark.h>
#include <numaif.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include <string>
#include <vector>

#include "sicm.h"
#include "sicm_autoplace.h"
#include "tiering_kernel.h"
#include "trace_shapes.h"

namespace {

using namespace traces;

enum Mode {
  NONE, PLACER, PLACER_FRUGAL, PLACER_FRUGAL_HUGE, BALANCING, DAMON, PLACER_BALANCING, PLACER_DAMON,
  MODES
};
const char *const kModeNames[MODES] = {"none", "placer", "placer-1%cpu", "placer-1%cpu-thp",
                                       "balancing", "damon", "placer+balancing", "placer+damon"};

bool Placed(Mode m) { return m != NONE && m != BALANCING && m != DAMON; }
bool Frugal(Mode m) { return m == PLACER_FRUGAL || m == PLACER_FRUGAL_HUGE; }
bool Balanced(Mode m) { return m == BALANCING || m == PLACER_BALANCING; }
bool Damoned(Mode m) { return m == DAMON || m == PLACER_DAMON; }
// Alone, the kernel's mechanisms get data in mappings of no policy;
// beside the placer, its bound arenas.
bool Loose(Mode m) { return m == BALANCING || m == DAMON; }

int EnvNode(const char *name, int fallback) {
  const char *v = getenv(name);
  return v != nullptr && *v != '\0' ? atoi(v) : fallback;
}
const int kFastNode = EnvNode("SICM_TIERING_FAST", 2);
const int kSlowNode = EnvNode("SICM_TIERING_SLOW", 0);

// What the machine spent over a run: read before and after.
struct Spent {
  double process_cpu, kernel_cpu;
  long long migrated_pages;
  static Spent Now() {
    return {tiering::ProcessCpu(), tiering::KernelThreadsCpu(), tiering::Vmstat("pgmigrate_success")};
  }
};

// The data of a run, touched once on the slow node: an arena each, or,
// for the kernel's mechanisms alone, a mapping of no policy each (the
// memory they are for: they move only pages of no policy, and scan
// address space, which an arena's window has much more of than it uses).
bool MakeData(Mode mode, std::vector<sicm_arena> *arenas, std::vector<char *> *data) {
  sicm_device *slow = sicm_device_of_node(kSlowNode, 0);
  unsigned long slow_mask = 1ul << kSlowNode;
  for (unsigned i = 0; i < kArenas; i++) {
    char *p;
    if (Loose(mode)) {
      p = (char *)mmap(nullptr, kArenaBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED || set_mempolicy(MPOL_BIND, &slow_mask, 64) != 0) return false;
      memset(p, 1, kArenaBytes);
      if (set_mempolicy(MPOL_DEFAULT, nullptr, 0) != 0) return false;
    } else {
      unsigned flags = mode == PLACER_FRUGAL_HUGE ? SICM_ARENA_HUGEPAGES : 0;
      sicm_arena a = sicm_arena_create_devices(0, &slow, 1, flags);
      p = a != nullptr ? (char *)sicm_arena_aligned_alloc(a, kPage, kArenaBytes) : nullptr;
      if (p == nullptr) return false;
      arenas->push_back(a);
      memset(p, 1, kArenaBytes);
    }
    data->push_back(p);
  }
  return true;
}

// The share of [p, p + kArenaBytes) resident on the fast node.
double FastFraction(char *p) {
  static std::vector<void *> pages(kPages);
  static std::vector<int> status(kPages);
  for (size_t i = 0; i < kPages; i++) pages[i] = p + i * kPage;
  if (move_pages(0, kPages, pages.data(), nullptr, status.data(), 0) != 0) return 0;
  size_t fast = 0, resident = 0;
  for (int node : status) fast += node == kFastNode, resident += node >= 0;
  return resident ? (double)fast / (double)resident : 0;
}

bool StartPlacer(Mode mode) {
  sicm_autoplace_config c;
  sicm_autoplace_config_init(&c);
  c.ndevices = 1;
  c.devices[0] = sicm_device_of_node(kFastNode, 0);
  c.budget = kBudgetArenas * kArenaBytes + (1 << 20);
  c.reserve = 0; /* the capacity cut already keeps the watermarks free */
  c.interval_ms = kIntervalMs;
  /* Placement at the asked interval, its CPU reported; or at the default
   * share of a core, the interval lengthened as measuring needs. */
  c.cpu_share = Frugal(mode) ? 0.01 : 1;
  return sicm_autoplace_start(&c) == 0;
}

// The two most accessed arenas of a step, when they are clearly so.
std::vector<unsigned> HotPair(const std::vector<double> &share) {
  std::vector<unsigned> order = ByShare(share);
  if (share[order[kBudgetArenas - 1]] <= share[order[kBudgetArenas]]) return {};
  std::vector<unsigned> pair(order.begin(), order.begin() + kBudgetArenas);
  std::sort(pair.begin(), pair.end());
  return pair;
}

// The accesses of a step served fast, counting no more fast bytes than
// the budget: the kernel's mechanisms may fill the fast node down to its
// minimum watermark, more than the placer's budget, so each is credited
// with its budget's worth of fast pages, the most accessed arenas' first
// (the best use it could have made of that much).
double ServedWithinBudget(const std::vector<double> &share, const std::vector<double> &fast_fraction) {
  std::vector<unsigned> order = ByShare(share);
  double room = (double)(kBudgetArenas * kArenaBytes), served = 0;
  for (unsigned i : order) {
    double fast = std::min(room, fast_fraction[i] * (double)kArenaBytes);
    room -= fast;
    served += share[i] * kPages * fast / (double)kArenaBytes;
  }
  return served;
}

// Times from each change of the hot pair until 90% of it is fast.
struct Reaction {
  std::vector<unsigned> pair;
  unsigned since = 0;
  bool reached = true;
  double total_steps = 0;
  unsigned changes = 0, missed = 0;

  void Step(unsigned s, const std::vector<double> &share, const std::vector<double> &fast_fraction) {
    std::vector<unsigned> now = HotPair(share);
    if (now != pair) {
      if (!reached) total_steps += s - since, missed++;
      pair = now;
      since = s;
      reached = now.empty();
      changes += !now.empty();
    }
    if (reached) return;
    double fast = 0;
    for (unsigned i : pair) fast += fast_fraction[i] / (double)pair.size();
    if (fast >= 0.9) reached = true, total_steps += s + 1 - since;
  }
  void End(unsigned steps) {
    if (!reached) total_steps += steps - since, missed++;
  }
};

void Tiering(benchmark::State &state, const Trace *trace, Mode mode) {
  if (sicm_device_of_node(kFastNode, 0) == nullptr || sicm_device_of_node(kSlowNode, 0) == nullptr) {
    state.SkipWithError("needs the multi-NUMA guest (the fast and slow nodes)");
    return;
  }
  for (auto _ : state) {
    tiering::Capacity capacity(kFastNode, kBudgetArenas * kArenaBytes + (1 << 20));
    std::vector<sicm_arena> arenas;
    std::vector<char *> data;
    if (!MakeData(mode, &arenas, &data)) {
      state.SkipWithError("the data could not be made on the slow node");
      return;
    }
    tiering::Balancing balancing;
    tiering::Damon damon;
    if ((Balanced(mode) && !balancing.Start()) || (Damoned(mode) && !damon.Start(kFastNode, kSlowNode)) ||
        (Placed(mode) && !StartPlacer(mode))) {
      state.SkipWithError("the mechanism did not start (root, Linux 6.12)");
      return;
    }
    Spent before = Spent::Now();
    double served = 0, total = 0, oracle = 0, oracle_moved = 0;
    std::vector<unsigned> oracle_set;
    Reaction reaction;
    timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (unsigned s = 0; s < trace->steps; s++) {
      std::vector<double> share = trace->shape(s), fast_fraction(kArenas);
      for (unsigned i = 0; i < kArenas; i++) {
        size_t touched = (size_t)(share[i] * kPages);
        for (size_t p = 0; p < touched; p++) data[i][p * kPage]++;
      }
      for (unsigned i = 0; i < kArenas; i++) {
        fast_fraction[i] = FastFraction(data[i]);
        total += share[i] * kPages;
      }
      served += ServedWithinBudget(share, fast_fraction);
      reaction.Step(s, share, fast_fraction);
      OracleStep(share, &oracle_set, &oracle, &oracle_moved);
      SleepNextStep(&next);
    }
    reaction.End(trace->steps);
    if (Damoned(mode)) fprintf(stderr, "Tiering/%s/%s: DAMON tried:applied bytes %s\n", trace->name,
                               kModeNames[mode], damon.Stats().c_str());
    Spent after = Spent::Now();
    sicm_autoplace_totals placer = {};
    if (Placed(mode)) {
      sicm_autoplace_stop();
      sicm_autoplace_get_totals(&placer);
    }
    double placer_moved = 0;
    for (sicm_arena a : arenas) {
      sicm_arena_rates r = {};
      sicm_arena_get_rates(a, &r);
      placer_moved += (double)(r.moves_in + r.moves_out) * kArenaBytes;
      sicm_arena_destroy(a);
    }
    if (Loose(mode))
      for (char *p : data) munmap(p, kArenaBytes);
    state.counters["share"] = served / total;
    state.counters["oracle_share"] = oracle / total;
    state.counters["MiB_migrated"] = (double)(after.migrated_pages - before.migrated_pages) * 4096 / (1 << 20);
    state.counters["placer_MiB_moved"] = placer_moved / (1 << 20);
    state.counters["oracle_MiB_moved"] = oracle_moved / (1 << 20);
    state.counters["process_cpu_s"] = after.process_cpu - before.process_cpu;
    state.counters["kernel_cpu_s"] = after.kernel_cpu - before.kernel_cpu;
    state.counters["placer_cpu_s"] = placer.cpu_seconds;
    state.counters["placer_move_cpu_s"] = placer.move_cpu_seconds;
    state.counters["placer_interval_ms"] = placer.interval_kept_ms;
    state.counters["react_s"] =
        reaction.changes ? reaction.total_steps * kIntervalMs / 1000.0 / reaction.changes : -1;
    state.counters["react_missed"] = reaction.missed;
    state.counters["fast_free_MiB"] = (double)capacity.FreeAboveWatermarks() / (1 << 20);
    fprintf(stderr, "Tiering/%s/%s: share %.3f, %.0f MiB migrated\n", trace->name, kModeNames[mode],
            served / total, state.counters["MiB_migrated"].value);
  }
}

}  // namespace

int main(int argc, char **argv) {
  if (sicm_init() != 0) {
    fprintf(stderr, "sicm_init: %s\n", sicm_error_detail());
    return 1;
  }
  // The program on the first CPU: node 0's, whose DRAM is the fast tier
  // without HBM, and whose hinting faults NUMA balancing promotes toward.
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  CPU_SET(0, &cpus);
  sched_setaffinity(0, sizeof cpus, &cpus);
  // NUMA balancing off but where a mode turns it on: a process keeps
  // what the scanner learnt of it (a scan period lengthened while there
  // was nothing to move), so each mode runs in a process of its own
  // (SICM_TIERING_MODES, a comma-separated list of modes; default all).
  const std::string saved = tiering::ReadText(tiering::kBalancingMode);
  tiering::WriteText(tiering::kBalancingMode, "0");
  const char *wanted = getenv("SICM_TIERING_MODES");
  bool tiered = false;
  for (const Trace &t : kTraces)
    for (int m = 0; m < MODES; m++) {
      std::string list = std::string(",") + (wanted ? wanted : "") + ",";
      if (wanted != nullptr && list.find(std::string(",") + kModeNames[m] + ",") == std::string::npos)
        continue;
      tiered |= Balanced((Mode)m);
      benchmark::RegisterBenchmark((std::string("Tiering/") + t.name + "/" + kModeNames[m]).c_str(),
                                   [&t, m](benchmark::State &s) { Tiering(s, &t, (Mode)m); })
          ->Iterations(1)
          ->Unit(benchmark::kSecond);
    }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (!tiered && !saved.empty()) tiering::WriteText(tiering::kBalancingMode, saved);
  return sicm_fini() == 0 ? 0 : 1;
}
