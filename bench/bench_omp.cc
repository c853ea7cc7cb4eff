/* SPDX-License-Identifier: BSD-3-Clause */
// bench_omp.cc: OpenMP's allocators through LLVM's libomp, a runtime
// nobody here wrote — an omp_alloc+omp_free pair with
// omp_high_bw_mem_alloc and omp_large_cap_mem_alloc (which libomp serves
// through the libmemkind.so it loads: libsicm's when LD_LIBRARY_PATH
// points there) against the same pair with omp_default_mem_alloc (libomp's
// own path to malloc) in the same run.  Built with clang -fopenmp.  Each
// benchmark first reports which allocator libomp really used: one whose
// memory libomp could not find falls back to the default allocator, which
// would make its ratio meaningless.
#include <benchmark/benchmark.h>
#include <omp.h>

namespace {

template <omp_allocator_handle_t *A>
void BM_omp_pair(benchmark::State &state) {
  const size_t size = state.range(0);
  for (auto _ : state) {
    void *p = omp_alloc(size, *A);
    benchmark::DoNotOptimize(p);
    omp_free(p, *A);
  }
}

omp_allocator_handle_t default_alloc = omp_default_mem_alloc;
omp_allocator_handle_t high_bw_alloc = omp_high_bw_mem_alloc;
omp_allocator_handle_t large_cap_alloc = omp_large_cap_mem_alloc;

void Sizes(benchmark::internal::Benchmark *b) {
  b->Arg(64)->Arg(4096)->Threads(1)->Threads(2)->UseRealTime();
}

}  // namespace

BENCHMARK_TEMPLATE(BM_omp_pair, &default_alloc)->Name("BM_omp_default_mem_alloc")->Apply(Sizes);
BENCHMARK_TEMPLATE(BM_omp_pair, &high_bw_alloc)->Name("BM_omp_high_bw_mem_alloc")->Apply(Sizes);
BENCHMARK_TEMPLATE(BM_omp_pair, &large_cap_alloc)->Name("BM_omp_large_cap_mem_alloc")->Apply(Sizes);

int main(int argc, char **argv) {
  // A null-fallback allocator in the high-bandwidth space exists only when
  // libomp found memkind's HBW kinds: say so in the run's context.
  omp_alloctrait_t traits[] = {{omp_atk_fallback, omp_atv_null_fb}};
  omp_allocator_handle_t strict = omp_init_allocator(omp_high_bw_mem_space, 1, traits);
  benchmark::AddCustomContext("high_bw_memory_found", strict == omp_null_allocator ? "no" : "yes");
  if (strict != omp_null_allocator)
    omp_destroy_allocator(strict);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
