/* SPDX-License-Identifier: BSD-3-Clause */
// numa_allocator.cc (runs in the 4-node guest): memory spaces land on the
// right devices, partitions spread as they say, fallbacks behave as OpenMP
// specifies when a space is exhausted, and STL containers survive a
// migration of their arena.  Residency checked with move_pages.
#include <errno.h>
#include <sched.h>
#include <string.h>

#include <map>
#include <thread>
#include <vector>

#include "../sicm_test.h"
#include "sicm.hpp"

namespace {

void PinToCpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  ASSERT_EQ(0, sched_setaffinity(0, sizeof set, &set));
}

// Allocates and touches len bytes; returns the node of every page, or -1
// if they differ.
int NodeOfFreshBlock(sicm_allocator *a, size_t len, void **out = nullptr) {
  char *p = (char *)sicm_allocator_alloc(a, len);
  if (!p) return -2;
  memset(p, 1, len);
  int node = sicm_node_of_ptr(p);
  for (size_t off = 0; off < len; off += 4096)
    if (sicm_node_of_ptr(p + off) != node) node = -1;
  if (out) *out = p; else sicm_allocator_free(nullptr, p);
  return node;
}

class SpaceAllocator : public ::testing::Test {
 protected:
  void SetUp() override {
    PinToCpu(0);  // node 0's CPU: "local" is node 0
    ASSERT_TRUE(init_.ok());
  }
  sicm_test::Initialized init_;
};

TEST_F(SpaceAllocator, EachSpaceLandsOnItsDevice) {
  struct { sicm_memspace space; int node; } cases[] = {
      {SICM_MEMSPACE_HIGH_BW, 2}, {SICM_MEMSPACE_LARGE_CAP, 3},
      {SICM_MEMSPACE_LOW_LAT, 0}, {SICM_MEMSPACE_DEFAULT, 0}, {SICM_MEMSPACE_CONST, 0}};
  for (auto &c : cases) {
    sicm_allocator *a = sicm_allocator_create(c.space, 0, nullptr);
    ASSERT_NE(nullptr, a) << sicm_error_detail();
    EXPECT_EQ(c.node, NodeOfFreshBlock(a, 8 << 20)) << "space " << c.space;
    EXPECT_EQ(c.node, NodeOfFreshBlock(a, 64)) << "space " << c.space;
    EXPECT_EQ(0, sicm_allocator_destroy(a));
  }
}

TEST_F(SpaceAllocator, ExhaustedHighBandwidthSpaceFollowsEachFallback) {
  // 16 MiB pool on HBM: the second 12 MiB block does not fit.
  sicm_allocator *cap = sicm_allocator_create(SICM_MEMSPACE_LARGE_CAP, 0, nullptr);
  struct { uintptr_t fallback; int second_node; } cases[] = {
      {SICM_ATV_DEFAULT_MEM_FB, 0}, {SICM_ATV_ALLOCATOR_FB, 3}, {SICM_ATV_NULL_FB, -2}};
  for (auto &c : cases) {
    sicm_alloctrait traits[] = {{SICM_ATK_POOL_SIZE, 16 << 20},
                                {SICM_ATK_FALLBACK, c.fallback},
                                {SICM_ATK_FB_DATA, (uintptr_t)cap}};
    sicm_allocator *a = sicm_allocator_create(SICM_MEMSPACE_HIGH_BW, 3, traits);
    ASSERT_NE(nullptr, a);
    void *first = nullptr;
    EXPECT_EQ(2, NodeOfFreshBlock(a, 12 << 20, &first));
    EXPECT_EQ(c.second_node, NodeOfFreshBlock(a, 12 << 20)) << "fallback " << c.fallback;
    sicm_allocator_free(a, first);
    EXPECT_EQ(0, sicm_allocator_destroy(a));
  }
  EXPECT_EQ(0, sicm_allocator_destroy(cap));
}

TEST_F(SpaceAllocator, FullDeviceFollowsTheFallbackInsteadOfTheOomKiller) {
  // A request larger than node 2's free memory never reaches the kernel.
  size_t free2 = 0;
  ASSERT_EQ(0, sicm_device_get_free_bytes(sicm_device_of_node(2, 0), &free2));
  sicm_alloctrait null_fb = {SICM_ATK_FALLBACK, SICM_ATV_NULL_FB};
  sicm_allocator *a = sicm_allocator_create(SICM_MEMSPACE_HIGH_BW, 1, &null_fb);
  errno = 0;
  EXPECT_EQ(nullptr, sicm_allocator_alloc(a, free2 + (64u << 20)));
  EXPECT_EQ(ENOMEM, errno);
  EXPECT_EQ(0, sicm_allocator_destroy(a));
}

TEST_F(SpaceAllocator, NearestPartitionFollowsTheThread) {
  sicm_alloctrait nearest = {SICM_ATK_PARTITION, SICM_ATV_NEAREST};
  sicm_allocator *a = sicm_allocator_create(SICM_MEMSPACE_DEFAULT, 1, &nearest);
  ASSERT_NE(nullptr, a) << sicm_error_detail();
  EXPECT_EQ(2, sicm_allocator_arenas(a, nullptr, 0)) << "one arena per DRAM node";
  EXPECT_EQ(0, NodeOfFreshBlock(a, 4 << 20));
  int other = -3;
  std::thread([&] {
    PinToCpu(1);
    other = NodeOfFreshBlock(a, 4 << 20);
  }).join();
  EXPECT_EQ(1, other);
  EXPECT_EQ(0, sicm_allocator_destroy(a));
}

TEST_F(SpaceAllocator, InterleavedPartitionSpreadsPages) {
  sicm_alloctrait inter = {SICM_ATK_PARTITION, SICM_ATV_INTERLEAVED};
  sicm_allocator *a = sicm_allocator_create(SICM_MEMSPACE_DEFAULT, 1, &inter);
  ASSERT_NE(nullptr, a);
  char *p = (char *)sicm_allocator_alloc(a, 32 << 20);
  memset(p, 1, 32 << 20);
  size_t on[2] = {0, 0};
  for (size_t off = 0; off < (32u << 20); off += 4096) {
    int n = sicm_node_of_ptr(p + off);
    ASSERT_TRUE(n == 0 || n == 1) << n;
    on[n]++;
  }
  EXPECT_GT(on[0], 2000u);
  EXPECT_GT(on[1], 2000u);
  sicm_allocator_free(a, p);
  EXPECT_EQ(0, sicm_allocator_destroy(a));
}

TEST_F(SpaceAllocator, StlContainersSurviveAMigrationOfTheirArena) {
  sicm::arena arena(sicm_device_of_node(2, 0));
  std::vector<long, sicm::arena_allocator<long>> v{sicm::arena_allocator<long>(arena)};
  for (long i = 0; i < (1 << 20); i++) v.push_back(i * 3);
  using Pair = std::pair<const int, std::vector<long, sicm::arena_allocator<long>>>;
  std::map<int, std::vector<long, sicm::arena_allocator<long>>, std::less<int>,
           sicm::arena_allocator<Pair>>
      m{std::less<int>(), sicm::arena_allocator<Pair>(arena)};
  for (int k = 0; k < 100; k++)
    m.emplace(k, std::vector<long, sicm::arena_allocator<long>>(
                     1000, (long)k, sicm::arena_allocator<long>(arena)));
  EXPECT_EQ(2, sicm_node_of_ptr(v.data()));
  arena.set_device(sicm_device_of_node(3, 0));
  EXPECT_EQ(3, sicm_node_of_ptr(v.data()));
  EXPECT_EQ(3, sicm_node_of_ptr(m.at(57).data()));
  for (long i = 0; i < (1 << 20); i += 4097) ASSERT_EQ(i * 3, v[i]);
  EXPECT_EQ(57, m.at(57)[999]);
  size_t bytes[8] = {0};
  ASSERT_EQ(0, sicm_arena_residency(arena.get(), bytes, 8));
  EXPECT_EQ(0u, bytes[0] + bytes[1] + bytes[2]);
}

TEST_F(SpaceAllocator, AllocatorArenasCanBeMigrated) {
  sicm_allocator *a = sicm_allocator_create(SICM_MEMSPACE_HIGH_BW, 0, nullptr);
  void *p = nullptr;
  ASSERT_EQ(2, NodeOfFreshBlock(a, 16 << 20, &p));
  sicm_arena arena;
  ASSERT_EQ(1, sicm_allocator_arenas(a, &arena, 1));
  ASSERT_EQ(0, sicm_arena_set_device(arena, sicm_device_of_node(0, 0)));
  EXPECT_EQ(0, sicm_node_of_ptr(p));
  sicm_allocator_free(a, p);
  EXPECT_EQ(0, sicm_allocator_destroy(a));
}

}  // namespace
