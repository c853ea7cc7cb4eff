/* SPDX-License-Identifier: BSD-3-Clause */
// test_arena.cc: arena lifecycle, allocation calls, lookup, and the errors
// of each, on this machine (placement itself is checked in the guest).
#include <errno.h>
#include <numaif.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "sicm_autoplace.h"
#include "sicm_migration.h"
#include "sicm_test.h"

namespace {

class Arena : public sicm_test::LocalDevice {
 protected:
  sicm_arena Create(size_t maxsize = 0) {
    sicm_arena a = sicm_arena_create(maxsize, dev_);
    EXPECT_NE(nullptr, a) << sicm_error_detail();
    return a;
  }
};
// The same fixture for the long runs of `make check-stress`.
class ArenaStress : public Arena {};

TEST(ArenaUninitialized, CreateFailsWithEperm) {
  errno = 0;
  EXPECT_EQ(nullptr, sicm_arena_create(0, nullptr));
  EXPECT_EQ(EPERM, errno);
}

TEST_F(Arena, CreateRejectsBadDevicesAndFlags) {
  sicm_device forged = *dev_;
  sicm_device *forged_list[] = {&forged};
  sicm_device *twice[] = {dev_, dev_};
  struct { sicm_arena a; const char *what; } cases[] = {
      {sicm_arena_create(0, nullptr), "NULL device"},
      {sicm_arena_create(0, &forged), "device not from sicm_init"},
      {sicm_arena_create_devices(0, forged_list, 1, 0), "forged in a list"},
      {sicm_arena_create_devices(0, nullptr, 1, 0), "NULL list"},
      {sicm_arena_create_devices(0, &dev_, 0, 0), "no device"},
      {sicm_arena_create_devices(0, &dev_, SICM_ARENA_DEVICES_MAX + 1, 0), "too many"},
      {sicm_arena_create_devices(0, twice, 2, 0), "device twice"},
      {sicm_arena_create_devices(0, &dev_, 1, 1u << 20), "unknown flag"},
      {sicm_arena_create_devices(0, &dev_, 1, SICM_ARENA_PREFERRED | SICM_ARENA_INTERLEAVE),
       "conflicting placement"},
      {sicm_arena_create_devices(0, &dev_, 1, SICM_ARENA_HUGEPAGES | SICM_ARENA_NOHUGEPAGES),
       "conflicting huge pages"},
  };
  for (auto &c : cases) EXPECT_EQ(nullptr, c.a) << c.what;
  errno = 0;
  EXPECT_EQ(nullptr, sicm_arena_create(0, nullptr));
  EXPECT_EQ(EINVAL, errno);
}

TEST_F(Arena, AllocationCallsRejectBadInput) {
  sicm_arena a = Create();
  // Each call runs on its own, errno cleared before and read right after it.
  struct { int expect_errno; void *(*call)(sicm_arena); const char *what; } cases[] = {
      {EINVAL, [](sicm_arena) { return sicm_arena_alloc(nullptr, 8); }, "NULL arena"},
      {EINVAL, [](sicm_arena) { return sicm_arena_alloc((sicm_arena)(uintptr_t)0x7ffff000, 8); },
       "garbage handle"},
      {EINVAL, [](sicm_arena arena) { return sicm_arena_alloc(arena, 0); }, "size 0"},
      {ENOMEM, [](sicm_arena arena) { return sicm_arena_alloc(arena, SIZE_MAX); }, "SIZE_MAX"},
      {ENOMEM, [](sicm_arena arena) { return sicm_arena_alloc(arena, (size_t)1 << 62); },
       "beyond the address space"},
      {ENOMEM, [](sicm_arena arena) { return sicm_arena_alloc(arena, (size_t)32 << 40); },
       "32 TiB, more than the device and swap hold"},
      {ENOMEM, [](sicm_arena arena) { return sicm_arena_calloc(arena, 1 << 20, 32 << 20); },
       "calloc of 32 TiB"},
      {ENOMEM, [](sicm_arena arena) {
         void *p = sicm_arena_alloc(arena, 64), *q = sicm_realloc(p, (size_t)32 << 40);
         sicm_free(p);
         return q;
       }, "realloc to 32 TiB"},
      {EINVAL, [](sicm_arena arena) { return sicm_arena_aligned_alloc(arena, 3, 8); },
       "alignment 3"},
      {EINVAL, [](sicm_arena arena) { return sicm_arena_aligned_alloc(arena, 0, 8); },
       "alignment 0"},
      {ENOMEM, [](sicm_arena arena) { return sicm_arena_calloc(arena, SIZE_MAX / 2, 3); },
       "calloc overflow"},
      {EINVAL, [](sicm_arena arena) { return sicm_arena_calloc(arena, 0, 8); }, "calloc of 0"},
  };
  for (auto &c : cases) {
    errno = 0;
    void *got = c.call(a);
    int err = errno;
    EXPECT_EQ(nullptr, got) << c.what;
    EXPECT_EQ(c.expect_errno, err) << c.what << ": " << strerror(err);
    if (got != nullptr) sicm_free(got);
  }
  // Calls that do not return a pointer.
  errno = 0; EXPECT_EQ(0u, sicm_usable_size(nullptr)); EXPECT_EQ(EINVAL, errno);
  errno = 0; EXPECT_EQ(-1, sicm_arena_get_devices(a, nullptr, 1)); EXPECT_EQ(EINVAL, errno);
  errno = 0; EXPECT_EQ(-1, sicm_arena_get_stats(a, nullptr)); EXPECT_EQ(EINVAL, errno);
  errno = 0; EXPECT_EQ(-1, sicm_arena_residency(a, nullptr, 4)); EXPECT_EQ(EINVAL, errno);
  errno = 0; EXPECT_EQ(-1, sicm_arena_residency(a, nullptr, 0)); EXPECT_EQ(EINVAL, errno);
  EXPECT_LT(sicm_arena_size(a), (size_t)1 << 30) << "held counts only what was committed";
  errno = 0; EXPECT_EQ(-1, sicm_arenas_list(nullptr, 4)); EXPECT_EQ(EINVAL, errno);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

TEST_F(Arena, AllocCallocAlignedReallocKeepTheArenaAndContents) {
  sicm_arena a = Create();
  char *p = (char *)sicm_arena_alloc(a, 100);
  ASSERT_NE(nullptr, p);
  EXPECT_GE(sicm_usable_size(p), 100u);
  memset(p, 0x5a, 100);
  char *q = (char *)sicm_realloc(p, 1 << 20);
  ASSERT_NE(nullptr, q);
  EXPECT_EQ(a, sicm_arena_lookup(q));
  for (int i = 0; i < 100; i++) ASSERT_EQ(0x5a, q[i]);
  q = (char *)sicm_arena_realloc(a, q, 10);
  ASSERT_NE(nullptr, q);
  EXPECT_EQ(0x5a, q[9]);
  int *z = (int *)sicm_arena_calloc(a, 1000, sizeof(int));
  ASSERT_NE(nullptr, z);
  for (int i = 0; i < 1000; i++) ASSERT_EQ(0, z[i]);
  void *al = sicm_arena_aligned_alloc(a, 1 << 16, 64);
  ASSERT_NE(nullptr, al);
  EXPECT_EQ(0u, (uintptr_t)al % (1 << 16));
  EXPECT_EQ(a, sicm_arena_lookup(al));
  sicm_free(q);
  sicm_free(z);
  sicm_free(al);
  sicm_free(nullptr);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

TEST_F(Arena, ReallocOfAnotherArenasPointerStaysInItsArena) {
  sicm_arena a = Create(), b = Create();
  char *p = (char *)sicm_arena_alloc(b, 64);
  ASSERT_NE(nullptr, p);
  strcpy(p, "belongs to b");
  errno = 0;
  EXPECT_EQ(nullptr, sicm_arena_realloc(a, p, 128));
  EXPECT_EQ(EINVAL, errno);
  EXPECT_STREQ("belongs to b", p);
  EXPECT_EQ(b, sicm_arena_lookup(p));
  errno = 0;
  EXPECT_EQ(nullptr, sicm_realloc(p, 0));
  EXPECT_EQ(EINVAL, errno);
  EXPECT_STREQ("belongs to b", p);
  char stack_buf[16] = "on the stack";
  errno = 0;
  EXPECT_EQ(nullptr, sicm_realloc(stack_buf, 32));
  EXPECT_EQ(EINVAL, errno);
  sicm_free(p);
  EXPECT_EQ(0, sicm_arena_destroy(a));
  EXPECT_EQ(0, sicm_arena_destroy(b));
}

TEST_F(Arena, LookupFindsEveryByteAndNothingElse) {
  sicm_arena a = Create();
  for (size_t size : {8ul, 4096ul, 100000ul, 5ul << 20}) {
    char *p = (char *)sicm_arena_alloc(a, size);
    ASSERT_NE(nullptr, p);
    EXPECT_EQ(a, sicm_arena_lookup(p));
    EXPECT_EQ(a, sicm_arena_lookup(p + size / 2));
    EXPECT_EQ(a, sicm_arena_lookup(p + size - 1));
    sicm_free(p);
  }
  int on_stack;
  void *heap = malloc(64);
  void *gone = mmap(nullptr, 1 << 20, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(gone, 1 << 20);
  const void *foreign[] = {&on_stack, heap, nullptr, gone, (void *)-1, (void *)(uintptr_t)1,
                           (void *)0xffff800000000000ull, (void *)&sicm_init};
  for (const void *p : foreign) EXPECT_EQ(nullptr, sicm_arena_lookup(p)) << p;
  free(heap);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

// Lookups of addresses whose arenas are being created and destroyed by
// another thread never fault and name either no arena or the live one
// there (ThreadSanitizer runs this suite in CI).
TEST_F(ArenaStress, LookupsRacingCreateAndDestroyAreSafe) {
  std::atomic<char *> last{nullptr};
  std::atomic<bool> stop{false};
  std::atomic<size_t> found{0};
  std::thread looker([&] {
    while (!stop.load()) {
      char *p = last.load();
      sicm_arena owner = p ? sicm_arena_lookup(p) : nullptr;
      if (owner != nullptr) {
        found++;
        (void)sicm_arena_size(owner); // ESTALE if it went meanwhile, never a fault
      }
    }
  });
  for (int i = 0; i < 3000; i++) {
    sicm_arena a = sicm_arena_create(i % 2 ? (64u << 20) : 0, dev_);
    ASSERT_NE(nullptr, a) << sicm_error_detail();
    char *p = (char *)sicm_arena_alloc(a, 64);
    ASSERT_NE(nullptr, p);
    last = p + 32;
    EXPECT_EQ(a, sicm_arena_lookup(p + 32));
    sicm_free(p);
    ASSERT_EQ(0, sicm_arena_destroy(a));
  }
  stop = true;
  looker.join();
  EXPECT_GT(found.load(), 0u) << "the looker never saw a live arena: the test proves nothing";
}

TEST_F(Arena, FreeOfAForeignPointerIsRejectedWithoutHarm) {
  char *heap = (char *)malloc(32);
  strcpy(heap, "glibc owns this");
  int on_stack = 42;
  errno = 0;
  sicm_free(heap);
  EXPECT_EQ(EINVAL, errno);
  errno = 0;
  sicm_free(&on_stack);
  EXPECT_EQ(EINVAL, errno);
  EXPECT_STREQ("glibc owns this", heap);
  free(heap);  // still glibc's: no double free
  EXPECT_EQ(42, on_stack);
}

// Addresses of an arena where no allocation starts — inside a block, in a
// page never handed out — are refused with EINVAL by free (inline and
// called), realloc and usable_size, and never reach the allocator.
TEST_F(Arena, AddressesWhereNoAllocationStartsAreEinval) {
  sicm_arena a = Create();
  char *small = (char *)sicm_arena_alloc(a, 64);
  char *large = (char *)sicm_arena_alloc(a, 1 << 20);
  ASSERT_NE(nullptr, small);
  ASSERT_NE(nullptr, large);
  memset(small, 's', 64);
  memset(large, 'l', 1 << 20);
  std::vector<char *> bad = {small + 8, small + 1, large + 1, large + 4096, large + (512 << 10)};
  char *untouched = large + (1ul << 30); // inside the window, far past what was handed out
  if (sicm_arena_lookup(untouched) == a) bad.push_back(untouched);
  for (char *p : bad) {
    ASSERT_EQ(a, sicm_arena_lookup(p));
    errno = 0;
    sicm_free(p);
    EXPECT_EQ(EINVAL, errno) << "inline free of " << (void *)p;
    errno = 0;
    (sicm_free)(p);
    EXPECT_EQ(EINVAL, errno) << "free of " << (void *)p;
    errno = 0;
    EXPECT_EQ(nullptr, sicm_realloc(p, 100));
    EXPECT_EQ(EINVAL, errno) << "realloc of " << (void *)p;
    errno = 0;
    EXPECT_EQ(0u, sicm_usable_size(p));
    EXPECT_EQ(EINVAL, errno) << "usable_size of " << (void *)p;
  }
  // Nothing was freed: no later allocation is handed a refused address,
  // and the blocks kept their bytes.
  std::set<char *> refused(bad.begin(), bad.end());
  std::vector<void *> more;
  for (int i = 0; i < 1000; i++) {
    more.push_back(sicm_arena_alloc(a, 64));
    EXPECT_EQ(0u, refused.count((char *)more.back()));
  }
  for (void *p : more) sicm_free(p);
  for (int i = 0; i < 64; i++) ASSERT_EQ('s', small[i]);
  for (int i = 0; i < (1 << 20); i += 4093) ASSERT_EQ('l', large[i]);
  EXPECT_EQ(64u, sicm_usable_size(small));
  sicm_free(small);
  sicm_free(large);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

// Double frees: a small block freed twice in a row into its bin, inline
// or called, and a large block freed twice, or freed after a realloc moved
// it, are EINVAL; nothing is freed twice and the heap goes on.
TEST_F(Arena, DoubleFreesOfTheLastFreedOrOfLargeBlocksAreEinval) {
  sicm_arena a = Create();
  for (bool inlined : {true, false}) {
    for (size_t size : {(size_t)64, (size_t)4096, (size_t)1 << 20, (size_t)16 << 20}) {
      void *p = sicm_arena_alloc(a, size);
      ASSERT_NE(nullptr, p);
      memset(p, 1, size);
      inlined ? sicm_free(p) : (sicm_free)(p);
      errno = 0;
      inlined ? sicm_free(p) : (sicm_free)(p);
      EXPECT_EQ(EINVAL, errno) << size << (inlined ? " inline" : " called");
      // It was freed once: the next two allocations of the size are not both it.
      void *x = sicm_arena_alloc(a, size), *y = sicm_arena_alloc(a, size);
      EXPECT_TRUE(x != nullptr && y != nullptr && x != y) << size;
      sicm_free(y);
      sicm_free(x);
    }
  }
  char *big = (char *)sicm_arena_alloc(a, 1 << 20);
  void *blocker = sicm_arena_alloc(a, 1 << 20);  // so that growing must move it
  char *moved = (char *)sicm_realloc(big, 64 << 20);
  ASSERT_NE(nullptr, moved);
  if (moved != big) {
    errno = 0;
    sicm_free(big);
    EXPECT_EQ(EINVAL, errno) << "free of a block realloc moved";
  }
  sicm_free(moved);
  sicm_free(blocker);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

TEST_F(Arena, DestroyedHandleIsStaleEvenWhenTheSlotIsReused) {
  sicm_arena a = Create();
  void *p = sicm_arena_alloc(a, 64);
  ASSERT_NE(nullptr, p);
  ASSERT_EQ(0, sicm_arena_destroy(a));
  EXPECT_EQ(nullptr, sicm_arena_lookup(p)) << "its memory is gone with it";
  sicm_arena b = Create();
  ASSERT_NE(a, b);
  errno = 0; EXPECT_EQ(nullptr, sicm_arena_alloc(a, 64)); EXPECT_EQ(ESTALE, errno);
  errno = 0; EXPECT_EQ(-1, sicm_arena_destroy(a)); EXPECT_EQ(ESTALE, errno);
  errno = 0; EXPECT_EQ(0u, sicm_arena_size(a)); EXPECT_EQ(ESTALE, errno);
  errno = 0; EXPECT_EQ(nullptr, sicm_arena_get_device(a)); EXPECT_EQ(ESTALE, errno);
  errno = 0; EXPECT_EQ(-1, sicm_arena_set_default(a)); EXPECT_EQ(ESTALE, errno);
  void *q = sicm_arena_alloc(b, 64);
  EXPECT_EQ(b, sicm_arena_lookup(q));
  sicm_free(q);
  EXPECT_EQ(0, sicm_arena_destroy(b));
}

// Arena A must never hand out a region of arena B, below and above
// tcache_max (32 KiB), whether B's regions were freed by this thread or
// another.
TEST_F(Arena, ArenasNeverHandOutEachOthersMemory) {
  sicm_arena a = Create(), b = Create();
  for (size_t size : {64ul, 4096ul, 32768ul, 40000ul, 1ul << 20}) {
    for (int cross_thread = 0; cross_thread < 2; cross_thread++) {
      std::vector<void *> from_b;
      for (int i = 0; i < 64; i++) from_b.push_back(sicm_arena_alloc(b, size));
      auto free_all = [&] { for (void *p : from_b) sicm_free(p); };
      if (cross_thread) std::thread(free_all).join(); else free_all();
      std::set<void *> freed(from_b.begin(), from_b.end());
      for (int i = 0; i < 64; i++) {
        void *p = sicm_arena_alloc(a, size);
        ASSERT_NE(nullptr, p);
        EXPECT_EQ(a, sicm_arena_lookup(p)) << size << (cross_thread ? " across threads" : "");
        EXPECT_EQ(0u, freed.count(p));
        sicm_free(p);
      }
    }
  }
  EXPECT_EQ(0, sicm_arena_destroy(a));
  EXPECT_EQ(0, sicm_arena_destroy(b));
}

TEST_F(Arena, UnlimitedArenaGrowsPastOneWindow) {
  sicm_arena a = Create(0);
  // 24 GiB in blocks of at most 8 GiB and at most half the device (a
  // block larger than the device could ever back is refused), never
  // touched: address space only.
  size_t block = 8ul << 30;
  while (block > dev_->capacity / 2) block /= 2;
  std::vector<void *> big;
  for (size_t total = 0; total < (24ul << 30); total += block) {
    void *p = sicm_arena_alloc(a, block);
    ASSERT_NE(nullptr, p) << sicm_error_detail();
    EXPECT_EQ(a, sicm_arena_lookup((char *)p + block - 1));
    big.push_back(p);
  }
  EXPECT_GE(sicm_arena_size(a), 24ul << 30);
  for (void *p : big) sicm_free(p);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

size_t CountMappings() {
  FILE *f = fopen("/proc/self/maps", "r");
  size_t lines = 0;
  for (int c; (c = fgetc(f)) != EOF;) lines += c == '\n';
  fclose(f);
  return lines;
}

size_t ResidentBytes() { return sicm_test::MemoryNow().resident; }

TEST_F(ArenaStress, TenThousandCreateDestroyCyclesLeaveRssAndMappingsFlat) {
  auto cycle = [&] {
    sicm_arena a = sicm_arena_create(0, dev_);
    ASSERT_NE(nullptr, a) << sicm_error_detail();
    void *small = sicm_arena_alloc(a, 64), *large = sicm_arena_alloc(a, 100000);
    ASSERT_TRUE(small && large);
    sicm_free(small);  // left in this thread's cache for the arena
    ASSERT_EQ(0, sicm_arena_destroy(a));
  };
  for (int i = 0; i < 500; i++) cycle();
  size_t maps = CountMappings(), rss = ResidentBytes();
  for (int i = 0; i < 10000; i++) cycle();
  EXPECT_LE(CountMappings(), maps + 2);
  EXPECT_LE(ResidentBytes(), rss + (4u << 20)) << "before " << rss;
}

TEST_F(Arena, DestroyFlushesOtherThreadsCaches) {
  // A thread keeps a freed region of A in its cache while A is destroyed;
  // its next allocation from a new arena (likely in A's slot, window and
  // jemalloc index) must come from the new arena, not from that cache.
  sicm_arena a = Create();
  std::mutex m;
  std::condition_variable cv;
  int phase = 0;
  void *cached = nullptr;
  sicm_arena b = nullptr;
  void *from_b = nullptr;
  std::thread t([&] {
    cached = sicm_arena_alloc(a, 64);
    sicm_free(cached);
    { std::lock_guard<std::mutex> g(m); phase = 1; }
    cv.notify_all();
    std::unique_lock<std::mutex> l(m);
    cv.wait(l, [&] { return phase == 2; });
    from_b = sicm_arena_alloc(b, 64);
  });
  {
    std::unique_lock<std::mutex> l(m);
    cv.wait(l, [&] { return phase == 1; });
  }
  ASSERT_EQ(0, sicm_arena_destroy(a));
  b = Create();
  { std::lock_guard<std::mutex> g(m); phase = 2; }
  cv.notify_all();
  t.join();
  ASSERT_NE(nullptr, from_b);
  EXPECT_EQ(b, sicm_arena_lookup(from_b));
  sicm_arena_stats st;
  ASSERT_EQ(0, sicm_arena_get_stats(b, &st));
  EXPECT_GE(st.allocated, 64u) << "the region did not come from b's allocator";
  sicm_free(from_b);
  EXPECT_EQ(0, sicm_arena_destroy(b));
}

// fork() while other threads create, fill, move and destroy arenas: each
// child does all of that itself and exits; none hangs on a lock held by a
// thread it does not have.
TEST_F(ArenaStress, ForkedChildrenUseArenasWhileThreadsWork) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < 3; t++)
    workers.emplace_back([&, t] {
      std::mt19937 rng(t);
      while (!stop.load()) {
        sicm_arena a = sicm_arena_create(0, dev_);
        if (a == nullptr) continue;
        std::vector<void *> blocks;
        for (int i = 0; i < 100; i++) blocks.push_back(sicm_arena_alloc(a, 16 + rng() % 200000));
        sicm_arena_set_device(a, dev_);
        for (void *b : blocks) sicm_free(b);
        sicm_arena_destroy(a);
      }
    });
  unsigned hung = 0, failed = 0;
  for (int i = 0; i < 500 && hung + failed < 3; i++) { // a broken build stops early
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      alarm(10); // a hung child dies of SIGALRM and is counted
      sicm_arena a = sicm_arena_create(0, dev_);
      char *p = a ? (char *)sicm_arena_alloc(a, 1 << 20) : nullptr;
      bool ok = p != nullptr;
      if (ok) {
        memset(p, 3, 1 << 20);
        ok = sicm_arena_set_device(a, dev_) == 0 && p[12345] == 3;
        sicm_free(p);
        ok = sicm_arena_destroy(a) == 0 && ok;
      }
      _exit(ok ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(pid, waitpid(pid, &status, 0));
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
      hung++;
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      failed++;
  }
  stop = true;
  for (auto &w : workers) w.join();
  EXPECT_EQ(0u, hung);
  EXPECT_EQ(0u, failed);
}

TEST_F(Arena, ListDevicesSizeAndStats) {
  sicm_arena a = Create(), b = Create();
  std::vector<sicm_arena> list(8);
  int n = sicm_arenas_list(list.data(), list.size());
  ASSERT_GE(n, 2);
  list.resize(std::min<size_t>(n, list.size()));
  EXPECT_NE(list.end(), std::find(list.begin(), list.end(), a));
  EXPECT_NE(list.end(), std::find(list.begin(), list.end(), b));
  sicm_device *devs[2] = {};
  EXPECT_EQ(1, sicm_arena_get_devices(a, devs, 2));
  EXPECT_EQ(dev_, devs[0]);
  EXPECT_EQ(dev_, sicm_arena_get_device(a));
  void *p = sicm_arena_alloc(a, 3 << 20);
  sicm_arena_stats st;
  ASSERT_EQ(0, sicm_arena_get_stats(a, &st));
  EXPECT_GE(st.allocated, 3u << 20);
  EXPECT_GE(st.active, 3u << 20);
  EXPECT_GE(st.mapped, st.active);
  EXPECT_EQ(sicm_arena_size(a), st.held);
  EXPECT_GE(st.held, 3u << 20);
  sicm_free(p);
  EXPECT_EQ(0, sicm_arena_destroy(a));
  n = sicm_arenas_list(list.data(), list.size());
  EXPECT_EQ(list.begin() + std::min<size_t>(n, list.size()),
            std::find(list.begin(), list.begin() + std::min<size_t>(n, list.size()), a));
  EXPECT_EQ(0, sicm_arena_destroy(b));
}

// The policy the kernel reports for the page at p, or -1.
int PolicyAt(void *p) {
  int mode = -1;
  unsigned long nodes[16] = {};
  return get_mempolicy(&mode, nodes, sizeof nodes * 8, p, MPOL_F_ADDR) == 0 ? mode : -1;
}

TEST_F(Arena, FirstTouchBindsNothingUntilAMove) {
  const unsigned first_touch = SICM_ARENA_FIRST_TOUCH;
  for (unsigned other : {(unsigned)SICM_ARENA_PREFERRED, (unsigned)SICM_ARENA_INTERLEAVE,
                         (unsigned)SICM_ARENA_AUTOPLACE, (unsigned)SICM_ARENA_ANYWHERE}) {
    errno = 0;
    EXPECT_EQ(nullptr, sicm_arena_create_devices(0, &dev_, 1, first_touch | other)) << other;
    EXPECT_EQ(EINVAL, errno) << other;
  }
  sicm_arena a = sicm_arena_create_devices(0, &dev_, 1, first_touch);
  ASSERT_NE(nullptr, a) << sicm_error_detail();
  EXPECT_EQ(dev_, sicm_arena_get_device(a));
  char *small = static_cast<char *>(sicm_arena_alloc(a, 64));
  char *large = static_cast<char *>(sicm_arena_alloc(a, 5 << 20));
  ASSERT_TRUE(small != nullptr && large != nullptr);
  memset(large, 1, 5 << 20);
  EXPECT_EQ(MPOL_DEFAULT, PolicyAt(small));
  EXPECT_EQ(MPOL_DEFAULT, PolicyAt(large + (4 << 20)));
  errno = 0;
  EXPECT_EQ(-1, sicm_arena_set_devices(a, &dev_, 1, first_touch));
  EXPECT_EQ(EINVAL, errno);
  ASSERT_EQ(0, sicm_arena_set_device(a, dev_)) << sicm_error_detail();
  EXPECT_EQ(MPOL_BIND, PolicyAt(large));
  EXPECT_EQ(1, large[(5 << 20) - 1]);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

TEST_F(Arena, DefaultArenaPerThread) {
  void *lib = sicm_alloc(100);
  ASSERT_NE(nullptr, lib);
  EXPECT_EQ(sicm_arena_get_default(), sicm_arena_lookup(lib));
  sicm_arena mine = Create();
  ASSERT_EQ(0, sicm_arena_set_default(mine));
  void *p = sicm_alloc(100);
  EXPECT_EQ(mine, sicm_arena_lookup(p));
  std::thread([&] {
    void *q = sicm_alloc(100);
    EXPECT_NE(mine, sicm_arena_lookup(q)) << "the default is per thread";
    sicm_free(q);
  }).join();
  void *r = sicm_realloc(nullptr, 50);
  EXPECT_EQ(mine, sicm_arena_lookup(r));
  sicm_free(p);
  sicm_free(r);
  sicm_free(lib);
  ASSERT_EQ(0, sicm_arena_set_default(nullptr));
  EXPECT_EQ(0, sicm_arena_destroy(mine));
}

TEST_F(Arena, LastFiniWithLiveArenasIsEbusy) {
  sicm_arena a = Create();
  ASSERT_NE(nullptr, sicm_alloc(10));  // the library default does not block fini
  // init_ holds the only reference.
  errno = 0;
  EXPECT_EQ(-1, sicm_fini());
  EXPECT_EQ(EBUSY, errno);
  EXPECT_NE(nullptr, sicm_devices()) << "still initialized";
  void *p = sicm_arena_alloc(a, 10);
  EXPECT_NE(nullptr, p) << "and the arena still works";
  sicm_free(p);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

}  // namespace
