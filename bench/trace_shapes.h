/* SPDX-License-Identifier: BSD-3-Clause */
// trace_shapes.h: the access traces the placer is measured on
// (bench_autoplace against an oracle, bench_tiering against the kernel's
// tiering): eight arenas of 16 MiB, a fast-tier budget of two, one step
// per 200 ms; in a step each arena has a share of its pages touched.  And
// the oracle, which knows every step beforehand.
#ifndef SICM_BENCH_TRACE_SHAPES_H
#define SICM_BENCH_TRACE_SHAPES_H
#include <errno.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

namespace traces {

constexpr unsigned kArenas = 8, kIntervalMs = 200, kBudgetArenas = 2;
constexpr size_t kArenaBytes = 16 << 20, kPage = 4096, kPages = kArenaBytes / kPage;

// Share of each arena's pages touched in step s of a trace.
using Shape = std::function<std::vector<double>(unsigned s)>;

struct Trace {
  const char *name;
  unsigned steps;
  Shape shape;
};

const Trace kTraces[] = {
    // Three phases of 40 steps, two arenas hot in each, the rest nearly idle.
    {"phased", 120,
     [](unsigned s) {
       static const unsigned hot[3][2] = {{0, 1}, {5, 6}, {2, 7}};
       std::vector<double> v(kArenas, 0.01);
       v[hot[s / 40][0]] = v[hot[s / 40][1]] = 1.0;
       return v;
     }},
    // Always the same skew: arena i touches 1/2^i of its pages.
    {"skewed", 60,
     [](unsigned) {
       std::vector<double> v(kArenas);
       for (unsigned i = 0; i < kArenas; i++) v[i] = std::ldexp(1.0, -(int)i);
       return v;
     }},
    // A hot pair that slides by one arena every 10 steps.
    {"shifting", 80,
     [](unsigned s) {
       std::vector<double> v(kArenas, 0.01);
       v[(s / 10) % kArenas] = v[(s / 10 + 1) % kArenas] = 1.0;
       return v;
     }},
    // Every arena alike: any two are right, moving is waste.
    {"equal", 60, [](unsigned) { return std::vector<double>(kArenas, 0.5); }},
};

// Moves *next one step on and sleeps until then: steps keep their period
// however long the work between them took.
inline void SleepNextStep(timespec *next) {
  next->tv_nsec += kIntervalMs * 1000000L;
  next->tv_sec += next->tv_nsec / 1000000000L;
  next->tv_nsec %= 1000000000L;
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, next, nullptr) == EINTR) {
  }
}

// The arenas from the most accessed in a step to the least (ties in
// their order).
inline std::vector<unsigned> ByShare(const std::vector<double> &share) {
  std::vector<unsigned> order(kArenas);
  for (unsigned i = 0; i < kArenas; i++) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](unsigned a, unsigned b) { return share[a] > share[b]; });
  return order;
}

// The oracle's step: it holds the kBudgetArenas most accessed arenas of
// the step at no cost; adds what it serves and the bytes its set changes.
inline void OracleStep(const std::vector<double> &share, std::vector<unsigned> *held, double *served,
                       double *moved) {
  std::vector<unsigned> order = ByShare(share);
  std::vector<unsigned> set(order.begin(), order.begin() + kBudgetArenas);
  // Ties keep what the oracle holds, so that "equal" costs it nothing.
  if (std::all_of(set.begin(), set.end(), [&](unsigned i) { return share[i] == share[set[0]]; }) &&
      held->size() == kBudgetArenas &&
      std::all_of(held->begin(), held->end(), [&](unsigned i) { return share[i] == share[set[0]]; }))
    set = *held;
  for (unsigned i : set) *served += share[i] * kPages;
  for (unsigned i : set) *moved += std::count(held->begin(), held->end(), i) ? 0 : kArenaBytes;
  for (unsigned i : *held) *moved += std::count(set.begin(), set.end(), i) ? 0 : kArenaBytes;
  *held = set;
}

}  // namespace traces

#endif
