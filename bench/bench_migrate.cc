// bench_migrate.cc (runs in the multi-NUMA guest): the seed paper's Figure 1.
// Time to move an arena of 2^N bytes between devices against memmove of the
// same bytes from a buffer on the source node to one on the target node,
// for DRAM->HBM (0->2), HBM->DRAM (2->0) and DRAM->DRAM (0->1), with 4 KiB
// pages and with transparent huge pages.  bench/migrate_plot.py turns the
// JSON into a ratio table, a CSV and a PNG.
#include <benchmark/benchmark.h>
#include <numaif.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

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

void BM_migrate(benchmark::State &state) {
  const int *c = kCases[state.range(0)];
  const bool huge = state.range(1);
  const size_t len = Bytes(state);
  sicm_device *src = sicm_device_of_node(c[0], 0), *dst = sicm_device_of_node(c[1], 0);
  sicm_device *list[] = {src};
  sicm_arena a = sicm_arena_create_devices(
      0, list, 1, huge ? SICM_ARENA_HUGEPAGES : SICM_ARENA_NOHUGEPAGES);
  char *p = a ? (char *)sicm_arena_alloc(a, len) : nullptr;
  if (!p) {
    state.SkipWithError(sicm_error_detail());
    return;
  }
  memset(p, 1, len);
  for (auto _ : state) {
    if (sicm_arena_set_device(a, dst) != 0) {
      state.SkipWithError(sicm_error_detail());
      break;
    }
    state.PauseTiming();
    sicm_arena_set_device(a, src);
    state.ResumeTiming();
  }
  state.SetBytesProcessed((int64_t)state.iterations() * (int64_t)len);
  sicm_free(p);
  sicm_arena_destroy(a);
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

void Sizes(benchmark::internal::Benchmark *b) {
  for (int c = 0; c < 3; c++)
    for (int huge = 0; huge < 2; huge++)
      for (int lg = 12; lg <= 30; lg += 2) b->Args({c, huge, lg});
  b->ArgNames({"case", "huge", "lg"})->UseRealTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_migrate)->Apply(Sizes);
BENCHMARK(BM_memmove)->Apply(Sizes);

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
