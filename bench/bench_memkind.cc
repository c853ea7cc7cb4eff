/* SPDX-License-Identifier: BSD-3-Clause */
// bench_memkind.cc: the memkind API's alloc+free pairs — hbw_malloc,
// hbw_calloc, hbw_posix_memalign and memkind_malloc of every kind — in
// libsicm's libmemkind and in Debian's memkind 1.14, against jemalloc's
// malloc, calloc and posix_memalign (the process malloc) in the same run.
// Both memkind libraries share a soname, so each is loaded by path with
// dlopen(RTLD_LOCAL) and called through its own symbols: SICM_MEMKIND and
// DEBIAN_MEMKIND name the files; a missing one is left out, and one set
// empty too.  `make bench-memkind` runs each library in a process of its
// own: loaded beside ours, Debian's memkind slowed our 2-thread pairs in
// the guest.  A kind that a library cannot serve here (no HBM on the host)
// is reported as an error row, not timed.  Every timed thread runs on a CPU
// of its own, thread i on the i-th CPU the process may use, for every
// library alike: as HPC runs pin theirs, and because a thread the scheduler
// moves to a CPU of another node changes arenas in a library that follows
// the thread's node.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>

namespace {

typedef struct memkind *memkind_t;

struct Library {
  const char *name, *env, *fallback;
  void *(*memkind_malloc)(memkind_t, size_t);
  void (*memkind_free)(memkind_t, void *);
  void *(*hbw_malloc)(size_t);
  void *(*hbw_calloc)(size_t, size_t);
  int (*hbw_posix_memalign)(void **, size_t, size_t);
  void (*hbw_free)(void *);
};
Library libraries[] = {
    {"sicm", "SICM_MEMKIND", nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr},
    {"debian", "DEBIAN_MEMKIND", "/usr/lib/x86_64-linux-gnu/libmemkind.so.0", nullptr, nullptr,
     nullptr, nullptr, nullptr, nullptr},
};

// The kinds the issue names, by their exported variable.
const char *const kKinds[] = {
    "MEMKIND_DEFAULT", "MEMKIND_HBW", "MEMKIND_HBW_PREFERRED", "MEMKIND_HBW_INTERLEAVE",
    "MEMKIND_HIGHEST_CAPACITY", "MEMKIND_HIGHEST_CAPACITY_LOCAL",
    "MEMKIND_LOWEST_LATENCY_LOCAL", "MEMKIND_HIGHEST_BANDWIDTH_LOCAL",
    "MEMKIND_HIGHEST_BANDWIDTH_LOCAL_PREFERRED",
};

// The CPUs the process may use, read before any thread is pinned.
cpu_set_t allowed_cpus;

// Pins the calling benchmark thread to the thread_index-th allowed CPU
// (BENCH_PIN=0: not pinned).
void Pin(const benchmark::State &state) {
  static const bool off = getenv("BENCH_PIN") && strcmp(getenv("BENCH_PIN"), "0") == 0;
  if (off) return;
  int want = state.thread_index() % CPU_COUNT(&allowed_cpus);
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
    if (CPU_ISSET(cpu, &allowed_cpus) && want-- == 0) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      sched_setaffinity(0, sizeof one, &one);
      return;
    }
}

void Sizes(benchmark::internal::Benchmark *b) {
  b->Arg(64)->Arg(4096)->Threads(1)->Threads(2)->UseRealTime();
}

// The peers: jemalloc, the process's allocator.
void BM_jemalloc_malloc(benchmark::State &state) {
  const size_t size = state.range(0);
  Pin(state);
  for (auto _ : state) {
    void *p = malloc(size);
    benchmark::DoNotOptimize(p);
    free(p);
  }
}
void BM_jemalloc_calloc(benchmark::State &state) {
  const size_t size = state.range(0);
  Pin(state);
  for (auto _ : state) {
    void *p = calloc(1, size);
    benchmark::DoNotOptimize(p);
    free(p);
  }
}
void BM_jemalloc_posix_memalign(benchmark::State &state) {
  const size_t size = state.range(0);
  Pin(state);
  for (auto _ : state) {
    void *p = nullptr;
    benchmark::DoNotOptimize(posix_memalign(&p, 64, size));
    benchmark::DoNotOptimize(p);
    free(p);
  }
}

// Each timed loop first checks that the call works here.
template <class Alloc, class Release>
void Pairs(benchmark::State &state, Alloc alloc, Release release) {
  const size_t size = state.range(0);
  Pin(state);
  void *probe = alloc(size);
  if (probe == nullptr) {
    state.SkipWithError("not available on this machine");
    return;
  }
  release(probe);
  for (auto _ : state) {
    void *p = alloc(size);
    benchmark::DoNotOptimize(p);
    release(p);
  }
}

// The timed loops call through copies of the library's function pointers
// that live in the loop's own frame, as the peers' calls need no load: a
// load from `libraries` would add a page of this program to each pair,
// which under TCG is one more TLB entry to collide.
void Register(Library &l, void *handle) {
  std::string n(l.name);
  auto hbw_malloc = l.hbw_malloc;
  auto hbw_calloc = l.hbw_calloc;
  auto hbw_posix_memalign = l.hbw_posix_memalign;
  auto hbw_free = l.hbw_free;
  auto memkind_malloc = l.memkind_malloc;
  auto memkind_free = l.memkind_free;
  benchmark::RegisterBenchmark(("BM_" + n + "_hbw_malloc").c_str(),
                               [=](benchmark::State &s) { Pairs(s, hbw_malloc, hbw_free); })
      ->Apply(Sizes);
  benchmark::RegisterBenchmark(("BM_" + n + "_hbw_calloc").c_str(),
                               [=](benchmark::State &s) {
                                 Pairs(s, [=](size_t z) { return hbw_calloc(1, z); }, hbw_free);
                               })->Apply(Sizes);
  benchmark::RegisterBenchmark(("BM_" + n + "_hbw_posix_memalign").c_str(),
                               [=](benchmark::State &s) {
                                 Pairs(s,
                                       [=](size_t z) {
                                         void *p = nullptr;
                                         return hbw_posix_memalign(&p, 64, z) == 0 ? p
                                                                                   : nullptr;
                                       },
                                       hbw_free);
                               })->Apply(Sizes);
  for (const char *kind_name : kKinds) {
    auto *var = (memkind_t *)dlsym(handle, kind_name);
    if (var == nullptr) {
      fprintf(stderr, "bench_memkind: %s has no %s; left out\n", l.name, kind_name);
      continue;
    }
    memkind_t kind = *var;
    benchmark::RegisterBenchmark(("BM_" + n + "_memkind_malloc/" + kind_name).c_str(),
                                 [=](benchmark::State &s) {
                                   Pairs(s, [=](size_t z) { return memkind_malloc(kind, z); },
                                         [=](void *p) { memkind_free(kind, p); });
                                 })->Apply(Sizes);
  }
}

template <class F>
bool Find(void *handle, const char *name, F *&out) {
  out = (F *)dlsym(handle, name);
  return out != nullptr;
}

}  // namespace

int main(int argc, char **argv) {
  if (sched_getaffinity(0, sizeof allowed_cpus, &allowed_cpus) != 0) {
    perror("bench_memkind: sched_getaffinity");
    return 1;
  }
  if (dlsym(RTLD_DEFAULT, "mallctl") == nullptr) {
    fprintf(stderr, "bench_memkind: malloc is not jemalloc's; fix the link order\n");
    return 1;
  }
  benchmark::AddCustomContext("process_malloc", "jemalloc");
  benchmark::RegisterBenchmark("BM_jemalloc_malloc", BM_jemalloc_malloc)->Apply(Sizes);
  benchmark::RegisterBenchmark("BM_jemalloc_calloc", BM_jemalloc_calloc)->Apply(Sizes);
  benchmark::RegisterBenchmark("BM_jemalloc_posix_memalign", BM_jemalloc_posix_memalign)
      ->Apply(Sizes);
  for (auto &l : libraries) {
    const char *path = getenv(l.env) ? getenv(l.env) : l.fallback;
    if (path != nullptr && path[0] == '\0') continue; /* set empty: left out on purpose */
    void *h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (h == nullptr || !Find(h, "memkind_malloc", l.memkind_malloc) ||
        !Find(h, "memkind_free", l.memkind_free) || !Find(h, "hbw_malloc", l.hbw_malloc) ||
        !Find(h, "hbw_calloc", l.hbw_calloc) ||
        !Find(h, "hbw_posix_memalign", l.hbw_posix_memalign) || !Find(h, "hbw_free", l.hbw_free)) {
      fprintf(stderr, "bench_memkind: %s memkind not loaded (%s): %s; left out\n", l.name,
              path ? path : "no path", dlerror());
      continue;
    }
    benchmark::AddCustomContext(std::string(l.name) + "_memkind", path);
    Register(l, h);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
