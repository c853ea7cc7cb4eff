/* SPDX-License-Identifier: BSD-3-Clause */
// numa_arena_placement.cc (runs in the multi-NUMA guest): every page an
// arena uses for data is on the arena's device, checked page by page with
// move_pages.
#include <string.h>

#include <vector>

#include "numa_test.h"

namespace {

using sicm_test::NodesOfPages;

const size_t kPage = sicm_test::PageSize();

class Placement : public ::testing::TestWithParam<int> {
 protected:
  sicm_test::Initialized init_;
};

TEST_P(Placement, EveryPageOfEveryAllocationAndOfTheArenaIsOnItsDevice) {
  ASSERT_TRUE(init_.ok());
  const int node = GetParam();
  sicm_arena a = sicm_arena_create(0, sicm_device_of_node(node, 0));
  ASSERT_NE(nullptr, a) << sicm_error_detail();
  std::vector<std::pair<char *, size_t>> blocks;
  size_t total = 0;
  for (size_t size : {64ul, 64ul << 10, 4ul << 20, 256ul << 20}) {
    char *p = (char *)sicm_arena_alloc(a, size);
    ASSERT_NE(nullptr, p) << size;
    memset(p, 0xab, size);
    blocks.push_back({p, size});
    total += size;
  }
  for (auto &b : blocks) {
    std::vector<int> nodes = NodesOfPages(b.first, b.second);
    size_t wrong = 0;
    for (int n : nodes) wrong += n != node;
    EXPECT_EQ(0u, wrong) << wrong << " of " << nodes.size() << " pages of a " << b.second
                         << "-byte allocation are not on node " << node;
    EXPECT_EQ(node, sicm_node_of_ptr(b.first));
  }
  // The whole arena: its windows hold data and jemalloc's metadata for it.
  size_t bytes[8] = {0};
  ASSERT_EQ(0, sicm_arena_residency(a, bytes, 8));
  for (int n = 0; n < 8; n++) {
    if (n != node) {
      EXPECT_EQ(0u, bytes[n]) << "arena bytes on node " << n;
    }
  }
  EXPECT_GE(bytes[node], total);
  sicm_arena_stats st;
  ASSERT_EQ(0, sicm_arena_get_stats(a, &st));
  // jemalloc's resident figure includes its metadata for the arena, which
  // it estimates by whole pages it considers touched (a few pages high).
  EXPECT_GE(bytes[node] + (64u << 10), st.resident) << "jemalloc's resident bytes";
  // Every resident page is committed by the hooks (under the system's THP
  // "always", a huge page at the end of what jemalloc committed may be
  // resident whole).
  EXPECT_GE(st.held + (2u << 20), bytes[node]) << "resident pages the hooks never committed";
  for (auto &b : blocks) sicm_free(b.first);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

INSTANTIATE_TEST_SUITE_P(HbmAndCapacity, Placement, ::testing::Values(2, 3));

// jemalloc's metadata for an arena (84 KiB touched, a 2 MiB block) stays off
// the arena's device, with or without huge pages: a new arena on node 2
// puts nothing there, and one 64-byte block puts its page (or, with huge
// pages, its huge page) and nothing more.
TEST(PlacementMetadata, ArenaMetadataTakesNoRoomOnTheDevice) {
  sicm_test::Initialized init;
  ASSERT_TRUE(init.ok());
  sicm_device *dev = sicm_device_of_node(2, 0);
  for (unsigned flags : {(unsigned)SICM_ARENA_NOHUGEPAGES, (unsigned)SICM_ARENA_HUGEPAGES}) {
    long long before = sicm_test::ProcessBytesOn(2);
    ASSERT_GE(before, 0);
    sicm_arena a = sicm_arena_create_devices(0, &dev, 1, flags);
    ASSERT_NE(nullptr, a) << sicm_error_detail();
    EXPECT_EQ(before, sicm_test::ProcessBytesOn(2)) << "flags " << flags;
    char *p = (char *)sicm_arena_alloc(a, 64);
    ASSERT_NE(nullptr, p);
    p[0] = 1;
    size_t data = flags == SICM_ARENA_HUGEPAGES ? 2u << 20 : kPage;
    EXPECT_GE(before + (long long)data, sicm_test::ProcessBytesOn(2)) << "flags " << flags;
    size_t bytes[8] = {0};
    ASSERT_EQ(0, sicm_arena_residency(a, bytes, 8));
    EXPECT_EQ((long long)bytes[2], sicm_test::ProcessBytesOn(2) - before) << "flags " << flags;
    sicm_free(p);
    EXPECT_EQ(0, sicm_arena_destroy(a));
  }
}

TEST(PlacementFlags, InterleaveSpreadsPagesOverItsDevices) {
  sicm_test::Initialized init;
  ASSERT_TRUE(init.ok());
  sicm_device *devs[] = {sicm_device_of_node(2, 0), sicm_device_of_node(3, 0)};
  sicm_arena a = sicm_arena_create_devices(0, devs, 2, SICM_ARENA_INTERLEAVE);
  ASSERT_NE(nullptr, a) << sicm_error_detail();
  const size_t len = 64u << 20;
  char *p = (char *)sicm_arena_alloc(a, len);
  ASSERT_NE(nullptr, p);
  memset(p, 1, len);
  size_t on[4] = {0};
  for (int n : NodesOfPages(p, len)) {
    ASSERT_TRUE(n == 2 || n == 3) << "page on node " << n;
    on[n]++;
  }
  EXPECT_GT(on[2], len / kPage * 4 / 10);
  EXPECT_GT(on[3], len / kPage * 4 / 10);
  sicm_free(p);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

TEST(PlacementFlags, PreferredFallsBackWhenItsDeviceIsFull) {
  sicm_test::Initialized init;
  ASSERT_TRUE(init.ok());
  sicm_device *dev = sicm_device_of_node(3, 0);
  sicm_arena a = sicm_arena_create_devices(0, &dev, 1, SICM_ARENA_PREFERRED);
  ASSERT_NE(nullptr, a) << sicm_error_detail();
  size_t free_bytes = 0;
  ASSERT_EQ(0, sicm_device_get_free_bytes(dev, &free_bytes));
  const size_t len = free_bytes + (256u << 20);  // more than node 3 has free
  char *p = (char *)sicm_arena_alloc(a, len);
  ASSERT_NE(nullptr, p);
  memset(p, 1, len);
  size_t bytes[8] = {0};
  ASSERT_EQ(0, sicm_arena_residency(a, bytes, 8));
  EXPECT_GT(bytes[3], free_bytes * 8 / 10) << "most pages on the preferred node";
  EXPECT_GT(bytes[0] + bytes[1] + bytes[2], 128u << 20) << "the rest elsewhere, no OOM";
  sicm_free(p);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

TEST(PlacementFlags, HugePagesFlagGivesTransparentHugePages) {
  sicm_test::Initialized init;
  ASSERT_TRUE(init.ok());
  sicm_device *dev = sicm_device_of_node(2, 0);
  sicm_arena a = sicm_arena_create_devices(0, &dev, 1, SICM_ARENA_HUGEPAGES);
  ASSERT_NE(nullptr, a);
  const size_t len = 64u << 20;
  char *p = (char *)sicm_arena_alloc(a, len);
  ASSERT_NE(nullptr, p);
  memset(p, 1, len);
  // AnonHugePages of this process grows by most of the allocation.
  FILE *f = fopen("/proc/self/smaps_rollup", "r");
  ASSERT_NE(nullptr, f);
  char line[256];
  size_t huge_kb = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "AnonHugePages: %zu kB", &huge_kb) == 1) break;
  fclose(f);
  EXPECT_GE(huge_kb << 10, len / 2);
  for (int n : NodesOfPages(p, len)) ASSERT_EQ(2, n);
  sicm_free(p);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

}  // namespace
