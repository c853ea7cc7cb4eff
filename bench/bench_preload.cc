/* SPDX-License-Identifier: BSD-3-Clause */
// bench_preload.cc: what libsicm-preload.so costs a program's allocations
// below its threshold.  This program links libsicm-preload.so ahead of
// libc, as LD_PRELOAD would put it, so its malloc and free are the
// interposed ones; glibc's own allocator, called by its __libc_ names, is
// the peer in the same run.  Compiled with -fno-builtin-malloc so that
// no pair is optimised away.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

extern "C" void *__libc_malloc(size_t);
extern "C" void __libc_free(void *);

struct Preload {
  static void *alloc(size_t n) { return malloc(n); }
  static void release(void *p) { free(p); }
};
struct Libc {
  static void *alloc(size_t n) { return __libc_malloc(n); }
  static void release(void *p) { __libc_free(p); }
};

template <class A>
static void BM_pair(benchmark::State &state) {
  size_t size = (size_t)state.range(0);
  for (auto _ : state) {
    void *p = A::alloc(size);
    benchmark::DoNotOptimize(p);
    A::release(p);
  }
}

// Random sizes of 16 B to 4 KiB among 10,000 live blocks.
template <class A>
static void BM_random(benchmark::State &state) {
  std::vector<void *> live(10000, nullptr);
  uint64_t seed = 88172645463325252ull + (uint64_t)state.thread_index();
  for (auto _ : state) {
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    size_t slot = seed % live.size();
    A::release(live[slot]);
    void *p = A::alloc(16 + (seed >> 32) % 4080);
    benchmark::DoNotOptimize(p);
    live[slot] = p;
  }
  for (void *p : live)
    A::release(p);
}

#define PAIR_SIZES(b) b->Arg(16)->Arg(64)->Arg(256)->Arg(1024)->Arg(4096)->Arg(32 << 10)
BENCHMARK_TEMPLATE(BM_pair, Preload)->Apply([](benchmark::internal::Benchmark *b) { PAIR_SIZES(b); })
    ->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK_TEMPLATE(BM_pair, Libc)->Apply([](benchmark::internal::Benchmark *b) { PAIR_SIZES(b); })
    ->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK_TEMPLATE(BM_random, Preload)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK_TEMPLATE(BM_random, Libc)->Threads(1)->Threads(2)->UseRealTime();

BENCHMARK_MAIN();
