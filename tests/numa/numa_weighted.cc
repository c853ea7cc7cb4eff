/* SPDX-License-Identifier: BSD-3-Clause */
// numa_weighted.cc (runs in the multi-NUMA guest, on Linux 6.1 and 6.12):
// a WEIGHTED arena spreads its pages over its devices in proportion to the
// system's weights where the kernel has weighted interleave (6.9 and
// later), evenly where it does not, and a move keeps the proportions;
// every share is counted page by page with move_pages.
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "numa_test.h"

namespace {

using sicm_test::NodesOfPages;

#ifndef MPOL_WEIGHTED_INTERLEAVE
#define MPOL_WEIGHTED_INTERLEAVE 6
#endif

const size_t kBytes = 64u << 20;

std::string WeightPath(int node) {
  return "/sys/kernel/mm/mempolicy/weighted_interleave/node" + std::to_string(node);
}

// Whether this kernel takes the policy, asked without libsicm.
bool KernelHasWeightedInterleave() {
  size_t page = sicm_test::PageSize();
  void *p = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  unsigned long node0 = 1;
  bool has = mbind(p, page, MPOL_WEIGHTED_INTERLEAVE, &node0, 64, 0) == 0;
  munmap(p, page);
  return has;
}

// The system's weight of a node, and setting it (root, as in the guest).
unsigned ReadWeight(int node) {
  return (unsigned)atoi(sicm_test::ReadSetting(WeightPath(node)).c_str());
}

bool WriteWeight(int node, unsigned weight) {
  return sicm_test::WriteSetting(WeightPath(node), std::to_string(weight));
}

class Weighted : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(init_.ok());
    has_ = KernelHasWeightedInterleave();
    for (int node = 0; node < 4 && has_; node++) saved_[node] = ReadWeight(node);
  }
  void TearDown() override {
    for (auto &w : saved_) WriteWeight(w.first, w.second);
  }
  // Sets the system's weights, 4 to 1: the DRAM nodes 4, the others 1.
  void SetFourToOne() {
    for (int node = 0; node < 4; node++)
      ASSERT_TRUE(WriteWeight(node, node < 2 ? 4 : 1)) << WeightPath(node);
  }
  sicm_device *Dev(int node) { return sicm_device_of_node(node, 0); }
  // A WEIGHTED arena of base pages over nodes 0 and 2, and a block of
  // kBytes of it (NULL both on failure, a test failure).
  sicm_arena WeightedArena(char **block) {
    sicm_device *devs[] = {Dev(0), Dev(2)};
    sicm_arena a = sicm_arena_create_devices(0, devs, 2, SICM_ARENA_WEIGHTED | SICM_ARENA_NOHUGEPAGES);
    EXPECT_NE(nullptr, a) << sicm_error_detail();
    *block = a ? (char *)sicm_arena_alloc(a, kBytes) : nullptr;
    EXPECT_NE(nullptr, *block);
    return *block ? a : nullptr;
  }
  // Share of the pages of [p, p + kBytes) on each node, every page present.
  std::map<int, double> Shares(const char *p) {
    std::vector<int> nodes = NodesOfPages(p, kBytes);
    std::map<int, double> share;
    for (int n : nodes) share[n] += 1.0 / (double)nodes.size();
    return share;
  }
  sicm_test::Initialized init_;
  bool has_ = false;
  std::map<int, unsigned> saved_;
};

TEST_F(Weighted, WeightsAreTheSystemsOrEvenWithoutTheKernelsPolicy) {
  sicm_device *devs[] = {Dev(0), Dev(2)};
  unsigned w[2] = {0, 0};
  if (has_) SetFourToOne();
  int rc = sicm_interleave_weights(devs, 2, w);
  EXPECT_EQ(has_ ? 0 : 1, rc) << sicm_error_detail();
  EXPECT_EQ(has_ ? 4u : 1u, w[0]);
  EXPECT_EQ(1u, w[1]);
}

// 4:1 over nodes 0 and 2 gives 80% and 20% (even: 50% each, on a kernel
// without the policy); a move to nodes 1 and 3 keeps the proportions and
// the data.
TEST_F(Weighted, PagesFollowTheWeightsAndMovesKeepThem) {
  if (has_) SetFourToOne();
  const double fast = has_ ? 0.8 : 0.5, slow = has_ ? 0.2 : 0.5;
  sicm_device *to[] = {Dev(1), Dev(3)};
  char *p;
  sicm_arena a = WeightedArena(&p);
  ASSERT_NE(nullptr, a);
  for (size_t i = 0; i < kBytes; i++) p[i] = (char)(i * 7);
  std::map<int, double> before = Shares(p);
  EXPECT_NEAR(fast, before[0], 0.02);
  EXPECT_NEAR(slow, before[2], 0.02);
  ASSERT_EQ(0, sicm_arena_set_devices(a, to, 2, SICM_ARENA_WEIGHTED)) << sicm_error_detail();
  std::map<int, double> after = Shares(p);
  EXPECT_NEAR(fast, after[1], 0.02);
  EXPECT_NEAR(slow, after[3], 0.02);
  EXPECT_NEAR(1.0, after[1] + after[3], 1e-9) << "no page left behind";
  printf("    shares: nodes 0/2 %.4f/%.4f, after the move nodes 1/3 %.4f/%.4f\n", before[0],
         before[2], after[1], after[3]);
  size_t wrong = 0;
  for (size_t i = 0; i < kBytes; i++) wrong += p[i] != (char)(i * 7);
  EXPECT_EQ(0u, wrong);
  sicm_free(p);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

// A refused WEIGHTED move (a device twice) changes nothing: the pages stay
// where the weights put them.
TEST_F(Weighted, ARefusedMoveLeavesThePagesAlone) {
  if (has_) SetFourToOne();
  sicm_device *twice[] = {Dev(1), Dev(1)};
  char *p;
  sicm_arena a = WeightedArena(&p);
  ASSERT_NE(nullptr, a);
  memset(p, 3, kBytes);
  std::vector<int> before = NodesOfPages(p, kBytes);
  errno = 0;
  EXPECT_EQ(-1, sicm_arena_set_devices(a, twice, 2, SICM_ARENA_WEIGHTED));
  EXPECT_EQ(EINVAL, errno);
  EXPECT_EQ(before, NodesOfPages(p, kBytes));
  sicm_free(p);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

}  // namespace
