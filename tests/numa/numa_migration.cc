/* SPDX-License-Identifier: BSD-3-Clause */
// numa_migration.cc (runs in the multi-NUMA guest): whole-arena migration
// moves every page, keeps every byte, rolls back on failure, and lets other
// threads work meanwhile — all checked page by page with move_pages.
#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "numa_test.h"

namespace {

using sicm_test::PagesNotOn;

// Whether every resident page of the arena is on `node`.
bool AllOn(sicm_arena a, int node) {
  size_t bytes[8] = {0};
  EXPECT_EQ(0, sicm_arena_residency(a, bytes, 8));
  bool all = true;
  for (int n = 0; n < 8; n++)
    if (n != node && bytes[n]) {
      ADD_FAILURE() << bytes[n] << " bytes on node " << n << ", expected all on " << node;
      all = false;
    }
  return all;
}

uint64_t Checksum(const unsigned char *p, size_t len) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < len; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

class Migration : public ::testing::Test {
 protected:
  sicm_device *Dev(int node) { return sicm_device_of_node(node, 0); }
  // Fills `node` until `leave` bytes are free, with an arena of its own
  // (destroyed with the fixture).
  void FillLeaving(int node, size_t leave) {
    hog_ = sicm_arena_create(0, Dev(node));
    ASSERT_NE(nullptr, hog_);
    size_t free_bytes = 0;
    ASSERT_EQ(0, sicm_device_get_free_bytes(Dev(node), &free_bytes));
    ASSERT_GT(free_bytes, leave + (64u << 20));
    char *h = (char *)sicm_arena_alloc(hog_, free_bytes - leave);
    ASSERT_NE(nullptr, h);
    memset(h, 1, free_bytes - leave);
  }
  // A block of len bytes in `a` whose every page holds its page number.
  static unsigned char *PageNumbered(sicm_arena a, size_t len) {
    unsigned char *p = (unsigned char *)sicm_arena_alloc(a, len);
    if (p == nullptr) return nullptr;
    for (size_t i = 0; i < len; i += 4096) p[i] = (unsigned char)(i >> 12);
    p[len - 1] = 1;  // the block need not start on a page: touch its last page too
    return p;
  }
  static bool StillPageNumbered(const unsigned char *p, size_t len) {
    for (size_t i = 0; i < len; i += 4096)
      if (p[i] != (unsigned char)(i >> 12)) return false;
    return true;
  }
  void TearDown() override {
    if (hog_ != nullptr) {
      EXPECT_EQ(0, sicm_arena_destroy(hog_));
    }
  }
  sicm_test::Initialized init_;
  sicm_arena hog_ = nullptr;
};

TEST_F(Migration, MovesEveryPageAndKeepsEveryByte) {
  sicm_arena a = sicm_arena_create(0, Dev(0));
  ASSERT_NE(nullptr, a);
  std::vector<std::pair<unsigned char *, size_t>> blocks;
  for (size_t size : {64ul, 64ul << 10, 4ul << 20, 96ul << 20}) {
    unsigned char *p = (unsigned char *)sicm_arena_alloc(a, size);
    ASSERT_NE(nullptr, p);
    for (size_t i = 0; i < size; i++) p[i] = (unsigned char)(i * 7 + size);
    blocks.push_back({p, size});
  }
  std::vector<uint64_t> sums;
  for (auto &b : blocks) sums.push_back(Checksum(b.first, b.second));
  for (int target : {2, 3, 1, 0}) {
    ASSERT_EQ(0, sicm_arena_set_device(a, Dev(target))) << sicm_error_detail();
    for (size_t i = 0; i < blocks.size(); i++) {
      EXPECT_EQ(0u, PagesNotOn(blocks[i].first, blocks[i].second, target))
          << blocks[i].second << "-byte block, target " << target;
      EXPECT_EQ(sums[i], Checksum(blocks[i].first, blocks[i].second));
    }
    EXPECT_TRUE(AllOn(a, target)) << "pages of the arena left behind";
    EXPECT_EQ(target, sicm_arena_get_device(a)->node);
    sicm_migration_report r;
    ASSERT_EQ(0, sicm_arena_last_migration(a, &r));
    EXPECT_EQ(0, r.error);
    EXPECT_GE(r.bytes_moved, 100u << 20);
    EXPECT_EQ(0u, r.pages_failed);
    EXPECT_GT(r.nanoseconds, 0u);
    // Later allocations land on the new device.
    char *fresh = (char *)sicm_arena_alloc(a, 8 << 20);
    memset(fresh, 1, 8 << 20);
    EXPECT_EQ(0u, PagesNotOn(fresh, 8 << 20, target));
    sicm_free(fresh);
  }
  for (auto &b : blocks) sicm_free(b.first);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

// A writer allocates, fills and frees checksummed blocks while the arena
// moves 0 -> 2 -> 3 -> 0 three times; no byte may change.
// Threads using one arena at once are served by several jemalloc arenas
// (one per CPU): every one's pages are on the arena's device and move with
// it.
TEST_F(Migration, ConcurrentThreadsShardsAreOnTheDeviceAndMove) {
  sicm_arena a = sicm_arena_create(0, Dev(0));
  ASSERT_NE(nullptr, a);
  const int nthreads = 4;
  std::vector<std::vector<std::pair<unsigned char *, size_t>>> blocks(nthreads);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < nthreads; t++)
    threads.emplace_back([&, t] {
      ready++;
      while (ready < nthreads) std::this_thread::yield(); // all alive at once
      for (size_t size : {64ul, 4096ul, 256ul << 10, 4ul << 20}) {
        unsigned char *p = (unsigned char *)sicm_arena_alloc(a, size);
        if (p == nullptr) return;
        memset(p, t + 1, size);
        blocks[t].push_back({p, size});
      }
    });
  for (auto &th : threads) th.join();
  for (int target : {0, 2}) {
    if (target != 0) {
      ASSERT_EQ(0, sicm_arena_set_device(a, Dev(target))) << sicm_error_detail();
    }
    for (int t = 0; t < nthreads; t++) {
      ASSERT_EQ(4u, blocks[t].size()) << "thread " << t;
      for (auto &b : blocks[t]) {
        EXPECT_EQ(0u, PagesNotOn(b.first, b.second, target))
            << "thread " << t << ", " << b.second << " bytes, node " << target;
        EXPECT_EQ(t + 1, b.first[b.second - 1]);
      }
    }
    EXPECT_TRUE(AllOn(a, target));
  }
  for (auto &v : blocks)
    for (auto &b : v) sicm_free(b.first);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

// What a move does follows the pages an arena holds now, not the address
// range it used: 64 MiB allocated and freed are given back before the move,
// which reports exactly what is resident after it, all on the target (in
// 4 KiB pages the one page of the block that stays), no metadata.
TEST_F(Migration, MoveCarriesOnlyTheResidentPages) {
  for (unsigned flags : {(unsigned)SICM_ARENA_NOHUGEPAGES, (unsigned)SICM_ARENA_HUGEPAGES}) {
    sicm_device *from = Dev(0);
    sicm_arena a = sicm_arena_create_devices(0, &from, 1, flags);
    ASSERT_NE(nullptr, a);
    char *big = (char *)sicm_arena_alloc(a, 64u << 20);
    ASSERT_NE(nullptr, big);
    memset(big, 1, 64u << 20);
    sicm_free(big); // kept for reuse: the move gives its pages back first
    char *p = (char *)sicm_arena_alloc(a, 64);
    ASSERT_NE(nullptr, p);
    p[0] = 7;
    ASSERT_EQ(0, sicm_arena_set_device(a, Dev(2))) << sicm_error_detail();
    sicm_migration_report r;
    ASSERT_EQ(0, sicm_arena_last_migration(a, &r));
    size_t after[8] = {0};
    ASSERT_EQ(0, sicm_arena_residency(a, after, 8));
    EXPECT_EQ(after[2], r.bytes_moved) << "flags " << flags;
    EXPECT_EQ(0u, after[0]) << "flags " << flags;
    if (flags == SICM_ARENA_NOHUGEPAGES) {
      EXPECT_LE(r.bytes_moved, 8u << 10);
    }
    EXPECT_EQ(0u, PagesNotOn(p, 64, 2));
    EXPECT_EQ(7, p[0]);
    EXPECT_TRUE(AllOn(a, 2));
    sicm_free(p);
    EXPECT_EQ(0, sicm_arena_destroy(a));
  }
}

// An arena that refused huge pages and committed only a few pages is
// queried page by page, without mincore: every page its blocks touched
// moves, each way, and the report counts exactly those pages.
TEST_F(Migration, ASmallArenaMovesEveryPageItTouched) {
  sicm_device *from = Dev(0);
  sicm_arena a = sicm_arena_create_devices(0, &from, 1, SICM_ARENA_NOHUGEPAGES);
  ASSERT_NE(nullptr, a);
  unsigned char *small = (unsigned char *)sicm_arena_alloc(a, 64);
  unsigned char *page = (unsigned char *)sicm_arena_alloc(a, 4096);
  ASSERT_TRUE(small != nullptr && page != nullptr);
  memset(small, 3, 64);
  memset(page, 5, 4096);
  std::set<uintptr_t> touched;  // page numbers
  for (uintptr_t q = (uintptr_t)small / 4096; q <= ((uintptr_t)small + 63) / 4096; q++) touched.insert(q);
  for (uintptr_t q = (uintptr_t)page / 4096; q <= ((uintptr_t)page + 4095) / 4096; q++) touched.insert(q);
  for (int target : {2, 0}) {
    ASSERT_EQ(0, sicm_arena_set_device(a, Dev(target))) << sicm_error_detail();
    EXPECT_EQ(0u, PagesNotOn(small, 64, target)) << "target " << target;
    EXPECT_EQ(0u, PagesNotOn(page, 4096, target)) << "target " << target;
    sicm_migration_report r;
    ASSERT_EQ(0, sicm_arena_last_migration(a, &r));
    EXPECT_EQ(touched.size() * 4096, r.bytes_moved) << "target " << target;
    EXPECT_TRUE(AllOn(a, target));
  }
  for (int i = 0; i < 64; i++) ASSERT_EQ(3, small[i]);
  for (int i = 0; i < 4096; i++) ASSERT_EQ(5, page[i]);
  sicm_free(small);
  sicm_free(page);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

// An arena whose pages a forked child still maps cannot move them without
// CAP_SYS_NICE's MPOL_MF_MOVE_ALL: the move fails with EPERM, counts every
// such page as failed, and leaves the arena where it was, every byte
// intact — a few pages, many, and a huge page alike.
TEST_F(Migration, AnArenaAChildStillMapsIsRefusedAndStays) {
  const struct {
    size_t len;
    unsigned flags;
  } cases[] = {{4096, SICM_ARENA_NOHUGEPAGES},
               {1u << 20, SICM_ARENA_NOHUGEPAGES},
               {2u << 20, SICM_ARENA_HUGEPAGES}};
  for (const auto &c : cases) {
    sicm_device *from = Dev(0);
    sicm_arena a = sicm_arena_create_devices(0, &from, 1, c.flags);
    ASSERT_NE(nullptr, a);
    unsigned char *p = (unsigned char *)sicm_arena_alloc(a, c.len);
    ASSERT_NE(nullptr, p);
    memset(p, 9, c.len);
    int hold[2];
    ASSERT_EQ(0, pipe(hold));
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {  // maps the parent's pages until the pipe closes
      char ch;
      close(hold[1]);
      _exit(read(hold[0], &ch, 1) == 0 ? 0 : 1);
    }
    close(hold[0]);
    errno = 0;
    EXPECT_EQ(-1, sicm_arena_set_device(a, Dev(2))) << c.len;
    EXPECT_EQ(EPERM, errno) << c.len << ": " << sicm_error_detail();
    sicm_migration_report r;
    ASSERT_EQ(0, sicm_arena_last_migration(a, &r));
    EXPECT_EQ(EPERM, r.error) << c.len;
    EXPECT_GE(r.pages_failed, 1u) << c.len;
    close(hold[1]);
    int status = 0;
    ASSERT_EQ(child, waitpid(child, &status, 0));
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    EXPECT_EQ(0u, PagesNotOn(p, c.len, 0)) << c.len;
    EXPECT_TRUE(AllOn(a, 0)) << c.len;
    EXPECT_EQ(0, sicm_arena_get_device(a)->node) << c.len << ": still bound where it was";
    for (size_t i = 0; i < c.len; i++) ASSERT_EQ(9, p[i]) << c.len;
    sicm_free(p);
    EXPECT_EQ(0, sicm_arena_destroy(a));
  }
}

// Each way of moving a huge-page arena (SICM_MIGRATE_HUGE, read by
// sicm_init) moves every page, huge or not, and keeps every byte, with one
// thread and with two.
TEST_F(Migration, EveryHugePageMethodMovesEveryPage) {
  for (const char *method : {"heads", "subpages", "mbind"}) {
    sicm_fini(); // the fixture's reference is the only one
    setenv("SICM_MIGRATE_HUGE", method, 1);
    ASSERT_EQ(0, sicm_init()) << sicm_error_detail();
    for (unsigned threads : {1u, 2u}) {
      ASSERT_EQ(0, sicm_migrate_set_threads(threads));
      sicm_device *from = Dev(0);
      sicm_arena a = sicm_arena_create_devices(0, &from, 1, SICM_ARENA_HUGEPAGES);
      ASSERT_NE(nullptr, a);
      std::vector<std::pair<unsigned char *, size_t>> blocks;
      for (size_t size : {64ul, 12288ul, 3ul << 20, 130ul << 20}) {
        unsigned char *p = (unsigned char *)sicm_arena_alloc(a, size);
        ASSERT_NE(nullptr, p) << method << ", " << size;
        for (size_t i = 0; i < size; i += 512) p[i] = (unsigned char)(i / 512 + size);
        blocks.push_back({p, size});
      }
      for (int target : {2, 3}) {
        ASSERT_EQ(0, sicm_arena_set_device(a, Dev(target))) << method << ": " << sicm_error_detail();
        for (auto &b : blocks) {
          EXPECT_EQ(0u, PagesNotOn(b.first, b.second, target))
              << method << ", " << threads << " threads, " << b.second << " bytes";
          size_t bad = 0;
          for (size_t i = 0; i < b.second; i += 512)
            bad += b.first[i] != (unsigned char)(i / 512 + b.second);
          EXPECT_EQ(0u, bad) << method << ", " << b.second << " bytes";
        }
        EXPECT_TRUE(AllOn(a, target)) << method;
      }
      for (auto &b : blocks) sicm_free(b.first);
      EXPECT_EQ(0, sicm_arena_destroy(a));
    }
  }
  sicm_fini();
  unsetenv("SICM_MIGRATE_HUGE");
  ASSERT_EQ(0, sicm_init());
}

TEST_F(Migration, WriterThreadKeepsItsDataThroughRepeatedMoves) {
  sicm_arena a = sicm_arena_create(0, Dev(0));
  ASSERT_NE(nullptr, a);
  struct Block { unsigned char *p; size_t len; uint64_t sum; };
  std::vector<Block> live;
  std::atomic<bool> stop{false};
  std::atomic<size_t> corrupt{0}, writes{0};
  std::thread writer([&] {
    unsigned seed = 7;
    while (!stop.load()) {
      seed = seed * 1664525 + 1013904223;
      size_t len = 64 + (seed >> 12) % (256 << 10);
      unsigned char *p = (unsigned char *)sicm_arena_alloc(a, len);
      if (!p) continue;
      for (size_t i = 0; i < len; i++) p[i] = (unsigned char)(seed >> (i % 24));
      live.push_back({p, len, Checksum(p, len)});
      writes++;
      if (live.size() > 200) {  // verify and free the oldest
        Block b = live.front();
        live.erase(live.begin());
        if (Checksum(b.p, b.len) != b.sum) corrupt++;
        sicm_free(b.p);
      }
    }
  });
  while (writes.load() < 50) std::this_thread::yield();
  // At least three rounds, and on until the writer has done real work.
  for (int round = 0; round < 3 || (writes.load() < 1000 && round < 300); round++)
    for (int target : {2, 3, 0}) {
      ASSERT_EQ(0, sicm_arena_set_device(a, Dev(target))) << sicm_error_detail();
      // Pages the writer adds meanwhile land on the target too.
      ASSERT_TRUE(AllOn(a, target)) << "round " << round;
    }
  stop = true;
  writer.join();
  for (auto &b : live) {
    if (Checksum(b.p, b.len) != b.sum) corrupt++;
    sicm_free(b.p);
  }
  EXPECT_EQ(0u, corrupt.load());
  EXPECT_GE(writes.load(), 1000u) << "the writer must really have run during the moves";
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

TEST_F(Migration, TargetTooFullIsRefusedBeforeAnyPageMoves) {
  // Fill most of node 3, then try to move a 600 MiB arena there.
  FillLeaving(3, 300u << 20);
  sicm_arena a = sicm_arena_create(0, Dev(0));
  const size_t len = 600u << 20;
  unsigned char *p = PageNumbered(a, len);
  ASSERT_NE(nullptr, p);
  errno = 0;
  EXPECT_EQ(-1, sicm_arena_set_device(a, Dev(3)));
  EXPECT_EQ(ENOMEM, errno) << sicm_error_detail();
  EXPECT_NE(std::string::npos, std::string(sicm_error_detail()).find("do not fit"))
      << "refused before any page moved: " << sicm_error_detail();
  sicm_migration_report r;
  ASSERT_EQ(0, sicm_arena_last_migration(a, &r));
  EXPECT_EQ(ENOMEM, r.error);
  EXPECT_EQ(0u, r.bytes_moved);
  EXPECT_EQ(0u, PagesNotOn(p, len, 0)) << "every page still on node 0";
  EXPECT_TRUE(AllOn(a, 0));
  EXPECT_EQ(0, sicm_arena_get_device(a)->node) << "still bound where it was";
  EXPECT_TRUE(StillPageNumbered(p, len));
  sicm_free(p);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

// A nearly full target and a thread that keeps allocating and writing in
// the arena: the move is refused with ENOMEM before the binding changes
// (so the writer's pages never fault on the full node, where the kernel
// would call the OOM killer), every byte stays, and an asynchronous retry
// gives the same cause.
TEST_F(Migration, WriterAndANearlyFullTargetGetEnomemNotTheOomKiller) {
  FillLeaving(2, 104u << 20);
  sicm_arena a = sicm_arena_create(0, Dev(0));
  const size_t len = 240u << 20;
  unsigned char *p = PageNumbered(a, len);
  ASSERT_NE(nullptr, p);
  std::atomic<bool> stop{false};
  std::atomic<size_t> written{0}, bad{0};
  std::thread writer([&] {
    std::vector<unsigned char *> mine;
    for (unsigned round = 0; !stop.load(); round++) {
      unsigned char *b = (unsigned char *)sicm_arena_alloc(a, 1 << 20);
      if (b == nullptr) continue;
      memset(b, (int)(round & 0xff), 1 << 20);
      written += 1 << 20;
      mine.push_back(b);
      if (mine.size() > 32) {
        unsigned char *old = mine.front();
        unsigned char want = (unsigned char)((round - 32) & 0xff);
        for (size_t i = 0; i < (1u << 20); i += 4096)
          if (old[i] != want) bad++;
        sicm_free(old);
        mine.erase(mine.begin());
      }
    }
    for (auto *b : mine) sicm_free(b);
  });
  while (written.load() == 0) std::this_thread::yield();
  errno = 0;
  EXPECT_EQ(-1, sicm_arena_set_device(a, Dev(2)));
  int err = errno;
  std::string cause = sicm_error_detail();
  EXPECT_EQ(ENOMEM, err) << cause;
  sicm_device *target = Dev(2);
  sicm_migration *m = sicm_arena_set_devices_async(a, &target, 1, 0);
  ASSERT_NE(nullptr, m) << sicm_error_detail();
  sicm_migration_report r;
  errno = 0;
  EXPECT_EQ(-1, sicm_migration_wait(m, &r));
  EXPECT_EQ(ENOMEM, errno) << sicm_error_detail();
  EXPECT_EQ(ENOMEM, r.error);
  EXPECT_NE(std::string::npos, cause.find("do not fit")) << cause;
  EXPECT_NE(std::string::npos, std::string(sicm_error_detail()).find("do not fit"))
      << "first: " << cause << "; again: " << sicm_error_detail();
  stop = true;
  writer.join();
  EXPECT_GT(written.load(), 0u);
  EXPECT_EQ(0u, bad.load()) << "the writer's blocks kept their bytes";
  EXPECT_TRUE(AllOn(a, 0));
  EXPECT_EQ(0, sicm_arena_get_device(a)->node) << "still bound where it was";
  EXPECT_TRUE(StillPageNumbered(p, len));
  sicm_free(p);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

TEST_F(Migration, AsyncMigrationCompletesWhileAllocationContinues) {
  sicm_arena a = sicm_arena_create(0, Dev(0));
  const size_t len = 256u << 20;
  char *p = (char *)sicm_arena_alloc(a, len);
  memset(p, 3, len);
  sicm_device *hbm = Dev(2);
  sicm_migration *m = sicm_arena_set_devices_async(a, &hbm, 1, 0);
  ASSERT_NE(nullptr, m) << sicm_error_detail();
  size_t allocations = 0;
  while (!sicm_migration_poll(m)) {
    void *q = sicm_arena_alloc(a, 1024);
    ASSERT_NE(nullptr, q);
    sicm_free(q);
    allocations++;
  }
  sicm_migration_report r;
  EXPECT_EQ(0, sicm_migration_wait(m, &r)) << sicm_error_detail();
  EXPECT_GE(r.bytes_moved, len);
  EXPECT_GT(allocations, 0u);
  EXPECT_EQ(0u, PagesNotOn(p, len, 2));
  EXPECT_TRUE(AllOn(a, 2));
  sicm_free(p);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

TEST_F(Migration, CancelledMigrationEndsWhereItStarted) {
  ASSERT_EQ(0, sicm_migrate_set_threads(1));  // chunk by chunk, so a cancel lands
  sicm_arena a = sicm_arena_create(0, Dev(0));
  const size_t len = 512u << 20;
  char *p = (char *)sicm_arena_alloc(a, len);
  memset(p, 5, len);
  sicm_device *cap = Dev(3);
  sicm_migration *m = sicm_arena_set_devices_async(a, &cap, 1, 0);
  ASSERT_NE(nullptr, m);
  ASSERT_EQ(0, sicm_migration_cancel(m));
  sicm_migration_report r;
  int rc = sicm_migration_wait(m, &r);
  if (rc == 0) {
    EXPECT_TRUE(AllOn(a, 3)) << "finished before the cancel was seen";
  } else {
    EXPECT_EQ(ECANCELED, errno);
    EXPECT_EQ(ECANCELED, r.error);
    EXPECT_EQ(0u, PagesNotOn(p, len, 0));
    EXPECT_EQ(0, sicm_arena_get_device(a)->node);
  }
  for (size_t i = 0; i < len; i += 4096) ASSERT_EQ(5, p[i]);
  sicm_free(p);
  EXPECT_EQ(0, sicm_arena_destroy(a));
  ASSERT_EQ(0, sicm_migrate_set_threads(2));
}

TEST_F(Migration, InterleaveOverTwoDevices) {
  sicm_arena a = sicm_arena_create(0, Dev(0));
  const size_t len = 64u << 20;
  char *p = (char *)sicm_arena_alloc(a, len);
  memset(p, 1, len);
  sicm_device *both[] = {Dev(2), Dev(3)};
  ASSERT_EQ(0, sicm_arena_set_devices(a, both, 2, SICM_ARENA_INTERLEAVE)) << sicm_error_detail();
  size_t bytes[8] = {0};
  ASSERT_EQ(0, sicm_arena_residency(a, bytes, 8));
  EXPECT_EQ(0u, bytes[0] + bytes[1]);
  EXPECT_GT(bytes[2], len / 4);
  EXPECT_GT(bytes[3], len / 4);
  sicm_free(p);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

TEST_F(Migration, HugePageArenasMoveInParallelOthersInOneThread) {
  ASSERT_EQ(0, sicm_migrate_set_threads(2));
  sicm_device *dram = Dev(0);
  sicm_arena small = sicm_arena_create(0, dram);
  sicm_arena large = sicm_arena_create_devices(0, &dram, 1, SICM_ARENA_HUGEPAGES);
  sicm_arena large_4k = sicm_arena_create_devices(0, &dram, 1, SICM_ARENA_NOHUGEPAGES);
  void *s = sicm_arena_alloc(small, 1 << 20);
  memset(s, 1, 1 << 20);
  const size_t len = 300u << 20;
  char *l = (char *)sicm_arena_alloc(large, len), *k = (char *)sicm_arena_alloc(large_4k, len);
  ASSERT_TRUE(l && k);
  memset(l, 1, len);
  memset(k, 1, len);
  struct { sicm_arena a; unsigned threads; const char *what; } cases[] = {
      {small, 1, "small"}, {large, 2, "large, huge pages"}, {large_4k, 1, "large, 4 KiB pages"}};
  for (auto &c : cases) {
    sicm_migration_report r;
    ASSERT_EQ(0, sicm_arena_set_device(c.a, Dev(2))) << c.what;
    ASSERT_EQ(0, sicm_arena_last_migration(c.a, &r));
    EXPECT_EQ(c.threads, r.threads) << c.what;
    EXPECT_TRUE(AllOn(c.a, 2)) << c.what;
  }
  EXPECT_EQ(0u, PagesNotOn(l, len, 2));
  EXPECT_EQ(0u, PagesNotOn(k, len, 2));
  sicm_free(s);
  sicm_free(l);
  sicm_free(k);
  EXPECT_EQ(0, sicm_arena_destroy(small));
  EXPECT_EQ(0, sicm_arena_destroy(large));
  EXPECT_EQ(0, sicm_arena_destroy(large_4k));
}

// The workload that once ended in SIGKILL: rounds of create, fill with
// 20,000 blocks (two thirds of 1-2,000 bytes, a third of 1 B-256 KiB, 64
// bytes of each touched), three moves between the DRAM nodes while
// another thread frees every block, destroy.  The cause was the OOM killer
// (constraint MEMORY_POLICY): arenas past 64 MiB got transparent huge
// pages, so each 64-byte touch made a 2 MiB page resident and the arena
// (under 70 MiB touched) filled its 1 GiB node.  Run in a child, so that
// a kill is seen as one; the arena must stay small and every move succeed.
TEST_F(Migration, MovesWhileAnotherThreadFreesNeverMeetTheOomKiller) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    static void *blocks[20000];
    unsigned seed = 1;
    for (int round = 0; round < 4; round++) {
      sicm_arena a = sicm_arena_create(0, Dev(0));
      if (a == nullptr) _exit(10);
      for (void *&b : blocks) {
        seed = seed * 1103515245u + 12345u;
        size_t size = (&b - blocks) % 3 != 2 ? 1 + (seed >> 8) % 2000 : 1 + (seed >> 8) % (256 << 10);
        if ((b = sicm_arena_alloc(a, size)) == nullptr) _exit(11);
        memset(b, 1, size < 64 ? size : 64);
      }
      size_t on[4] = {0, 0, 0, 0};
      if (sicm_arena_residency(a, on, 4) < 0) _exit(12);
      if (on[0] > (128u << 20)) _exit(13);  // 20,000 pages and jemalloc's metadata at most
      std::thread freer([] { for (void *b : blocks) sicm_free(b); });
      int moved = 0;
      for (int m = 0; m < 3; m++) moved += sicm_arena_set_device(a, Dev(m % 2 ? 0 : 1)) == 0;
      freer.join();
      if (moved != 3) _exit(14);
      if (sicm_arena_destroy(a) != 0) _exit(15);
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(child, waitpid(child, &status, 0));
  ASSERT_FALSE(WIFSIGNALED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(0, WEXITSTATUS(status)) << "10 create, 11 alloc, 12 residency, 13 more than 128 MiB "
                                       "resident, 14 a move failed, 15 destroy";
}

}  // namespace
