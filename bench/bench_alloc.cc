/* SPDX-License-Identifier: BSD-3-Clause */
// bench_alloc.cc: the cost of allocation — a pair at sizes from 16 B to
// 64 MiB, random sizes among 10,000 live blocks, blocks handed from one
// thread to another, two arenas alternated — and of a pointer lookup,
// libsicm against its peers in the same run: jemalloc (the process malloc),
// tcmalloc, mimalloc and glibc (loaded by name), memkind,
// numa_alloc_onnode, and lanl/SICM's uncached-arena approach.
#include <benchmark/benchmark.h>
#include <jemalloc/jemalloc.h>
#include <numa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dlfcn.h>

#include <atomic>
#include <random>
#include <string>
#include <vector>

#include "sicm.h"
#ifdef BENCH_MEMKIND
#include <memkind.h>
#endif

namespace {

sicm_arena shared_arena;     // one arena shared by every benchmark thread
unsigned lanl_arena_index;   // a plain jemalloc arena, used uncached as lanl/SICM does

// The allocators compared, each a pair of calls.  Peers that are not the
// process malloc are loaded with dlopen (RTLD_LOCAL), so each serves only
// the calls made to it by name; a missing one is left out of the run.
struct Sicm {  // through the header's inline fast path
  static void *alloc(size_t n) { return sicm_arena_alloc(shared_arena, n); }
  static void release(void *p) { sicm_free(p); }
};
struct SicmCall {  // the library's functions, as with SICM_NO_INLINE or dlsym
  static void *alloc(size_t n) { return (sicm_arena_alloc)(shared_arena, n); }
  static void release(void *p) { (sicm_free)(p); }
};
struct Malloc {  // the process's malloc: jemalloc
  static void *alloc(size_t n) { return malloc(n); }
  static void release(void *p) { free(p); }
};
#ifdef BENCH_MEMKIND
struct Memkind {
  static void *alloc(size_t n) { return memkind_malloc(MEMKIND_DEFAULT, n); }
  static void release(void *p) { memkind_free(MEMKIND_DEFAULT, p); }
};
#endif
struct Loaded {
  const char *name, *library, *alloc_symbol, *free_symbol;
  void *(*alloc)(size_t);
  void (*release)(void *);
};
Loaded loaded[] = {
    {"tcmalloc", "libtcmalloc_minimal.so.4", "tc_malloc", "tc_free", nullptr, nullptr},
    {"mimalloc", "libmimalloc.so.2", "mi_malloc", "mi_free", nullptr, nullptr},
    {"glibc", "libc.so.6", "__libc_malloc", "__libc_free", nullptr, nullptr},
};
template <int I>
struct Peer {
  static void *alloc(size_t n) { return loaded[I].alloc(n); }
  static void release(void *p) { loaded[I].release(p); }
};

template <class A>
void BM_pair(benchmark::State &state) {
  const size_t size = state.range(0);
  for (auto _ : state) {
    void *p = A::alloc(size);
    benchmark::DoNotOptimize(p);
    A::release(p);
  }
}

// 10,000 live blocks of random sizes (16 B - 4 KiB); each iteration frees
// one at random and allocates its replacement.
template <class A>
void BM_random(benchmark::State &state) {
  const size_t live = 10000;
  std::mt19937 rng(state.thread_index() + 1);
  std::uniform_int_distribution<size_t> size_of(16, 4096);
  std::vector<size_t> sizes(1 << 16), slots(1 << 16);
  for (auto &s : sizes) s = size_of(rng);
  for (auto &s : slots) s = rng() % live;
  std::vector<void *> blocks(live);
  for (size_t i = 0; i < live; i++) blocks[i] = A::alloc(sizes[i]);
  size_t k = 0;
  for (auto _ : state) {
    const size_t i = slots[k & 0xffff];
    A::release(blocks[i]);
    void *p = A::alloc(sizes[k & 0xffff]);
    // Not DoNotOptimize(blocks[i]): GCC 12 drops the store to blocks[i]
    // around Google Benchmark 1.7's "+m,r" asm (seen here), freeing
    // blocks twice.
    benchmark::DoNotOptimize(p);
    blocks[i] = p;
    k++;
  }
  for (void *p : blocks) A::release(p);
}

// Thread 0 allocates 64-byte blocks and hands them to thread 1, which
// frees them: every free is of another thread's block.
struct Handoff {
  static constexpr size_t kSize = 1024;
  std::atomic<size_t> head{0}, tail{0};
  void *ring[kSize];
};
Handoff handoff;

template <class A>
void BM_handoff(benchmark::State &state) {
  if (state.thread_index() == 0) {
    handoff.head = 0;
    handoff.tail = 0;
  }
  for (auto _ : state) {
    if (state.thread_index() == 0) {
      void *p = A::alloc(64);
      size_t h = handoff.head.load(std::memory_order_relaxed);
      while (h - handoff.tail.load(std::memory_order_acquire) == Handoff::kSize) {}
      handoff.ring[h % Handoff::kSize] = p;
      handoff.head.store(h + 1, std::memory_order_release);
    } else {
      size_t t = handoff.tail.load(std::memory_order_relaxed);
      while (handoff.head.load(std::memory_order_acquire) == t) {}
      void *p = handoff.ring[t % Handoff::kSize];
      handoff.tail.store(t + 1, std::memory_order_release);
      A::release(p);
    }
  }
}

// `bench_alloc --count-pairs` runs kCountedPairs 64-byte pairs per
// allocator in CountPairs<A>, for callgrind to count instructions per pair
// (`make bench-instructions`): Google Benchmark's own runs vary in number.
constexpr long kCountedPairs = 100000;
template <class A>
__attribute__((noinline)) void CountPairs() {
  for (long i = 0; i < kCountedPairs; i++) {
    void *p = A::alloc(64);
    benchmark::DoNotOptimize(p);
    A::release(p);
  }
}

// Sizes of the table in BENCHMARKS.md: small (bins and tcache), large
// (jemalloc's extents), and from 8 MiB (purged at every free).
void PairSizes(benchmark::internal::Benchmark *b) {
  for (long size : {16l, 64l, 1024l, 4096l, 32l << 10, 256l << 10, 1l << 20, 4l << 20,
                    8l << 20, 64l << 20})
    b->Arg(size);
  b->Threads(1)->Threads(2)->UseRealTime();
}

bool count_pairs;  // --count-pairs: CountPairs<A> instead of registering

template <class A>
void Register(const char *name, bool all_sizes = true) {
  if (count_pairs) {
    CountPairs<A>();
    fprintf(stderr, "counted %s\n", name);
    return;
  }
  std::string n(name);
  auto *pair = benchmark::RegisterBenchmark(("BM_pair_" + n).c_str(), BM_pair<A>);
  if (all_sizes)
    pair->Apply(PairSizes);
  else
    pair->Arg(16)->Arg(64)->Arg(1024)->Arg(4096)->Threads(1)->Threads(2)->UseRealTime();
  benchmark::RegisterBenchmark(("BM_random_" + n).c_str(), BM_random<A>)
      ->Threads(1)->Threads(2)->UseRealTime();
  benchmark::RegisterBenchmark(("BM_handoff_" + n).c_str(), BM_handoff<A>)
      ->Threads(2)->UseRealTime();
}

void RegisterAll() {
  Register<Sicm>("sicm");
  Register<SicmCall>("sicm_call");
  Register<Malloc>("malloc");
#ifdef BENCH_MEMKIND
  Register<Memkind>("memkind", false);
#endif
  for (auto &l : loaded) {
    void *h = dlopen(l.library, RTLD_NOW | RTLD_LOCAL);
    if (h != nullptr) {
      l.alloc = (void *(*)(size_t))dlsym(h, l.alloc_symbol);
      l.release = (void (*)(void *))dlsym(h, l.free_symbol);
    }
    if (l.alloc == nullptr || l.release == nullptr) {
      fprintf(stderr, "bench_alloc: peer %s not available (%s); left out\n", l.name, l.library);
      continue;
    }
    const int i = (int)(&l - loaded);
    if (i == 0) Register<Peer<0>>(l.name, false);
    if (i == 1) Register<Peer<1>>(l.name, false);
    if (i == 2) Register<Peer<2>>(l.name, false);
  }
}

void BM_pair_lanl_tcache_none(benchmark::State &state) {
  const size_t size = state.range(0);
  const int flags = MALLOCX_ARENA(lanl_arena_index) | MALLOCX_TCACHE_NONE;
  for (auto _ : state) {
    void *p = mallocx(size, flags);
    benchmark::DoNotOptimize(p);
    dallocx(p, MALLOCX_TCACHE_NONE);
  }
}
BENCHMARK(BM_pair_lanl_tcache_none)->Arg(64)->Arg(4096)->Threads(1)->Threads(2)->UseRealTime();

void BM_pair_numa_alloc_onnode(benchmark::State &state) {
  const size_t size = state.range(0);
  for (auto _ : state) {
    void *p = numa_alloc_onnode(size, 0);
    benchmark::DoNotOptimize(p);
    numa_free(p, size);
  }
}
BENCHMARK(BM_pair_numa_alloc_onnode)->Arg(64)->Arg(4096)->Threads(1)->Threads(2)->UseRealTime();

// Two arenas alternated: each allocation names the other arena than the
// one before, as when two groups of data are built interleaved, or the
// preload's per-site arenas serve calls from alternating sites.  One
// iteration is a 64-byte pair in each arena.  The peer is jemalloc with
// two arenas, each reached through an explicit tcache of its own (what
// libsicm makes per thread and arena); such a tcache serves one thread.
sicm_arena alternate_arenas[2];
unsigned alternate_je_arenas[2];

template <bool Called>
void BM_alternate_sicm(benchmark::State &state) {
  for (auto _ : state) {
    for (sicm_arena a : alternate_arenas) {
      void *p = Called ? (sicm_arena_alloc)(a, 64) : sicm_arena_alloc(a, 64);
      benchmark::DoNotOptimize(p);
      if (Called)
        (sicm_free)(p);
      else
        sicm_free(p);
    }
  }
}
void BM_alternate_sicm_inline(benchmark::State &state) { BM_alternate_sicm<false>(state); }
void BM_alternate_sicm_call(benchmark::State &state) { BM_alternate_sicm<true>(state); }
BENCHMARK(BM_alternate_sicm_inline)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_alternate_sicm_call)->Threads(1)->Threads(2)->UseRealTime();

void BM_alternate_jemalloc_tcaches(benchmark::State &state) {
  unsigned tcaches[2];
  int flags[2];
  for (int i = 0; i < 2; i++) {
    size_t len = sizeof tcaches[i];
    if (mallctl("tcache.create", &tcaches[i], &len, nullptr, 0) != 0) {
      state.SkipWithError("tcache.create failed");
      return;
    }
    flags[i] = MALLOCX_ARENA(alternate_je_arenas[i]) | MALLOCX_TCACHE(tcaches[i]);
  }
  for (auto _ : state) {
    for (int f : flags) {
      void *p = mallocx(64, f);
      benchmark::DoNotOptimize(p);
      dallocx(p, f);
    }
  }
  for (unsigned &tcache : tcaches) mallctl("tcache.destroy", nullptr, nullptr, &tcache, sizeof tcache);
}
BENCHMARK(BM_alternate_jemalloc_tcaches)->Threads(1)->Threads(2)->UseRealTime();

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
  size_t len = sizeof lanl_arena_index;
  if (mallctl("arenas.create", &lanl_arena_index, &len, nullptr, 0) != 0 ||
      mallctl("arenas.create", &alternate_je_arenas[0], &len, nullptr, 0) != 0 ||
      mallctl("arenas.create", &alternate_je_arenas[1], &len, nullptr, 0) != 0) {
    fprintf(stderr, "bench_alloc: arenas.create failed\n");
    return 1;
  }
  for (sicm_arena &a : alternate_arenas)
    if ((a = sicm_arena_create(0, sicm_device_of_node(sicm_node_self(), 0))) == nullptr) {
      fprintf(stderr, "sicm_arena_create: %s\n", sicm_error_detail());
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
  count_pairs = argc > 1 && strcmp(argv[1], "--count-pairs") == 0;
  RegisterAll();
  if (count_pairs) return 0;
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  sicm_arena_destroy(shared_arena);
  for (sicm_arena a : alternate_arenas) sicm_arena_destroy(a);
  sicm_fini();
  return 0;
}
