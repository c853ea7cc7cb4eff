/* SPDX-License-Identifier: BSD-3-Clause */
// numa_hugetlb.cc (runs in the multi-NUMA guest, from hugetlb.sh, with
// 2 MiB pages reserved on every node): arenas on hugetlb devices take their
// pages from the node's pool, count them whole, fail with ENOMEM when the
// pool runs dry (never SIGBUS, nor across fork()), move between nodes with
// them (only where the pool has room), serve any block again once emptied,
// and give them back when destroyed — each checked with move_pages and the
// pool counts.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include "numa_test.h"
#include "sicm_shared.h"

namespace {

using sicm_test::PagesNotOn;

constexpr size_t kHuge = 2u << 20;

// The kernel page size of the mapping holding p, from /proc/self/smaps; 0
// if not found.
size_t KernelPageSize(const void *p) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (f == nullptr) return 0;
  char line[512];
  bool inside = false;
  size_t kb = 0;
  while (fgets(line, sizeof line, f) != nullptr) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
      inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
    else if (inside && sscanf(line, "KernelPageSize: %zu kB", &kb) == 1)
      break;
  }
  fclose(f);
  return kb << 10;
}

// Whether p lies in a mapping no access is allowed to (held, unused); its
// bounds in *lo and *hi.
bool HeldAddresses(const void *p, uintptr_t *lo, uintptr_t *hi) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (f == nullptr) return false;
  char line[512], perms[8];
  bool found = false;
  while (!found && fgets(line, sizeof line, f) != nullptr) {
    unsigned long b, e;
    found = sscanf(line, "%lx-%lx %7s", &b, &e, perms) == 3 && (uintptr_t)p >= b && (uintptr_t)p < e;
    if (found) *lo = b, *hi = e;
  }
  fclose(f);
  return found && strncmp(perms, "---", 3) == 0;
}

class Hugetlb : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(init_.ok());
    const char *pages = getenv("SICM_TEST_HUGE_PAGES");
    ASSERT_NE(nullptr, pages) << "run from hugetlb.sh, which reserves the pages";
    for (int node = 0; node < 4; node++) {
      huge_[node] = sicm_device_of_node(node, kHuge);
      ASSERT_NE(nullptr, huge_[node]) << "no 2 MiB device on node " << node;
      EXPECT_EQ(1, huge_[node]->huge);
    }
  }
  size_t FreeBytes(int node) {
    size_t bytes = 0;
    EXPECT_EQ(0, sicm_device_get_free_bytes(huge_[node], &bytes)) << sicm_error_detail();
    return bytes;
  }
  static void Fill(unsigned char *p, size_t len, unsigned seed) {
    for (size_t i = 0; i < len; i += 512) p[i] = (unsigned char)(seed + i / 512);
  }
  static bool Verify(const unsigned char *p, size_t len, unsigned seed) {
    for (size_t i = 0; i < len; i += 512)
      if (p[i] != (unsigned char)(seed + i / 512)) return false;
    return true;
  }
  // A new arena on `node`'s huge pages (*a) and a block of len bytes in it,
  // filled with `seed`; NULL (a test failure) if either cannot be made.
  unsigned char *ArenaWithBlock(int node, size_t len, unsigned seed, sicm_arena *a) {
    *a = sicm_arena_create(0, huge_[node]);
    EXPECT_NE(nullptr, *a) << sicm_error_detail();
    auto *p = *a ? (unsigned char *)sicm_arena_alloc(*a, len) : nullptr;
    EXPECT_NE(nullptr, p) << sicm_error_detail();
    if (p != nullptr) Fill(p, len, seed);
    return p;
  }
  // Moves a to `node`'s huge pages; p's len bytes, filled with `seed`, must
  // be there whole, in huge pages, intact.
  void MoveAndCheck(sicm_arena a, const unsigned char *p, size_t len, unsigned seed, int node) {
    ASSERT_EQ(0, sicm_arena_set_device(a, huge_[node])) << sicm_error_detail();
    EXPECT_EQ(0u, PagesNotOn(p, len, node));
    EXPECT_EQ(kHuge, KernelPageSize(p));
    EXPECT_TRUE(Verify(p, len, seed));
  }
  sicm_test::Initialized init_;
  sicm_device *huge_[4] = {};
};

TEST_F(Hugetlb, PagesComeFromTheNodesPoolAndGoBackAtDestroy) {
  for (int node : {2, 3}) {
    size_t before = FreeBytes(node);
    sicm_arena a = sicm_arena_create(0, huge_[node]);
    ASSERT_NE(nullptr, a) << sicm_error_detail();
    auto *small = (unsigned char *)sicm_arena_alloc(a, 64);
    auto *big = (unsigned char *)sicm_arena_alloc(a, 3 * kHuge + 100);
    ASSERT_NE(nullptr, small);
    ASSERT_NE(nullptr, big) << sicm_error_detail();
    Fill(big, 3 * kHuge + 100, 5);
    small[0] = 1;
    EXPECT_EQ(kHuge, KernelPageSize(big));
    EXPECT_EQ(kHuge, KernelPageSize(small));
    EXPECT_EQ(0u, PagesNotOn(big, 3 * kHuge + 100, node));
    EXPECT_EQ(0u, PagesNotOn(small, 64, node));
    // Held is whole huge pages, and the pool lost exactly those.
    size_t held = sicm_arena_size(a);
    EXPECT_EQ(0u, held % kHuge);
    EXPECT_GE(held, 4 * kHuge);
    EXPECT_EQ(before - held, FreeBytes(node));
    EXPECT_TRUE(Verify(big, 3 * kHuge + 100, 5));
    sicm_free(big);
    sicm_free(small);
    EXPECT_EQ(0, sicm_arena_destroy(a));
    EXPECT_EQ(before, FreeBytes(node));
  }
}

TEST_F(Hugetlb, ADryPoolIsEnomemAndTheArenaGoesOn) {
  size_t pool = FreeBytes(3);
  ASSERT_GE(pool, 8 * kHuge);
  sicm_arena a = sicm_arena_create(0, huge_[3]);
  ASSERT_NE(nullptr, a) << sicm_error_detail();
  std::vector<unsigned char *> blocks;
  const size_t block = kHuge / 2;
  for (size_t i = 0; i < 4 * pool / block; i++) {  // far more than the pool
    auto *p = (unsigned char *)sicm_arena_alloc(a, block);
    if (p == nullptr) {
      EXPECT_EQ(ENOMEM, errno) << sicm_error_detail();
      break;
    }
    memset(p, 0x5a, block);  // every byte handed out can be touched
    blocks.push_back(p);
  }
  ASSERT_LT(blocks.size(), 4 * pool / block) << "the pool never ran dry";
  EXPECT_GE(blocks.size() * block, pool / 2);
  EXPECT_LE(sicm_arena_size(a), pool);
  EXPECT_EQ(0u, FreeBytes(3) % kHuge);
  for (auto *p : blocks) {
    EXPECT_EQ(0x5a, p[block - 1]);
    sicm_free(p);
  }
  // What was freed serves again.
  auto *again = (unsigned char *)sicm_arena_alloc(a, block);
  ASSERT_NE(nullptr, again) << sicm_error_detail();
  memset(again, 1, block);
  sicm_free(again);
  EXPECT_EQ(0, sicm_arena_destroy(a));
  EXPECT_EQ(pool, FreeBytes(3));
}

TEST_F(Hugetlb, MaxsizeCountsWholeHugePages) {
  sicm_arena a = sicm_arena_create(4 * kHuge, huge_[2]);
  ASSERT_NE(nullptr, a) << sicm_error_detail();
  auto *p = (unsigned char *)sicm_arena_alloc(a, 64);
  ASSERT_NE(nullptr, p);
  EXPECT_EQ(kHuge, sicm_arena_size(a));
  size_t total = 64;
  std::vector<void *> blocks{p};
  for (;;) {
    void *q = sicm_arena_alloc(a, 256 << 10);
    if (q == nullptr) {
      EXPECT_EQ(ENOMEM, errno);
      break;
    }
    memset(q, 2, 256 << 10);
    blocks.push_back(q);
    total += 256 << 10;
  }
  EXPECT_LE(sicm_arena_size(a), 4 * kHuge);
  EXPECT_LE(total, 4 * kHuge);
  EXPECT_GE(total, 2 * kHuge);
  for (void *q : blocks) sicm_free(q);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

TEST_F(Hugetlb, CallocZeroesReusedHugePages) {
  sicm_arena a = sicm_arena_create(0, huge_[2]);
  ASSERT_NE(nullptr, a);
  for (size_t size : {(size_t)4096, (size_t)3 << 20, (size_t)5 << 20}) {
    auto *dirty = (unsigned char *)sicm_arena_alloc(a, size);
    ASSERT_NE(nullptr, dirty);
    memset(dirty, 0xff, size);
    sicm_free(dirty);
    auto *zero = (unsigned char *)sicm_arena_calloc(a, 1, size);
    ASSERT_NE(nullptr, zero);
    size_t nonzero = 0;
    for (size_t i = 0; i < size; i++) nonzero += zero[i] != 0;
    EXPECT_EQ(0u, nonzero) << size;
    sicm_free(zero);
  }
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

TEST_F(Hugetlb, MovesToAnotherNodesPoolWithItsData) {
  sicm_arena a;
  const size_t len = 6 * kHuge;
  unsigned char *p = ArenaWithBlock(2, len, 9, &a);
  ASSERT_NE(nullptr, p);
  size_t free2 = FreeBytes(2), free3 = FreeBytes(3);
  MoveAndCheck(a, p, len, 9, 3);
  EXPECT_EQ(free2 + sicm_arena_size(a), FreeBytes(2));
  EXPECT_EQ(free3 - sicm_arena_size(a), FreeBytes(3));
  // Pages keep their size: a device of base pages is refused.
  EXPECT_EQ(-1, sicm_arena_set_device(a, sicm_device_of_node(1, 0)));
  EXPECT_EQ(EINVAL, errno);
  EXPECT_EQ(0u, PagesNotOn(p, len, 3));
  // New blocks come from the new node's pool.
  auto *q = (unsigned char *)sicm_arena_alloc(a, 3 * kHuge);
  ASSERT_NE(nullptr, q);
  Fill(q, 3 * kHuge, 3);
  EXPECT_EQ(0u, PagesNotOn(q, 3 * kHuge, 3));
  sicm_free(q);
  sicm_free(p);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

// A node's pool size (nr_hugepages), which no move may change.
long PoolPages(int node) {
  char path[128];
  snprintf(path, sizeof path,
           "/sys/devices/system/node/node%d/hugepages/hugepages-2048kB/nr_hugepages", node);
  FILE *f = fopen(path, "r");
  long pages = -1;
  if (f != nullptr && fscanf(f, "%ld", &pages) != 1) pages = -1;
  if (f != nullptr) fclose(f);
  return pages;
}

// A target pool without a free page for each page to move: refused before
// anything moves (the kernel would take pages outside the pool and resize
// both pools), the data where it was, both pools as they were.
TEST_F(Hugetlb, AMoveBeyondTheTargetsPoolIsRefusedAndChangesNothing) {
  sicm_arena hog = sicm_arena_create(0, huge_[1]);
  ASSERT_NE(nullptr, hog);
  std::vector<void *> taken;
  while (void *h = sicm_arena_alloc(hog, kHuge / 2)) {
    memset(h, 1, kHuge / 2);
    taken.push_back(h);
  }
  ASSERT_LT(FreeBytes(1), kHuge * 2);
  sicm_arena a;
  const size_t len = 4 * kHuge;
  unsigned char *p = ArenaWithBlock(2, len, 4, &a);
  ASSERT_NE(nullptr, p);
  long pool1 = PoolPages(1), pool2 = PoolPages(2);
  size_t free1 = FreeBytes(1), free2 = FreeBytes(2);
  EXPECT_EQ(-1, sicm_arena_set_device(a, huge_[1]));
  EXPECT_EQ(ENOMEM, errno) << sicm_error_detail();
  EXPECT_EQ(0u, PagesNotOn(p, len, 2));
  EXPECT_TRUE(Verify(p, len, 4));
  EXPECT_EQ(pool1, PoolPages(1));
  EXPECT_EQ(pool2, PoolPages(2));
  EXPECT_EQ(free1, FreeBytes(1));
  EXPECT_EQ(free2, FreeBytes(2));
  for (void *h : taken) sicm_free(h);
  EXPECT_EQ(0, sicm_arena_destroy(hog));
  MoveAndCheck(a, p, len, 4, 1);  // with room, it moves
  sicm_free(p);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

// Every block freed, the arena's pages serve any block again: one of 80%
// of maxsize fits, and the pages the arena holds stay within maxsize.
TEST_F(Hugetlb, AnEmptiedArenaServesABlockOfMostOfItsMaxsize) {
  const size_t maxsize = 16 * kHuge;
  ASSERT_GE(FreeBytes(2), maxsize);
  for (unsigned round = 0; round < 3; round++) {
    sicm_arena a = sicm_arena_create(maxsize, huge_[2]);
    ASSERT_NE(nullptr, a) << sicm_error_detail();
    std::vector<void *> blocks;
    unsigned seed = round + 1;
    while (void *b = sicm_arena_alloc(a, round == 0 ? 64 : round == 1 ? 1 << 20
                                                                         : 1 + rand_r(&seed) % 300000))
      blocks.push_back(b);
    for (void *b : blocks) sicm_free(b);
    void *big = sicm_arena_alloc(a, maxsize / 10 * 8);
    EXPECT_NE(nullptr, big) << "round " << round << ": " << sicm_error_detail();
    if (big != nullptr) memset(big, 2, maxsize / 10 * 8);
    EXPECT_LE(sicm_arena_size(a), maxsize);
    sicm_free(big);
    EXPECT_EQ(0, sicm_arena_destroy(a));
  }
}

// fork(): a hugetlb arena stays the parent's alone (its pages are not
// inherited: a huge page both map would be copied at the first write, and
// with the pool dry the writer, either one, would die of SIGBUS).  In the
// child the arena is gone (ESTALE, its blocks no arena's), its addresses
// stay held and no new arena's blocks land there (jemalloc's map of extents
// still names the lost arena's, and a new extent would merge with them),
// and new arenas work; the parent writes its block while the child lives.
TEST_F(Hugetlb, AChildOfForkLeavesHugetlbArenasToTheParent) {
  sicm_arena a;
  unsigned char *p = ArenaWithBlock(3, 2 * kHuge, 6, &a);
  ASSERT_NE(nullptr, p);
  sicm_arena hog = sicm_arena_create(0, huge_[3]);  // the pool dry
  ASSERT_NE(nullptr, hog);
  std::vector<void *> taken;
  while (void *h = sicm_arena_alloc(hog, kHuge / 2)) taken.push_back(h);
  int ready[2];
  ASSERT_EQ(0, pipe(ready));
  pid_t pid = fork();
  if (pid == 0) {
    alarm(30);  // a hang is a failure, not the harness's timeout
    int bad = sicm_arena_alloc(a, 100) != nullptr || errno != ESTALE;
    bad |= sicm_arena_lookup(p) != nullptr;
    // A hugetlb arena of its own: the pool is dry, so ENOMEM, never SIGBUS,
    // and never a block in the parent's ranges (its record may be reused).
    sicm_arena mine = sicm_arena_create(0, huge_[3]);
    auto *q = mine ? (char *)sicm_arena_alloc(mine, 100) : nullptr;
    bad |= mine == nullptr || (q == nullptr && errno != ENOMEM);
    if (q != nullptr) memset(q, 1, 100);
    uintptr_t lo = 0, hi = 0;
    bad |= !HeldAddresses(p, &lo, &hi);
    sicm_arena base = sicm_arena_create(0, sicm_device_of_node(0, 0));
    bad |= base == nullptr;
    std::vector<char *> blocks;
    for (size_t k = 0; base != nullptr && k < 96; k++) {
      size_t len = k % 3 ? 100 + k * 48 : (k % 7 + 1) << 16;  // small and large: extents grow
      auto *b = (char *)sicm_arena_alloc(base, len);
      bad |= b == nullptr || ((uintptr_t)b < hi && (uintptr_t)b + len > lo);
      if (b != nullptr) memset(b, 2, len), blocks.push_back(b);
      if (k % 4 == 3 && !blocks.empty())
        sicm_free(blocks[blocks.size() / 2]), blocks.erase(blocks.begin() + blocks.size() / 2);
    }
    for (char *b : blocks) sicm_free(b);
    bad |= base != nullptr && sicm_arena_destroy(base) != 0;
    char c = 1;
    bad |= write(ready[1], &c, 1) != 1;
    usleep(200000);  // alive while the parent writes
    _exit(bad);
  }
  ASSERT_GT(pid, 0);
  close(ready[1]);  // a child that dies before writing ends the read
  char c;
  pollfd wait_child = {ready[0], POLLIN, 0};
  ASSERT_EQ(1, poll(&wait_child, 1, 30000)) << "the child never reported";
  EXPECT_EQ(1, read(ready[0], &c, 1)) << "the child died before it reported";
  Fill(p, 2 * kHuge, 7);  // no copy to make: the page is the parent's alone
  int status = 0;
  ASSERT_EQ(pid, waitpid(pid, &status, 0));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  EXPECT_TRUE(Verify(p, 2 * kHuge, 7));
  close(ready[0]);
  for (void *h : taken) sicm_free(h);
  EXPECT_EQ(0, sicm_arena_destroy(hog));
  sicm_free(p);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

TEST_F(Hugetlb, WhatHugetlbArenasRefuse) {
  sicm_device *mixed[2] = {huge_[2], sicm_device_of_node(3, 0)};
  EXPECT_EQ(nullptr, sicm_arena_create_devices(0, mixed, 2, 0));
  EXPECT_EQ(EINVAL, errno);
  EXPECT_EQ(nullptr, sicm_arena_create_devices(0, &huge_[2], 1, SICM_ARENA_NOHUGEPAGES));
  EXPECT_EQ(EINVAL, errno);
  EXPECT_EQ(nullptr, sicm_arena_create_shared("/sicm-hugetlb-test", 8 << 20, huge_[2], 0));
  EXPECT_EQ(ENOTSUP, errno);
  EXPECT_EQ(nullptr, sicm_arena_create_file("/dev/shm", 8 << 20, huge_[2]));
  EXPECT_EQ(ENOTSUP, errno);
  // Interleaved over two pools: pages land on both.
  sicm_device *two[2] = {huge_[2], huge_[3]};
  sicm_arena a = sicm_arena_create_devices(0, two, 2, SICM_ARENA_INTERLEAVE);
  ASSERT_NE(nullptr, a) << sicm_error_detail();
  const size_t len = 8 * kHuge;
  auto *p = (unsigned char *)sicm_arena_alloc(a, len);
  ASSERT_NE(nullptr, p);
  memset(p, 3, len);
  size_t on2 = 0, on3 = 0;
  std::vector<int> nodes = sicm_test::NodesOfPages(p, len);
  for (int n : nodes) (n == 2 ? on2 : on3) += n == 2 || n == 3;
  EXPECT_EQ(nodes.size(), on2 + on3);
  EXPECT_GT(on2, nodes.size() / 4);
  EXPECT_GT(on3, nodes.size() / 4);
  sicm_free(p);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

}  // namespace
