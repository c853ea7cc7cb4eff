/* SPDX-License-Identifier: BSD-3-Clause */
// test_upkeep.cc: sicm_defrag_reallocate moves blocks out of sparse slabs,
// keeping their bytes, and leaves alone what it should; the upkeep thread
// starts and stops, at any time, and gives back aged free pages (stress).
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "sicm_test.h"

namespace {

class Upkeep : public sicm_test::LocalDevice {};

size_t DistinctPages(const std::vector<char *> &blocks) {
  std::set<uintptr_t> pages;
  for (char *p : blocks) pages.insert((uintptr_t)p >> 12);
  return pages.size();
}

TEST_F(Upkeep, DefragPacksSparseSlabsAndKeepsTheBytes) {
  sicm_arena a = sicm_arena_create(0, dev_);
  ASSERT_NE(nullptr, a);
  std::vector<char *> all, kept;
  for (int i = 0; i < 20000; i++) {
    char *p = (char *)sicm_arena_alloc(a, 96);
    ASSERT_NE(nullptr, p);
    memset(p, i & 0xff, 96);
    all.push_back(p);
  }
  // Every tenth block stays: every slab is left a tenth used.
  for (size_t i = 0; i < all.size(); i++) {
    if (i % 10 == 0) kept.push_back(all[i]);
    else sicm_free(all[i]);
  }
  size_t before = DistinctPages(kept);
  size_t moved = 0;
  for (size_t i = 0; i < kept.size(); i++) {
    char *p = (char *)sicm_defrag_reallocate(kept[i]);
    if (p == nullptr) continue;
    moved++;
    kept[i] = p;
    EXPECT_EQ(a, sicm_arena_lookup(p));
  }
  for (size_t i = 0; i < kept.size(); i++)
    for (int b = 0; b < 96; b++)
      ASSERT_EQ((char)((i * 10) & 0xff), kept[i][b]) << "block " << i;
  EXPECT_GT(moved, kept.size() / 2);
  EXPECT_LT(DistinctPages(kept) * 2, before) << moved << " moved";
  for (char *p : kept) sicm_free(p);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

TEST_F(Upkeep, DefragLeavesAloneWhatIsNotWorthIt) {
  sicm_arena a = sicm_arena_create(0, dev_);
  ASSERT_NE(nullptr, a);
  errno = 1234;
  EXPECT_EQ(nullptr, sicm_defrag_reallocate(nullptr));
  void *heap = malloc(64);
  EXPECT_EQ(nullptr, sicm_defrag_reallocate(heap));
  free(heap);
  void *large = sicm_arena_alloc(a, 1 << 20);
  ASSERT_NE(nullptr, large);
  EXPECT_EQ(nullptr, sicm_defrag_reallocate(large));
  // A slab full of live blocks is as used as a slab can be.
  std::vector<void *> full;
  for (int i = 0; i < 512; i++) full.push_back(sicm_arena_alloc(a, 64));
  size_t moved = 0;
  for (void *p : full) moved += sicm_defrag_reallocate(p) != nullptr;
  EXPECT_EQ(0u, moved);
  EXPECT_EQ(1234, errno);
  for (void *p : full) sicm_free(p);
  sicm_free(large);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

// An address inside a live block is no block: nothing moves, nothing is
// freed, and the block is never handed out again while it lives.
TEST_F(Upkeep, DefragOfAnAddressInsideABlockMovesNothing) {
  sicm_arena a = sicm_arena_create(0, dev_);
  ASSERT_NE(nullptr, a);
  std::vector<char *> all, kept;
  for (int i = 0; i < 2000; i++) all.push_back((char *)sicm_arena_alloc(a, 96));
  for (size_t i = 0; i < all.size(); i++) {  // sparse slabs: worth moving
    if (i % 10 == 0) kept.push_back(all[i]);
    else sicm_free(all[i]);
  }
  for (char *p : kept) memset(p, 0x5a, 96);
  for (char *p : kept) EXPECT_EQ(nullptr, sicm_defrag_reallocate(p + 8));
  std::vector<char *> fresh;
  for (int i = 0; i < 4000; i++) {
    char *q = (char *)sicm_arena_alloc(a, 96);
    ASSERT_NE(nullptr, q);
    for (char *p : kept) ASSERT_FALSE(q < p + 96 && p < q + 96) << "handed out twice";
    memset(q, 0, 96);
    fresh.push_back(q);
  }
  for (char *p : kept)
    for (int b = 0; b < 96; b++) ASSERT_EQ(0x5a, p[b]);
  for (char *q : fresh) sicm_free(q);
  for (char *p : kept) sicm_free(p);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

// Threads of this process named as the upkeep thread (other runtimes, a
// sanitizer's, may start threads of their own).
size_t BackgroundThreads() {
  size_t n = 0;
  DIR *d = opendir("/proc/self/task");
  for (struct dirent *e; d && (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char path[300], name[32] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    if (FILE *f = fopen(path, "r")) {
      if (fgets(name, sizeof name, f) == nullptr) name[0] = '\0';
      fclose(f);
    }
    n += strncmp(name, "sicm_upkeep", 11) == 0;
  }
  if (d) closedir(d);
  return n;
}

TEST_F(Upkeep, BackgroundThreadsStartAndStop) {
  EXPECT_EQ(-1, sicm_background_threads(2));
  EXPECT_EQ(EINVAL, errno);
  ASSERT_EQ(0u, BackgroundThreads());
  ASSERT_EQ(0, sicm_background_threads(1)) << sicm_error_detail();
  sicm_arena a = sicm_arena_create(0, dev_);
  ASSERT_NE(nullptr, a);
  void *p = sicm_arena_alloc(a, 4 << 20);
  sicm_free(p);
  // A new thread names itself once it runs: wait for it (an order, no bound).
  for (int tries = 0; tries < 500 && BackgroundThreads() == 0; tries++) usleep(10000);
  EXPECT_EQ(1u, BackgroundThreads());
  ASSERT_EQ(0, sicm_background_threads(1)) << "a second start changes nothing";
  EXPECT_EQ(1u, BackgroundThreads());
  ASSERT_EQ(0, sicm_background_threads(0)) << sicm_error_detail();
  EXPECT_EQ(0u, BackgroundThreads());
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

// Switched on and off while other threads create, fill and destroy
// arenas: every call returns (a hang is the alarm, which fails the test).
TEST_F(Upkeep, SwitchedWhileArenasComeAndGo) {
  alarm(120);
  std::atomic<bool> stop{false};
  std::vector<std::thread> churn;
  for (unsigned t = 0; t < 3; t++)
    churn.emplace_back([&, t] {
      unsigned seed = t + 1;
      while (!stop.load()) {
        sicm_arena a = sicm_arena_create(rand_r(&seed) % 2 ? 0 : 64 << 20, dev_);
        if (a == nullptr) continue;
        void *blocks[32];
        for (void *&b : blocks) b = sicm_arena_alloc(a, 1 + rand_r(&seed) % (1u << (rand_r(&seed) % 22)));
        for (void *b : blocks) sicm_free(b);
        sicm_arena_destroy(a);
      }
    });
  unsigned seed = 7;
  for (int i = 0; i < 600; i++) {
    ASSERT_EQ(0, sicm_background_threads(i % 2 == 0)) << sicm_error_detail();
    usleep(rand_r(&seed) % 1000);
  }
  stop = true;
  for (auto &t : churn) t.join();
  EXPECT_EQ(0u, BackgroundThreads());
  alarm(0);
}

// The upkeep thread gives back the pages of blocks freed and left alone:
// an order (they go, within the allocator's decay and a margin), no bound.
class UpkeepStress : public Upkeep {};
TEST_F(UpkeepStress, GivesBackAgedFreePages) {
  ASSERT_EQ(0, sicm_background_threads(1));
  sicm_arena a = sicm_arena_create(0, dev_);
  ASSERT_NE(nullptr, a);
  std::vector<void *> blocks;
  for (int i = 0; i < 64; i++) {
    blocks.push_back(sicm_arena_alloc(a, 1 << 20));
    ASSERT_NE(nullptr, blocks.back());
    memset(blocks.back(), 1, 1 << 20);
  }
  for (void *b : blocks) sicm_free(b);
  size_t bytes[64];
  for (int tries = 0; tries < 120; tries++) {  // the decay takes ten seconds
    memset(bytes, 0, sizeof bytes);  // the call adds to what is there
    ASSERT_EQ(0, sicm_arena_residency(a, bytes, 64));
    if (bytes[dev_->node] < (8u << 20)) break;
    usleep(500000);
  }
  EXPECT_LT(bytes[dev_->node], 8u << 20) << "of 64 MiB freed, still resident";
  EXPECT_EQ(0, sicm_background_threads(0));
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

}  // namespace
