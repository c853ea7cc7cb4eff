/* SPDX-License-Identifier: BSD-3-Clause */
// bench_migrate.cc (runs in the multi-NUMA guest): the seed paper's Figure 1.
// Time to move an arena of 2^N bytes between devices against memmove of the
// same bytes from a buffer on the source node to one on the target node,
// for DRAM->HBM (0->2), HBM->DRAM (2->0) and DRAM->DRAM (0->1), with 4 KiB
// pages and with transparent huge pages; every size from 4 KiB to 1 MiB
// and an empty arena show the fixed cost of a move.  Also: the methods of
// moving huge pages side by side (BM_migrate_method), how long a thread
// writing the arena stalls during a move (BM_migrate_stall), and what the
// kernel charges per call that may move (BM_move_pages_calls).
// bench/migrate_plot.py turns the JSON into tables, a CSV and a PNG.
#include <benchmark/benchmark.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "sicm.h"

namespace {

const int kCases[][2] = {{0, 2}, {2, 0}, {0, 1}};

size_t Bytes(const benchmark::State &state) { return (size_t)1 << state.range(2); }

// A buffer of len bytes on `node`, huge pages or not, every page touched.
char *BufferOn(int node, size_t len, bool huge) {
  char *p = (char *)mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  madvise(p, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  unsigned long mask = 1ul << node;
  mbind(p, len, MPOL_BIND, &mask, 64, 0);
  memset(p, 1, len);
  return p;
}

uint64_t NowNs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

// Moves an arena of len touched bytes from case c's source to its target
// (timed) and back (not timed), once per iteration.  Timed by hand around
// the one call: PauseTiming/ResumeTiming read two clocks each, and a guest
// without a vDSO pays a system call per read, inside the timed part.
void MoveLoop(benchmark::State &state, const int *c, bool huge, size_t len) {
  sicm_device *src = sicm_device_of_node(c[0], 0), *dst = sicm_device_of_node(c[1], 0);
  sicm_arena a = sicm_arena_create_devices(
      0, &src, 1, huge ? SICM_ARENA_HUGEPAGES : SICM_ARENA_NOHUGEPAGES);
  char *p = a && len ? (char *)sicm_arena_alloc(a, len) : nullptr;
  if (!a || (len && !p)) {
    state.SkipWithError(sicm_error_detail());
    if (a) sicm_arena_destroy(a);
    return;
  }
  if (p) memset(p, 1, len);
  for (auto _ : state) {
    uint64_t t0 = NowNs();
    int rc = sicm_arena_set_device(a, dst);
    uint64_t t1 = NowNs();
    if (rc != 0) {
      state.SkipWithError(sicm_error_detail());
      break;
    }
    state.SetIterationTime((double)(t1 - t0) * 1e-9);
    sicm_arena_set_device(a, src);
  }
  state.SetBytesProcessed((int64_t)state.iterations() * (int64_t)len);
  sicm_free(p);
  sicm_arena_destroy(a);
}

void BM_migrate(benchmark::State &state) {
  MoveLoop(state, kCases[state.range(0)], state.range(1), Bytes(state));
}

void BM_memmove(benchmark::State &state) {
  const int *c = kCases[state.range(0)];
  const bool huge = state.range(1);
  const size_t len = Bytes(state);
  char *from = BufferOn(c[0], len, huge), *to = BufferOn(c[1], len, huge);
  if (!from || !to) {
    state.SkipWithError("mmap failed");
    return;
  }
  for (auto _ : state) {
    memmove(to, from, len);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed((int64_t)state.iterations() * (int64_t)len);
  munmap(from, len);
  munmap(to, len);
}

void BM_migrate_empty(benchmark::State &state) {
  MoveLoop(state, kCases[state.range(0)], state.range(1), 0);
}

// sicm_init reads SICM_MIGRATE_HUGE; the main's reference is the only one.
bool RestartWith(const char *method) {
  sicm_fini();
  if (method) setenv("SICM_MIGRATE_HUGE", method, 1);
  else unsetenv("SICM_MIGRATE_HUGE");
  return sicm_init() == 0;
}

const char *const kMethods[] = {"heads", "subpages", "mbind"};

// An arena in huge pages, 0->2, moved by one method with 1 or 2 threads.
void BM_migrate_method(benchmark::State &state) {
  if (!RestartWith(kMethods[state.range(0)])) {
    state.SkipWithError(sicm_error_detail());
    return;
  }
  sicm_migrate_set_threads((unsigned)state.range(1));
  MoveLoop(state, kCases[0], true, Bytes(state));
  RestartWith(nullptr);
}

// A thread writes one byte per page of a 64 MiB arena round and round
// while the arena moves 0->2 (one mover thread: the guest has 2 CPUs, one
// each).  Reports the longest gap between two of its writes during a move
// and the share of the move it spent in gaps over 1 ms.
void BM_migrate_stall(benchmark::State &state) {
  const bool huge = state.range(0);
  const size_t len = (size_t)64 << 20, page = 4096;
  sicm_device *src = sicm_device_of_node(0, 0), *dst = sicm_device_of_node(2, 0);
  sicm_arena a = sicm_arena_create_devices(
      0, &src, 1, huge ? SICM_ARENA_HUGEPAGES : SICM_ARENA_NOHUGEPAGES);
  volatile char *p = a ? (volatile char *)sicm_arena_alloc(a, len) : nullptr;
  if (!p) {
    state.SkipWithError(sicm_error_detail());
    return;
  }
  memset((char *)p, 1, len);
  sicm_migrate_set_threads(1);
  std::atomic<bool> stop{false}, measuring{false};
  std::atomic<uint64_t> longest{0}, stalled{0};
  std::thread writer([&] {
    uint64_t last = NowNs();
    for (size_t i = 0; !stop.load(std::memory_order_relaxed); i = (i + page) % len) {
      p[i]++;
      uint64_t t = NowNs(), gap = t - last;
      last = t;
      if (!measuring.load(std::memory_order_relaxed)) continue;
      if (gap > longest.load(std::memory_order_relaxed)) longest = gap;
      if (gap > 1000000) stalled += gap;
    }
  });
  uint64_t moving = 0;
  for (auto _ : state) {
    uint64_t t0 = NowNs();
    measuring = true;
    int rc = sicm_arena_set_device(a, dst);
    measuring = false;
    moving += NowNs() - t0;
    if (rc != 0) {
      state.SkipWithError(sicm_error_detail());
      break;
    }
    state.PauseTiming();
    sicm_arena_set_device(a, src);
    state.ResumeTiming();
  }
  stop = true;
  writer.join();
  state.counters["stall_max_ms"] = longest.load() / 1e6;
  state.counters["stall_share"] = moving ? (double)stalled.load() / moving : 0;
  sicm_free((void *)p);
  sicm_arena_destroy(a);
}

// The kernel's fixed cost of a call that may move pages, paid per call
// whatever it moves (Linux 6.12 drains the LRU caches behind an expedited
// RCU grace period): `regions` one-page mappings on node 0 moved to node 2
// by one move_pages(2) call each (batched 0), as one arena move each
// makes, or by one call for all (batched 1), as a move of several arenas
// at once could.  Time per iteration is for all regions; per_region_us
// divides it.
void BM_move_pages_calls(benchmark::State &state) {
  const int regions = (int)state.range(0);
  const bool batched = state.range(1) != 0;
  std::vector<void *> pages(regions);
  std::vector<int> there(regions, 2), back(regions, 0), status(regions, -1);
  for (auto &p : pages) p = BufferOn(0, 4096, false);
  auto unmap = [&] {
    for (void *p : pages)
      if (p != nullptr) munmap(p, 4096);
  };
  if (std::count(pages.begin(), pages.end(), nullptr) != 0) {
    state.SkipWithError("no memory on node 0");
    unmap();
    return;
  }
  uint64_t timed = 0;
  for (auto _ : state) {
    uint64_t t0 = NowNs();
    long rc = 0;
    if (batched)
      rc = move_pages(0, regions, pages.data(), there.data(), status.data(), MPOL_MF_MOVE);
    for (int i = 0; !batched && i < regions && rc == 0; i++)
      rc = move_pages(0, 1, &pages[i], &there[i], &status[i], MPOL_MF_MOVE);
    uint64_t t1 = NowNs();
    if (rc != 0 || std::count(status.begin(), status.end(), 2) != regions) {
      state.SkipWithError("move_pages did not move every page to node 2");
      break;
    }
    timed += t1 - t0;
    state.SetIterationTime((double)(t1 - t0) * 1e-9);
    // Back on node 0, or the next timed call would move nothing.
    if (move_pages(0, regions, pages.data(), back.data(), status.data(), MPOL_MF_MOVE) != 0 ||
        std::count(status.begin(), status.end(), 0) != regions) {
      state.SkipWithError("move_pages did not move every page back to node 0");
      break;
    }
  }
  state.counters["per_region_us"] =
      state.iterations() ? (double)timed / 1e3 / (double)state.iterations() / regions : 0;
  unmap();
}

void Sizes(benchmark::internal::Benchmark *b) {
  for (int c = 0; c < 3; c++)
    for (int huge = 0; huge < 2; huge++) {
      for (int lg = 12; lg <= 20; lg++) b->Args({c, huge, lg});
      for (int lg = 22; lg <= 30; lg += 2) b->Args({c, huge, lg});
    }
  b->ArgNames({"case", "huge", "lg"})->Unit(benchmark::kMicrosecond);
}

void Methods(benchmark::internal::Benchmark *b) {
  for (int m = 0; m < 3; m++)
    for (int threads = 1; threads <= 2; threads++)
      for (int lg = 24; lg <= 28; lg += 2) b->Args({m, threads, lg});
  b->ArgNames({"method", "threads", "lg"})->UseManualTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_migrate)->Apply(Sizes)->UseManualTime();
BENCHMARK(BM_memmove)->Apply(Sizes)->UseRealTime();
BENCHMARK(BM_migrate_empty)
    ->ArgsProduct({{0, 1, 2}, {0, 1}})
    ->ArgNames({"case", "huge"})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_migrate_stall)->Arg(0)->Arg(1)->ArgName("huge")->UseRealTime()->Unit(
    benchmark::kMillisecond);
BENCHMARK(BM_migrate_method)->Apply(Methods);
BENCHMARK(BM_move_pages_calls)
    ->ArgsProduct({{1, 8, 64}, {0, 1}})
    ->ArgNames({"regions", "batched"})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char **argv) {
  if (sicm_init() != 0) {
    fprintf(stderr, "bench_migrate: %s\n", sicm_error_detail());
    return 1;
  }
  for (const auto &c : kCases)
    for (int node : c)
      if (!sicm_device_of_node(node, 0)) {
        fprintf(stderr, "bench_migrate: needs nodes 0, 1 and 2 (run it in the guest)\n");
        return 1;
      }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  sicm_fini();
  return 0;
}
