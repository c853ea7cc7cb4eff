// bench_alloc.cc: the cost of an alloc+free pair and of a pointer lookup,
// libsicm against its peers in the same run.  Built twice: bench_alloc
// (jemalloc is the process malloc; peers jemalloc, memkind,
// numa_alloc_onnode, and lanl/SICM's uncached-arena approach) and
// bench_alloc_glibc (glibc is the process malloc).
#include <benchmark/benchmark.h>
#include <jemalloc/jemalloc.h>
#include <numa.h>
#include <stdio.h>
#include <stdlib.h>

#include <random>
#include <vector>

#include "sicm.h"
#ifdef BENCH_MEMKIND
#include <memkind.h>
#endif

namespace {

sicm_arena shared_arena;     // one arena shared by every benchmark thread
#ifndef BENCH_GLIBC
unsigned lanl_arena_index;   // a plain jemalloc arena, used uncached as lanl/SICM does
#endif

void BM_pair_sicm(benchmark::State &state) {
  const size_t size = state.range(0);
  for (auto _ : state) {
    void *p = sicm_arena_alloc(shared_arena, size);
    benchmark::DoNotOptimize(p);
    sicm_free(p);
  }
}

// The same pair through the library's functions, as a program built with
// SICM_NO_INLINE (or one that looks them up with dlsym) makes it.
void BM_pair_sicm_call(benchmark::State &state) {
  const size_t size = state.range(0);
  for (auto _ : state) {
    void *p = (sicm_arena_alloc)(shared_arena, size);
    benchmark::DoNotOptimize(p);
    (sicm_free)(p);
  }
}

void BM_pair_malloc(benchmark::State &state) {
  const size_t size = state.range(0);
  for (auto _ : state) {
    void *p = malloc(size);
    benchmark::DoNotOptimize(p);
    free(p);
  }
}

#ifndef BENCH_GLIBC
void BM_pair_lanl_tcache_none(benchmark::State &state) {
  const size_t size = state.range(0);
  const int flags = MALLOCX_ARENA(lanl_arena_index) | MALLOCX_TCACHE_NONE;
  for (auto _ : state) {
    void *p = mallocx(size, flags);
    benchmark::DoNotOptimize(p);
    dallocx(p, MALLOCX_TCACHE_NONE);
  }
}

void BM_pair_numa_alloc_onnode(benchmark::State &state) {
  const size_t size = state.range(0);
  for (auto _ : state) {
    void *p = numa_alloc_onnode(size, 0);
    benchmark::DoNotOptimize(p);
    numa_free(p, size);
  }
}
#endif

#ifdef BENCH_MEMKIND
void BM_pair_memkind(benchmark::State &state) {
  const size_t size = state.range(0);
  for (auto _ : state) {
    void *p = memkind_malloc(MEMKIND_DEFAULT, size);
    benchmark::DoNotOptimize(p);
    memkind_free(MEMKIND_DEFAULT, p);
  }
}
#endif

// Sizes of the table in BENCHMARKS.md: small (bins and tcache), large
// (jemalloc's extents), and from 8 MiB (purged at every free).
#define PAIR_BENCHMARK(fn)                                                      \
  BENCHMARK(fn)                                                                 \
      ->ArgsProduct({{16, 64, 1024, 4096, 32 << 10, 256 << 10, 1 << 20, 4 << 20, \
                      8 << 20, 64 << 20}})                                      \
      ->Threads(1)->Threads(2)->UseRealTime()

PAIR_BENCHMARK(BM_pair_sicm);
PAIR_BENCHMARK(BM_pair_sicm_call);
PAIR_BENCHMARK(BM_pair_malloc);
#ifndef BENCH_GLIBC
PAIR_BENCHMARK(BM_pair_lanl_tcache_none);
PAIR_BENCHMARK(BM_pair_numa_alloc_onnode);
#endif
#ifdef BENCH_MEMKIND
PAIR_BENCHMARK(BM_pair_memkind);
#endif

#ifndef BENCH_GLIBC
// Pointer -> arena with N live arenas, pointers drawn from all of them.
void BM_lookup_sicm(benchmark::State &state) {
  const int narenas = state.range(0);
  std::vector<sicm_arena> arenas;
  std::vector<void *> ptrs;
  sicm_device *dev = sicm_device_of_node(sicm_node_self(), 0);
  for (int i = 0; i < narenas; i++) {
    arenas.push_back(sicm_arena_create(0, dev));
    ptrs.push_back(sicm_arena_alloc(arenas.back(), 64));
  }
  std::shuffle(ptrs.begin(), ptrs.end(), std::mt19937(1));
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(sicm_arena_lookup(ptrs[i]));
    if (++i == ptrs.size()) i = 0;
  }
  for (size_t k = 0; k < arenas.size(); k++) sicm_arena_destroy(arenas[k]);
}
BENCHMARK(BM_lookup_sicm)->Arg(1)->Arg(10)->Arg(100)->Arg(1000);

// jemalloc's own pointer -> arena query, for reference, on a pointer of
// its own: libsicm runs on a private jemalloc, whose pointers the process's
// jemalloc does not know (arenas.lookup faults on those).
void BM_lookup_jemalloc_mallctl(benchmark::State &state) {
  void *p = malloc(64);
  for (auto _ : state) {
    unsigned index;
    size_t len = sizeof index;
    mallctl("arenas.lookup", &index, &len, &p, sizeof p);
    benchmark::DoNotOptimize(index);
  }
  free(p);
}
BENCHMARK(BM_lookup_jemalloc_mallctl);
#endif

}  // namespace

int main(int argc, char **argv) {
  if (sicm_init() != 0) {
    fprintf(stderr, "sicm_init: %s\n", sicm_error_detail());
    return 1;
  }
  shared_arena = sicm_arena_create(0, sicm_device_of_node(sicm_node_self(), 0));
  if (!shared_arena) {
    fprintf(stderr, "sicm_arena_create: %s\n", sicm_error_detail());
    return 1;
  }
#ifdef BENCH_GLIBC
  benchmark::AddCustomContext("process_malloc", "glibc");
#else
  size_t len = sizeof lanl_arena_index;
  if (mallctl("arenas.create", &lanl_arena_index, &len, nullptr, 0) != 0) {
    fprintf(stderr, "bench_alloc: arenas.create failed\n");
    return 1;
  }
  // The peer is only meaningful if malloc really is jemalloc's.
  uint64_t before = 0, after = 0;
  size_t sz = sizeof before;
  mallctl("thread.allocated", &before, &sz, nullptr, 0);
  void *probe = malloc(1000);
  benchmark::DoNotOptimize(probe);
  mallctl("thread.allocated", &after, &sz, nullptr, 0);
  free(probe);
  if (after <= before) {
    fprintf(stderr, "bench_alloc: malloc is not jemalloc's; fix the link order\n");
    return 1;
  }
  benchmark::AddCustomContext("process_malloc", "jemalloc");
#endif
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  sicm_arena_destroy(shared_arena);
  sicm_fini();
  return 0;
}
