/* SPDX-License-Identifier: BSD-3-Clause */
// test_errors.cc: every errno that include/sicm.h documents for the
// library's lifetime, devices, arenas, allocation, statistics and migration
// (shared arenas: test_shared*; allocators: test_allocator), one row per
// documented cause: the call fails with its documented value and errno.
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <functional>
#include <vector>

#include "sicm_test.h"

namespace {

// A call and how it fails: `failed` runs it and says whether it returned
// its failure value (NULL, -1, 0, ...); errno is read right after.
struct Row {
  const char *call;
  int expect_errno;
  std::function<bool()> failed;
};

void CheckRows(const std::vector<Row> &rows) {
  for (const Row &r : rows) {
    errno = 0;
    bool failed = r.failed();
    int err = errno;
    EXPECT_TRUE(failed) << r.call << " did not fail";
    EXPECT_EQ(r.expect_errno, err) << r.call << ": " << strerror(err) << " (" << sicm_error_detail()
                                   << ")";
  }
}

// Runs first: gtest keeps the order of a file's tests, and nothing has
// initialized the library yet.
TEST(ErrorsBeforeInit, EveryCallNeedingTheLibraryIsEperm) {
  unsigned cpu = 0;
  sicm_migration_report report;
  CheckRows({
      {"sicm_fini", EPERM, [] { return sicm_fini() == -1; }},
      {"sicm_init_topology_source", EPERM, [] { return sicm_init_topology_source() == -1; }},
      {"sicm_devices", EPERM, [] { return sicm_devices() == nullptr; }},
      {"sicm_device_of_node", EPERM, [] { return sicm_device_of_node(0, 0) == nullptr; }},
      {"sicm_node_distance", EPERM, [] { return sicm_node_distance(0, 0) == -1; }},
      {"sicm_node_self", EPERM, [] { return sicm_node_self() == -1; }},
      {"sicm_node_of_cpus", EPERM, [&] { return sicm_node_of_cpus(&cpu, 1) == -1; }},
      {"sicm_rank", EPERM, [] { return sicm_rank(SICM_RANK_BANDWIDTH, 0, nullptr, 0, nullptr) == -1; }},
      {"sicm_device_best", EPERM, [] { return sicm_device_best(SICM_RANK_BANDWIDTH, 0) == nullptr; }},
      {"sicm_arena_create", EPERM, [] { return sicm_arena_create(0, nullptr) == nullptr; }},
      {"sicm_stats_print", EPERM, [] { return sicm_stats_print(stderr, 0) == -1; }},
      {"sicm_arena_last_migration of no arena", EINVAL,
       [&] { return sicm_arena_last_migration(nullptr, &report) == -1; }},
  });
}

class Errors : public sicm_test::LocalDevice {
 protected:
  void SetUp() override {
    LocalDevice::SetUp();
    if (HasFatalFailure()) return;
    live_ = sicm_arena_create(0, dev_);
    small_ = sicm_arena_create(1 << 20, dev_);
    gone_ = sicm_arena_create(0, dev_);
    ASSERT_TRUE(live_ && small_ && gone_) << sicm_error_detail();
    ASSERT_EQ(0, sicm_arena_destroy(gone_));
    block_ = sicm_arena_alloc(live_, 64);
    ASSERT_NE(nullptr, block_);
  }
  void TearDown() override {
    sicm_free(block_);
    EXPECT_EQ(0, sicm_arena_destroy(live_));
    EXPECT_EQ(0, sicm_arena_destroy(small_));
  }
  sicm_arena live_ = nullptr, small_ = nullptr, gone_ = nullptr;
  void *block_ = nullptr;
};

TEST_F(Errors, LifetimeAndDevices) {
  size_t free_bytes;
  sicm_device fake = *dev_;
  CheckRows({
      {"sicm_init_with(unknown flag)", EINVAL, [] { return sicm_init_with(1u << 30) == -1; }},
      {"sicm_fini with live arenas", EBUSY, [] { return sicm_fini() == -1; }},
      {"sicm_device_of_node(no such node)", ENODEV,
       [] { return sicm_device_of_node(100000, 0) == nullptr; }},
      {"sicm_device_get_free_bytes(NULL dev)", EINVAL,
       [&] { return sicm_device_get_free_bytes(nullptr, &free_bytes) == -1; }},
      {"sicm_device_get_free_bytes(NULL out)", EINVAL, [&] { return sicm_device_get_free_bytes(dev_, nullptr) == -1; }},
      {"sicm_device_get_free_bytes(copied device)", EINVAL,
       [&] { return sicm_device_get_free_bytes(&fake, &free_bytes) == -1; }},
      {"sicm_node_distance(unknown node)", EINVAL, [] { return sicm_node_distance(0, 100000) == -1; }},
      {"sicm_node_of_cpus(NULL)", EINVAL, [] { return sicm_node_of_cpus(nullptr, 1) == -1; }},
      {"sicm_rank(bad criterion)", EINVAL,
       [] { return sicm_rank((sicm_rank_by)99, SICM_INITIATOR_SELF, nullptr, 0, nullptr) == -1; }},
      {"sicm_rank(out NULL, max 1)", EINVAL,
       [] { return sicm_rank(SICM_RANK_BANDWIDTH, SICM_INITIATOR_SELF, nullptr, 1, nullptr) == -1; }},
  });
}

TEST_F(Errors, ArenaCreationAndHandles) {
  sicm_device fake = *dev_;
  sicm_device *twice[] = {dev_, dev_};
  sicm_device *one[] = {dev_};
  sicm_device *fakes[] = {&fake};
  unsigned weights[1];
  sicm_device *devs_out[4];
  sicm_arena_stats stats;
  size_t bytes[4];
  CheckRows({
      {"sicm_arena_create(NULL)", EINVAL, [] { return sicm_arena_create(0, nullptr) == nullptr; }},
      {"sicm_arena_create(copied device)", EINVAL,
       [&] { return sicm_arena_create(0, &fake) == nullptr; }},
      {"sicm_arena_create_devices(NULL)", EINVAL,
       [] { return sicm_arena_create_devices(0, nullptr, 1, 0) == nullptr; }},
      {"sicm_arena_create_devices(0 devices)", EINVAL,
       [&] { return sicm_arena_create_devices(0, one, 0, 0) == nullptr; }},
      {"sicm_arena_create_devices(too many)", EINVAL,
       [&] { return sicm_arena_create_devices(0, one, SICM_ARENA_DEVICES_MAX + 1, 0) == nullptr; }},
      {"sicm_arena_create_devices(a device twice)", EINVAL,
       [&] { return sicm_arena_create_devices(0, twice, 2, 0) == nullptr; }},
      {"sicm_arena_create_devices(unknown flag)", EINVAL,
       [&] { return sicm_arena_create_devices(0, one, 1, 1u << 20) == nullptr; }},
      {"sicm_arena_create_devices(PREFERRED|INTERLEAVE)", EINVAL,
       [&] {
         return sicm_arena_create_devices(0, one, 1, SICM_ARENA_PREFERRED | SICM_ARENA_INTERLEAVE) ==
                nullptr;
       }},
      {"sicm_arena_create_devices(INTERLEAVE|WEIGHTED)", EINVAL,
       [&] {
         return sicm_arena_create_devices(0, one, 1, SICM_ARENA_INTERLEAVE | SICM_ARENA_WEIGHTED) ==
                nullptr;
       }},
      {"sicm_interleave_weights(NULL devices)", EINVAL,
       [&] { return sicm_interleave_weights(nullptr, 1, weights) == -1; }},
      {"sicm_interleave_weights(0 devices)", EINVAL,
       [&] { return sicm_interleave_weights(one, 0, weights) == -1; }},
      {"sicm_interleave_weights(NULL weights)", EINVAL,
       [&] { return sicm_interleave_weights(one, 1, nullptr) == -1; }},
      {"sicm_interleave_weights(copied device)", EINVAL,
       [&] { return sicm_interleave_weights(fakes, 1, weights) == -1; }},
      {"sicm_interleave_weights_from_bandwidth(too many)", EINVAL,
       [&] { return sicm_interleave_weights_from_bandwidth(one, SICM_ARENA_DEVICES_MAX + 1, weights) == -1; }},
      {"sicm_interleave_weights_from_bandwidth(copied device)", EINVAL,
       [&] { return sicm_interleave_weights_from_bandwidth(fakes, 1, weights) == -1; }},
      {"sicm_arena_create_devices(HUGEPAGES|NOHUGEPAGES)", EINVAL,
       [&] {
         return sicm_arena_create_devices(0, one, 1,
                                          SICM_ARENA_HUGEPAGES | SICM_ARENA_NOHUGEPAGES) == nullptr;
       }},
      {"sicm_arena_destroy(NULL)", EINVAL, [] { return sicm_arena_destroy(nullptr) == -1; }},
      {"sicm_arena_destroy(destroyed)", ESTALE, [&] { return sicm_arena_destroy(gone_) == -1; }},
      {"sicm_arena_size(NULL)", EINVAL, [] { return sicm_arena_size(nullptr) == 0; }},
      {"sicm_arena_size(destroyed)", ESTALE, [&] { return sicm_arena_size(gone_) == 0; }},
      {"sicm_arena_get_devices(out NULL)", EINVAL,
       [&] { return sicm_arena_get_devices(live_, nullptr, 1) == -1; }},
      {"sicm_arena_get_devices(destroyed)", ESTALE,
       [&] { return sicm_arena_get_devices(gone_, devs_out, 4) == -1; }},
      {"sicm_arena_get_device(NULL)", EINVAL, [] { return sicm_arena_get_device(nullptr) == nullptr; }},
      {"sicm_arena_get_device(destroyed)", ESTALE, [&] { return sicm_arena_get_device(gone_) == nullptr; }},
      {"sicm_arena_set_default(garbage)", EINVAL,
       [] { return sicm_arena_set_default((sicm_arena)(uintptr_t)0x7ffff000) == -1; }},
      {"sicm_arena_set_default(destroyed)", ESTALE, [&] { return sicm_arena_set_default(gone_) == -1; }},
      {"sicm_arenas_list(out NULL)", EINVAL, [] { return sicm_arenas_list(nullptr, 4) == -1; }},
      {"sicm_arena_get_stats(out NULL)", EINVAL, [&] { return sicm_arena_get_stats(live_, nullptr) == -1; }},
      {"sicm_arena_get_stats(destroyed)", ESTALE, [&] { return sicm_arena_get_stats(gone_, &stats) == -1; }},
      {"sicm_stats_print(unknown flag)", EINVAL, [] { return sicm_stats_print(stderr, 1u << 20) == -1; }},
      {"sicm_arena_residency(bytes NULL)", EINVAL,
       [&] { return sicm_arena_residency(live_, nullptr, 0) == -1; }},
      {"sicm_arena_residency(destroyed)", ESTALE,
       [&] { return sicm_arena_residency(gone_, bytes, 4) == -1; }},
      {"sicm_node_of_ptr(unmapped)", EFAULT,
       [] { return sicm_node_of_ptr((void *)(uintptr_t)0x1000) == -1; }},
  });
}

TEST_F(Errors, AllocationAndBlocks) {
  int on_stack = 0;
  void *other = nullptr;
  CheckRows({
      {"sicm_arena_alloc(NULL)", EINVAL, [] { return sicm_arena_alloc(nullptr, 8) == nullptr; }},
      {"sicm_arena_alloc(destroyed)", ESTALE, [&] { return sicm_arena_alloc(gone_, 8) == nullptr; }},
      {"sicm_arena_alloc(size 0)", EINVAL, [&] { return sicm_arena_alloc(live_, 0) == nullptr; }},
      {"sicm_arena_alloc(past maxsize)", ENOMEM, [&] { return sicm_arena_alloc(small_, 2 << 20) == nullptr; }},
      {"sicm_arena_alloc(SIZE_MAX)", ENOMEM, [&] { return sicm_arena_alloc(live_, SIZE_MAX) == nullptr; }},
      {"sicm_arena_alloc(more than devices and swap)", ENOMEM,
       [&] { return sicm_arena_alloc(live_, (size_t)64 << 40) == nullptr; }},
      {"sicm_arena_aligned_alloc(alignment 3)", EINVAL,
       [&] { return sicm_arena_aligned_alloc(live_, 3, 8) == nullptr; }},
      {"sicm_arena_aligned_alloc(destroyed)", ESTALE,
       [&] { return sicm_arena_aligned_alloc(gone_, 64, 8) == nullptr; }},
      {"sicm_arena_calloc(overflow)", ENOMEM,
       [&] { return sicm_arena_calloc(live_, SIZE_MAX / 2, 3) == nullptr; }},
      {"sicm_arena_calloc(0 bytes)", EINVAL, [&] { return sicm_arena_calloc(live_, 0, 8) == nullptr; }},
      {"sicm_realloc(not an arena's)", EINVAL, [&] { return sicm_realloc(&on_stack, 8) == nullptr; }},
      {"sicm_realloc(inside a block)", EINVAL,
       [&] { return sicm_realloc((char *)block_ + 8, 8) == nullptr; }},
      {"sicm_realloc(size 0)", EINVAL, [&] { return sicm_realloc(block_, 0) == nullptr; }},
      {"sicm_realloc(past maxsize)", ENOMEM,
       [&] {
         void *p = sicm_arena_alloc(small_, 64);
         void *q = sicm_realloc(p, 2 << 20);
         int err = errno;
         sicm_free(p);
         errno = err;
         return p != nullptr && q == nullptr;
       }},
      {"sicm_arena_realloc(another arena's block)", EINVAL,
       [&] {
         other = sicm_arena_alloc(small_, 64);
         void *q = sicm_arena_realloc(live_, other, 128);
         int err = errno;
         sicm_free(other);
         errno = err;
         return q == nullptr;
       }},
      {"sicm_arena_realloc(destroyed)", ESTALE,
       [&] { return sicm_arena_realloc(gone_, block_, 128) == nullptr; }},
      {"sicm_free(not an arena's)", EINVAL,
       [&] {
         sicm_free(&on_stack);
         return true;
       }},
      {"sicm_free(inside a block)", EINVAL,
       [&] {
         sicm_free((char *)block_ + 8);
         return true;
       }},
      {"sicm_usable_size(NULL)", EINVAL, [] { return sicm_usable_size(nullptr) == 0; }},
      {"sicm_usable_size(inside a block)", EINVAL,
       [&] { return sicm_usable_size((char *)block_ + 8) == 0; }},
  });
  EXPECT_EQ(64u, sicm_usable_size(block_)) << "the refused calls left the block alone";
}

// Pages where small blocks lived keep their tags after the blocks go; a
// large block made over them must still refuse every address inside it,
// and none of its bytes is handed out again.
TEST_F(Errors, AnAddressInsideALargeBlockIsRefusedWhereSmallBlocksLivedBefore) {
  // A maxsize makes the allocator give the small blocks' pages back and
  // reuse them for the large ones.
  sicm_arena a = sicm_arena_create(8 << 20, dev_);
  ASSERT_NE(nullptr, a);
  std::vector<void *> small;
  while (void *p = sicm_arena_alloc(a, 48)) small.push_back(p);
  for (void *p : small) sicm_free(p);
  std::vector<char *> large;
  for (int i = 0; i < 8; i++) {
    large.push_back((char *)sicm_arena_alloc(a, 300000));
    ASSERT_NE(nullptr, large.back());
    memset(large.back(), 7, 300000);
  }
  for (char *p : large)
    for (size_t off = 4096; off < 300000; off += 48 * 16) {
      errno = 0;
      sicm_free(p + off);
      ASSERT_EQ(EINVAL, errno) << "offset " << off;
    }
  for (int i = 0; i < 20000; i++) {
    char *q = (char *)sicm_arena_alloc(a, 48);
    if (q == nullptr) break;  // the arena is full
    for (char *p : large) ASSERT_FALSE(q >= p && q < p + 300000) << "handed out twice";
  }
  for (char *p : large)
    for (size_t i = 0; i < 300000; i += 512) ASSERT_EQ(7, p[i]);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

TEST_F(Errors, Migration) {
  sicm_migration_report report;
  sicm_device *one[] = {dev_};
  CheckRows({
      {"sicm_arena_set_device(NULL device)", EINVAL,
       [&] { return sicm_arena_set_device(live_, nullptr) == -1; }},
      {"sicm_arena_set_device(destroyed)", ESTALE,
       [&] { return sicm_arena_set_device(gone_, dev_) == -1; }},
      {"sicm_arena_set_devices(huge-page flag)", EINVAL,
       [&] { return sicm_arena_set_devices(live_, one, 1, SICM_ARENA_HUGEPAGES) == -1; }},
      {"sicm_arena_set_devices_async(destroyed)", ESTALE,
       [&] { return sicm_arena_set_devices_async(gone_, one, 1, 0) == nullptr; }},
      {"sicm_arena_last_migration(never moved)", ENOENT,
       [&] { return sicm_arena_last_migration(live_, &report) == -1; }},
      {"sicm_arena_last_migration(report NULL)", EINVAL,
       [&] { return sicm_arena_last_migration(live_, nullptr) == -1; }},
      {"sicm_migrate_set_threads(0)", EINVAL, [] { return sicm_migrate_set_threads(0) == -1; }},
      {"sicm_migrate_set_threads(257)", EINVAL, [] { return sicm_migrate_set_threads(257) == -1; }},
      {"sicm_migration_poll(NULL)", EINVAL, [] { return sicm_migration_poll(nullptr) == -1; }},
      {"sicm_migration_cancel(NULL)", EINVAL, [] { return sicm_migration_cancel(nullptr) == -1; }},
      {"sicm_migration_wait(NULL)", EINVAL, [] { return sicm_migration_wait(nullptr, nullptr) == -1; }},
  });
}

// The allocator behind the arenas has about 4,000 arena indices; the one
// past the last is EAGAIN, with its reason, and the arenas stay usable.
TEST_F(Errors, ArenaPastTheAllocatorsLimitIsEagain) {
  std::vector<sicm_arena> arenas;
  sicm_arena a;
  while ((a = sicm_arena_create(0, dev_)) != nullptr) {
    arenas.push_back(a);
    ASSERT_LT(arenas.size(), 5000u) << "no limit was met";
  }
  int err = errno;
  EXPECT_EQ(EAGAIN, err) << sicm_error_detail();
  EXPECT_GT(arenas.size(), 3000u);
  void *p = sicm_arena_alloc(arenas.back(), 64);
  EXPECT_NE(nullptr, p) << sicm_error_detail();
  sicm_free(p);
  for (sicm_arena x : arenas) ASSERT_EQ(0, sicm_arena_destroy(x));
  a = sicm_arena_create(0, dev_);
  EXPECT_NE(nullptr, a) << "indices come back with destroy: " << sicm_error_detail();
  if (a != nullptr) {
    EXPECT_EQ(0, sicm_arena_destroy(a));
  }
}

}  // namespace
