/* SPDX-License-Identifier: BSD-3-Clause */
// test_migration_api.cc: the migration calls' errors and bookkeeping on
// this one-node machine (that pages really move is checked in the guest by
// numa_migration), and concurrent use under ThreadSanitizer.
#include <errno.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "sicm_test.h"

namespace {

class MigrationApi : public sicm_test::LocalDevice {
 protected:
  void SetUp() override {
    LocalDevice::SetUp();
    if (HasFatalFailure()) return;
    arena_ = sicm_arena_create(0, dev_);
    ASSERT_NE(nullptr, arena_);
  }
  void TearDown() override { EXPECT_EQ(0, sicm_arena_destroy(arena_)); }
  sicm_arena arena_ = nullptr;
};

TEST_F(MigrationApi, BadArgumentsAreRejected) {
  sicm_device forged = *dev_;
  sicm_migration_report r;
  errno = 0; EXPECT_EQ(-1, sicm_arena_set_device(arena_, nullptr)); EXPECT_EQ(EINVAL, errno);
  errno = 0; EXPECT_EQ(-1, sicm_arena_set_device(arena_, &forged)); EXPECT_EQ(EINVAL, errno);
  errno = 0; EXPECT_EQ(-1, sicm_arena_set_device(nullptr, dev_)); EXPECT_EQ(EINVAL, errno);
  errno = 0;
  EXPECT_EQ(-1, sicm_arena_set_devices(arena_, &dev_, 1, SICM_ARENA_HUGEPAGES));
  EXPECT_EQ(EINVAL, errno);
  errno = 0; EXPECT_EQ(-1, sicm_arena_set_devices(arena_, &dev_, 0, 0)); EXPECT_EQ(EINVAL, errno);
  errno = 0; EXPECT_EQ(-1, sicm_arena_last_migration(arena_, &r)); EXPECT_EQ(ENOENT, errno);
  errno = 0; EXPECT_EQ(-1, sicm_arena_last_migration(arena_, nullptr)); EXPECT_EQ(EINVAL, errno);
  errno = 0; EXPECT_EQ(-1, sicm_migrate_set_threads(0)); EXPECT_EQ(EINVAL, errno);
  errno = 0; EXPECT_EQ(-1, sicm_migrate_set_threads(257)); EXPECT_EQ(EINVAL, errno);
  errno = 0; EXPECT_EQ(nullptr, sicm_arena_set_devices_async(arena_, nullptr, 1, 0));
  EXPECT_EQ(EINVAL, errno);
  errno = 0; EXPECT_EQ(-1, sicm_migration_poll(nullptr)); EXPECT_EQ(EINVAL, errno);
  errno = 0; EXPECT_EQ(-1, sicm_migration_cancel(nullptr)); EXPECT_EQ(EINVAL, errno);
  errno = 0; EXPECT_EQ(-1, sicm_migration_wait(nullptr, &r)); EXPECT_EQ(EINVAL, errno);
}

TEST_F(MigrationApi, DestroyedArenaIsStale) {
  sicm_arena gone = sicm_arena_create(0, dev_);
  ASSERT_EQ(0, sicm_arena_destroy(gone));
  errno = 0; EXPECT_EQ(-1, sicm_arena_set_device(gone, dev_)); EXPECT_EQ(ESTALE, errno);
  errno = 0; EXPECT_EQ(nullptr, sicm_arena_set_devices_async(gone, &dev_, 1, 0));
  EXPECT_EQ(ESTALE, errno);
}

TEST_F(MigrationApi, SameDeviceMoveSucceedsAndReports) {
  char *p = (char *)sicm_arena_alloc(arena_, 4 << 20);
  memset(p, 9, 4 << 20);
  ASSERT_EQ(0, sicm_arena_set_device(arena_, dev_)) << sicm_error_detail();
  sicm_migration_report r;
  ASSERT_EQ(0, sicm_arena_last_migration(arena_, &r));
  EXPECT_EQ(0, r.error);
  EXPECT_EQ(0u, r.bytes_moved) << "nothing was off the target";
  EXPECT_EQ(0u, r.pages_failed);
  EXPECT_EQ(1u, r.threads);
  EXPECT_EQ(9, p[(4 << 20) - 1]);
  sicm_free(p);
}

// Threads allocate, free and write while migrations run synchronously and
// asynchronously; meant for ThreadSanitizer as much as for the result.
TEST_F(MigrationApi, ConcurrentTrafficDuringMigrations) {
  std::atomic<bool> stop{false};
  std::atomic<size_t> bad{0};
  auto traffic = [&](unsigned seed) {
    while (!stop.load()) {
      size_t len = 64 + (seed = seed * 1103515245u + 12345u) % 100000;
      char *p = (char *)sicm_arena_alloc(arena_, len);
      if (!p) continue;
      memset(p, seed & 0xff, len);
      if (p[len - 1] != (char)(seed & 0xff)) bad++;
      sicm_free(p);
    }
  };
  std::thread t1(traffic, 1u), t2(traffic, 2u);
  for (int i = 0; i < 20; i++) {
    ASSERT_EQ(0, sicm_arena_set_device(arena_, dev_));
    sicm_migration *m = sicm_arena_set_devices_async(arena_, &dev_, 1, 0);
    ASSERT_NE(nullptr, m);
    if (i % 2) sicm_migration_cancel(m);
    int rc = sicm_migration_wait(m, nullptr);
    EXPECT_TRUE(rc == 0 || errno == ECANCELED);
  }
  stop = true;
  t1.join();
  t2.join();
  EXPECT_EQ(0u, bad.load());
}

}  // namespace

// Residency scans (and moves) look only as far into a window as jemalloc
// ever committed, plus the 2 MiB block around it unless huge pages are
// refused: every page a program touched is still counted, whatever the
// block sizes and page flags.
TEST(MigrationReach, ResidencyCountsEveryTouchedPage) {
  sicm_test::Initialized init;
  ASSERT_TRUE(init.ok());
  sicm_device *dev = sicm_device_of_node(sicm_node_self(), 0);
  const size_t page = 4096;
  for (unsigned flags : {0u, (unsigned)SICM_ARENA_NOHUGEPAGES, (unsigned)SICM_ARENA_HUGEPAGES}) {
    sicm_arena a = sicm_arena_create_devices(0, &dev, 1, flags);
    ASSERT_NE(nullptr, a) << sicm_error_detail();
    std::vector<std::pair<uintptr_t, uintptr_t>> spans;  // touched pages [first, end)
    for (size_t size : {(size_t)64, (size_t)4096, (size_t)100000, (size_t)1 << 20,
                        (size_t)3 << 20, (size_t)16 << 20, (size_t)64, (size_t)70000}) {
      char *p = (char *)sicm_arena_alloc(a, size);
      ASSERT_NE(nullptr, p);
      memset(p, 1, size);
      spans.push_back({(uintptr_t)p / page, ((uintptr_t)p + size + page - 1) / page});
    }
    std::sort(spans.begin(), spans.end());
    size_t touched = 0;
    uintptr_t done = 0;
    for (auto &s : spans) {
      uintptr_t first = s.first > done ? s.first : done;
      if (s.second > first) touched += s.second - first;
      done = s.second > done ? s.second : done;
    }
    size_t bytes[64] = {0};
    ASSERT_EQ(0, sicm_arena_residency(a, bytes, 64)) << sicm_error_detail();
    size_t resident = 0;
    for (size_t b : bytes) resident += b;
    EXPECT_GE(resident, touched * page) << "flags " << flags;
    if (flags == SICM_ARENA_NOHUGEPAGES) {
      EXPECT_EQ(resident, touched * page) << "nothing but what was touched";
    }
    EXPECT_EQ(0, sicm_arena_destroy(a));
  }
}
