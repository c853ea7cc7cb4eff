/* SPDX-License-Identifier: BSD-3-Clause */
// bench_shared.cc: alloc+free pairs in a heap shared by processes, libsicm's
// shared arena against Boost.Interprocess managed_shared_memory (red-black
// tree best fit, no crash recovery) in the same run; from one process, from
// two (a forked second process runs the same loop meanwhile), and with many
// live blocks already in the heap (cost per pair must not grow with them).
#include <benchmark/benchmark.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/interprocess/managed_shared_memory.hpp>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "sicm.h"

namespace {

namespace bip = boost::interprocess;
const size_t kHeapSize = 256 << 20;

struct SicmHeap {
  std::string name;
  sicm_arena arena;
  SicmHeap() : name("/sicm-bench-" + std::to_string(getpid())) {
    sicm_arena_unlink(name.c_str());
    arena = sicm_arena_create_shared(name.c_str(), kHeapSize,
                                     sicm_device_of_node(sicm_node_self(), 0), 0600);
    if (arena == nullptr) {
      fprintf(stderr, "bench_shared: %s\n", sicm_error_detail());
      abort();
    }
  }
  ~SicmHeap() {
    sicm_arena_detach(arena);
    sicm_arena_unlink(name.c_str());
  }
  void *alloc(size_t n) { return sicm_arena_alloc(arena, n); }
  void free(void *p) { sicm_free(p); }
};

struct BoostHeap {
  std::string name;
  std::unique_ptr<bip::managed_shared_memory> segment;
  BoostHeap() : name("boost-bench-" + std::to_string(getpid())) {
    bip::shared_memory_object::remove(name.c_str());
    segment.reset(new bip::managed_shared_memory(bip::create_only, name.c_str(), kHeapSize));
  }
  ~BoostHeap() {
    segment.reset();
    bip::shared_memory_object::remove(name.c_str());
  }
  void *alloc(size_t n) { return segment->allocate(n, std::nothrow); }
  void free(void *p) { segment->deallocate(p); }
};

// Lives in a MAP_SHARED page: the second process's start and stop.
struct Control {
  int ready;
  int stop;
};

template <typename Heap>
void BM_shared(benchmark::State &state) {
  const size_t size = state.range(0);
  const long procs = state.range(1), live = state.range(2);
  Heap heap;
  // Live blocks of mixed sizes, half of them freed again: long free lists.
  std::mt19937 rng(1);
  std::vector<void *> kept;
  for (long i = 0; i < live; i++) kept.push_back(heap.alloc(16 + rng() % 1024));
  for (size_t i = 0; i < kept.size(); i += 2) heap.free(kept[i]);
  auto *control = static_cast<Control *>(mmap(nullptr, sizeof(Control), PROT_READ | PROT_WRITE,
                                              MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  pid_t child = -1;
  if (procs == 2) {
    child = fork();
    if (child == 0) {
      __atomic_store_n(&control->ready, 1, __ATOMIC_RELEASE);
      while (!__atomic_load_n(&control->stop, __ATOMIC_ACQUIRE)) {
        void *p = heap.alloc(size);
        benchmark::DoNotOptimize(p);
        heap.free(p);
      }
      _exit(0);
    }
    while (!__atomic_load_n(&control->ready, __ATOMIC_ACQUIRE)) usleep(50);
  }
  for (auto _ : state) {
    void *p = heap.alloc(size);
    benchmark::DoNotOptimize(p);
    heap.free(p);
  }
  __atomic_store_n(&control->stop, 1, __ATOMIC_RELEASE);
  if (child > 0) waitpid(child, nullptr, 0);
  munmap(control, sizeof(Control));
  for (size_t i = 1; i < kept.size(); i += 2) heap.free(kept[i]);
}

void Args(benchmark::internal::Benchmark *b) {
  b->ArgNames({"size", "procs", "live"});
  for (long size : {64, 4096})
    for (long procs : {1, 2}) b->Args({size, procs, 0});
  b->Args({64, 1, 100000});
  b->UseRealTime();
}

BENCHMARK_TEMPLATE(BM_shared, SicmHeap)->Name("BM_shared_sicm")->Apply(Args);
BENCHMARK_TEMPLATE(BM_shared, BoostHeap)->Name("BM_shared_boost")->Apply(Args);

}  // namespace

int main(int argc, char **argv) {
  if (sicm_init() != 0) {
    fprintf(stderr, "bench_shared: sicm_init: %s\n", sicm_error_detail());
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return sicm_fini() == 0 ? 0 : 1;
}
