/* SPDX-License-Identifier: BSD-3-Clause */
// test_allocator.cc: OpenMP-style allocators and the C++ wrappers on this
// one-node machine — traits, pool size, every fallback, errors, STL
// containers inside their arena.  Placement by memory space is checked in
// the guest (numa_allocator, numa_nohbm).
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "sicm.hpp"
#include "sicm_test.h"

namespace {

class Allocator : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(init_.ok()); }
  sicm_test::Initialized init_;
};

sicm_arena OwnArena(sicm_allocator *a) {
  sicm_arena arena = nullptr;
  EXPECT_EQ(1, sicm_allocator_arenas(a, &arena, 1));
  return arena;
}

TEST_F(Allocator, BadTraitsAreRejectedAtCreation) {
  struct { sicm_alloctrait trait; int err; } cases[] = {
      {{SICM_ATK_ALIGNMENT, 24}, EINVAL},
      {{SICM_ATK_POOL_SIZE, 0}, EINVAL},
      {{SICM_ATK_FALLBACK, SICM_ATV_ALLOCATOR_FB}, EINVAL},  // no fb_data
      {{SICM_ATK_FALLBACK, SICM_ATV_NEAREST}, EINVAL},
      {{SICM_ATK_ACCESS, SICM_ATV_TRUE}, EINVAL},
      {{SICM_ATK_SYNC_HINT, 99}, EINVAL},
      {{(sicm_alloctrait_key)42, 1}, EINVAL},
      {{SICM_ATK_PINNED, SICM_ATV_TRUE}, ENOTSUP},
      {{SICM_ATK_PARTITION, SICM_ATV_BLOCKED}, ENOTSUP},
  };
  for (auto &c : cases) {
    errno = 0;
    EXPECT_EQ(nullptr, sicm_allocator_create(SICM_MEMSPACE_DEFAULT, 1, &c.trait))
        << c.trait.key << "=" << c.trait.value;
    EXPECT_EQ(c.err, errno) << c.trait.key << "=" << c.trait.value;
  }
  errno = 0;
  EXPECT_EQ(nullptr, sicm_allocator_create((sicm_memspace)9, 0, nullptr));
  EXPECT_EQ(EINVAL, errno);
  errno = 0;
  EXPECT_EQ(nullptr, sicm_allocator_create(SICM_MEMSPACE_DEFAULT, 2, nullptr));
  EXPECT_EQ(EINVAL, errno);
  errno = 0;
  EXPECT_EQ(nullptr, sicm_allocator_alloc(nullptr, 8));
  EXPECT_EQ(EINVAL, errno);
  EXPECT_EQ(-1, sicm_allocator_destroy(nullptr));
}

TEST_F(Allocator, AcceptedTraitsAndAlignment) {
  sicm_alloctrait traits[] = {{SICM_ATK_SYNC_HINT, SICM_ATV_CONTENDED},
                              {SICM_ATK_ACCESS, SICM_ATV_THREAD},
                              {SICM_ATK_ALIGNMENT, 4096},
                              {SICM_ATK_PINNED, SICM_ATV_FALSE},
                              {SICM_ATK_PARTITION, SICM_ATV_ENVIRONMENT}};
  sicm_allocator *a = sicm_allocator_create(SICM_MEMSPACE_DEFAULT, 5, traits);
  ASSERT_NE(nullptr, a) << sicm_error_detail();
  void *p = sicm_allocator_alloc(a, 10);
  ASSERT_NE(nullptr, p);
  EXPECT_EQ(0u, (uintptr_t)p % 4096);
  EXPECT_EQ(OwnArena(a), sicm_arena_lookup(p)) << "from the allocator's own arena";
  int *z = (int *)sicm_allocator_calloc(a, 100, sizeof(int));
  for (int i = 0; i < 100; i++) ASSERT_EQ(0, z[i]);
  z[99] = 7;
  z = (int *)sicm_allocator_realloc(a, z, 1000 * sizeof(int));
  ASSERT_NE(nullptr, z);
  EXPECT_EQ(7, z[99]);
  sicm_allocator_free(a, p);
  sicm_allocator_free(nullptr, z);
  sicm_allocator_free(a, nullptr);
  EXPECT_EQ(0, sicm_allocator_destroy(a));
}

// pool_size: 1 MiB; the third 400 KiB block does not fit.
sicm_allocator *PoolOf1MiB(uintptr_t fallback, sicm_allocator *fb = nullptr) {
  sicm_alloctrait traits[] = {{SICM_ATK_POOL_SIZE, 1 << 20},
                              {SICM_ATK_FALLBACK, fallback},
                              {SICM_ATK_FB_DATA, (uintptr_t)fb}};
  return sicm_allocator_create(SICM_MEMSPACE_DEFAULT, 3, traits);
}

TEST_F(Allocator, NullFallbackReturnsNullWhenThePoolIsFull) {
  sicm_allocator *a = PoolOf1MiB(SICM_ATV_NULL_FB);
  ASSERT_NE(nullptr, a);
  void *x = sicm_allocator_alloc(a, 400 << 10), *y = sicm_allocator_alloc(a, 400 << 10);
  ASSERT_TRUE(x && y);
  errno = 0;
  EXPECT_EQ(nullptr, sicm_allocator_alloc(a, 400 << 10));
  EXPECT_EQ(ENOMEM, errno);
  sicm_allocator_free(a, x);  // room again
  void *z = sicm_allocator_alloc(a, 400 << 10);
  EXPECT_NE(nullptr, z);
  sicm_allocator_free(a, y);
  sicm_allocator_free(a, z);
  EXPECT_EQ(0, sicm_allocator_destroy(a));
}

// Whichever call frees or resizes a pool's block, the pool gets its bytes
// back: 16 rounds of (allocate 64 KiB, give it back) through each entry
// point leave the 1 MiB pool as it was, and it still holds 12 such blocks
// at once (not more: 15 x 64 KiB and their rounding would not fit).
TEST_F(Allocator, EveryFreeAndResizeGivesThePoolItsBytesBack) {
  sicm_allocator *a = PoolOf1MiB(SICM_ATV_NULL_FB);
  ASSERT_NE(nullptr, a);
  sicm_arena own;
  ASSERT_EQ(1, sicm_allocator_arenas(a, &own, 1));
  struct { const char *how; void (*give_back)(sicm_allocator *, sicm_arena, void *); } ways[] = {
      {"sicm_allocator_free", [](sicm_allocator *al, sicm_arena, void *p) { sicm_allocator_free(al, p); }},
      {"sicm_allocator_free(NULL)", [](sicm_allocator *, sicm_arena, void *p) { sicm_allocator_free(nullptr, p); }},
      {"sicm_free", [](sicm_allocator *, sicm_arena, void *p) { sicm_free(p); }},
      {"sicm_free, called", [](sicm_allocator *, sicm_arena, void *p) { (sicm_free)(p); }},
      {"sicm_realloc smaller, then sicm_free", [](sicm_allocator *, sicm_arena, void *p) {
         void *q = sicm_realloc(p, 100);
         ASSERT_NE(nullptr, q);
         sicm_free(q);
       }},
      {"sicm_arena_realloc larger, then sicm_free", [](sicm_allocator *, sicm_arena arena, void *p) {
         void *q = sicm_arena_realloc(arena, p, 128 << 10);
         ASSERT_NE(nullptr, q);
         sicm_free(q);
       }},
      {"sicm_allocator_realloc, then sicm_allocator_free", [](sicm_allocator *al, sicm_arena, void *p) {
         void *q = sicm_allocator_realloc(al, p, 32 << 10);
         ASSERT_NE(nullptr, q);
         sicm_allocator_free(al, q);
       }},
  };
  for (auto &way : ways) {
    for (int i = 0; i < 16; i++) {
      void *p = sicm_allocator_alloc(a, 64 << 10);
      ASSERT_NE(nullptr, p) << way.how << ", round " << i << ": " << sicm_error_detail();
      way.give_back(a, own, p);
    }
  }
  // Allocations made straight from the arena count too.
  void *direct = sicm_arena_alloc(own, 64 << 10);
  ASSERT_NE(nullptr, direct);
  sicm_free(direct);
  std::vector<void *> held;
  for (void *p; (p = sicm_allocator_alloc(a, 64 << 10)) != nullptr;) held.push_back(p);
  EXPECT_EQ(ENOMEM, errno);
  EXPECT_GE(held.size(), 12u);
  EXPECT_LE(held.size(), 16u);
  void *over = sicm_arena_alloc(own, 64 << 10);
  EXPECT_EQ(nullptr, over) << "the arena's own calls respect the pool";
  for (void *p : held) sicm_free(p);
  EXPECT_EQ(0, sicm_allocator_destroy(a));
}

TEST_F(Allocator, DefaultMemFallbackUsesDefaultMemory) {
  sicm_allocator *a = PoolOf1MiB(SICM_ATV_DEFAULT_MEM_FB);
  void *x = sicm_allocator_alloc(a, 900 << 10), *y = sicm_allocator_alloc(a, 900 << 10);
  ASSERT_TRUE(x && y);
  EXPECT_EQ(OwnArena(a), sicm_arena_lookup(x));
  EXPECT_EQ(sicm_arena_get_default(), sicm_arena_lookup(y)) << "the thread's default memory";
  sicm_allocator_free(a, x);
  sicm_allocator_free(a, y);
  EXPECT_EQ(0, sicm_allocator_destroy(a));
}

TEST_F(Allocator, AllocatorFallbackUsesFbData) {
  sicm_allocator *backup = sicm_allocator_create(SICM_MEMSPACE_DEFAULT, 0, nullptr);
  sicm_allocator *a = PoolOf1MiB(SICM_ATV_ALLOCATOR_FB, backup);
  ASSERT_TRUE(backup && a);
  void *x = sicm_allocator_alloc(a, 900 << 10), *y = sicm_allocator_alloc(a, 900 << 10);
  EXPECT_EQ(OwnArena(a), sicm_arena_lookup(x));
  EXPECT_EQ(OwnArena(backup), sicm_arena_lookup(y));
  sicm_allocator_free(nullptr, x);
  sicm_allocator_free(nullptr, y);
  EXPECT_EQ(0, sicm_allocator_destroy(a));
  EXPECT_EQ(0, sicm_allocator_destroy(backup));
}

TEST_F(Allocator, AbortFallbackAborts) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    sicm_allocator *a = PoolOf1MiB(SICM_ATV_ABORT_FB);
    sicm_allocator_alloc(a, 900 << 10);
    sicm_allocator_alloc(a, 900 << 10);  // aborts
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
}

TEST_F(Allocator, MemspaceDevicesOnOneNode) {
  sicm_device *devs[4];
  EXPECT_EQ(1, sicm_memspace_devices(SICM_MEMSPACE_DEFAULT, SICM_INITIATOR_SELF, devs, 4));
  EXPECT_EQ(sicm_node_self(), devs[0]->node);
  EXPECT_EQ(1, sicm_memspace_devices(SICM_MEMSPACE_LOW_LAT, SICM_INITIATOR_SELF, devs, 4));
  EXPECT_EQ(1, sicm_memspace_devices(SICM_MEMSPACE_LARGE_CAP, SICM_INITIATOR_SELF, devs, 4));
  errno = 0;
  EXPECT_EQ(-1, sicm_memspace_devices((sicm_memspace)9, SICM_INITIATOR_SELF, devs, 4));
  EXPECT_EQ(EINVAL, errno);
  errno = 0;
  EXPECT_EQ(-1, sicm_memspace_devices(SICM_MEMSPACE_DEFAULT, 4095, devs, 4));
  EXPECT_EQ(EINVAL, errno);
}

TEST_F(Allocator, StlContainersAllocateInsideTheirArena) {
  sicm::arena arena(sicm_device_of_node(sicm_node_self(), 0));
  sicm::arena_allocator<int> alloc(arena);
  std::vector<int, sicm::arena_allocator<int>> v(alloc);
  for (int i = 0; i < 10000; i++) v.push_back(i);
  EXPECT_EQ(arena.get(), sicm_arena_lookup(v.data()));
  using Pair = std::pair<const int, int>;
  std::map<int, int, std::less<int>, sicm::arena_allocator<Pair>> m{
      std::less<int>(), sicm::arena_allocator<Pair>(arena)};
  for (int i = 0; i < 100; i++) m[i] = i * i;
  EXPECT_EQ(arena.get(), sicm_arena_lookup(&*m.find(50)));
  using String = std::basic_string<char, std::char_traits<char>, sicm::arena_allocator<char>>;
  String s{sicm::arena_allocator<char>(arena)};
  s.assign(1000, 'x');
  EXPECT_EQ(arena.get(), sicm_arena_lookup(s.data()));
  // Copies stay in the destination's arena; moves carry the arena along.
  sicm::arena other(sicm_device_of_node(sicm_node_self(), 0));
  std::vector<int, sicm::arena_allocator<int>> w{sicm::arena_allocator<int>(other)};
  w = v;
  EXPECT_EQ(other.get(), sicm_arena_lookup(w.data()));
  EXPECT_EQ(9999, w.back());
  w = std::move(v);
  EXPECT_EQ(arena.get(), sicm_arena_lookup(w.data()));
  EXPECT_TRUE(sicm::arena_allocator<int>(arena) == sicm::arena_allocator<long>(arena));
  EXPECT_TRUE(sicm::arena_allocator<int>(arena) != sicm::arena_allocator<int>(other));
}

TEST_F(Allocator, SpaceAllocatorAndWrappersThrowOnErrors) {
  sicm::allocator pool(SICM_MEMSPACE_DEFAULT,
                       {{SICM_ATK_POOL_SIZE, 1 << 20}, {SICM_ATK_FALLBACK, SICM_ATV_NULL_FB}});
  std::vector<double, sicm::space_allocator<double>> v{sicm::space_allocator<double>(pool)};
  v.resize(1000);
  sicm_arena own;
  ASSERT_EQ(1, sicm_allocator_arenas(pool.get(), &own, 1));
  EXPECT_EQ(own, sicm_arena_lookup(v.data()));
  EXPECT_THROW(v.resize(1 << 20), std::bad_alloc) << "8 MiB does not fit a 1 MiB pool";
  EXPECT_THROW(sicm::arena(nullptr), std::system_error);
  EXPECT_THROW(sicm::allocator(SICM_MEMSPACE_DEFAULT, {{SICM_ATK_PINNED, SICM_ATV_TRUE}}),
               std::system_error);
}

}  // namespace
