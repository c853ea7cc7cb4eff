/* SPDX-License-Identifier: BSD-3-Clause */
// test_fixed_arena.cc: fixed arenas (sicm_arena_create_fixed) — blocks
// only from the caller's range, several ranges to one 16 GiB chunk of
// address space (a shared arena's too), nothing assumed zero, the range
// kept at destroy, and the errors, which change nothing.
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <numaif.h>
#include <sys/mman.h>
#include <unistd.h>

#include <vector>

#include "sicm_test.h"

namespace {

constexpr size_t kMiB = 1u << 20;

class FixedArena : public sicm_test::LocalDevice {
 protected:
  // A private anonymous mapping of `len` bytes, every byte `fill`; unmapped
  // with the fixture.
  char *Map(size_t len, unsigned char fill, int flags = MAP_PRIVATE | MAP_ANONYMOUS) {
    void *p = mmap(nullptr, len, PROT_READ | PROT_WRITE, flags, -1, 0);
    EXPECT_NE(MAP_FAILED, p);
    if (p == MAP_FAILED) return nullptr;
    memset(p, fill, len);
    maps_.push_back({(char *)p, len});
    return (char *)p;
  }
  // A fixed arena on a new mapping of len bytes filled with `fill` (*buf).
  sicm_arena Fixed(size_t len, unsigned char fill, char **buf, sicm_device *dev = nullptr) {
    *buf = Map(len, fill);
    sicm_arena a = *buf ? sicm_arena_create_fixed(*buf, len, dev) : nullptr;
    EXPECT_NE(nullptr, a) << sicm_error_detail();
    return a;
  }
  void TearDown() override {
    for (auto &m : maps_) munmap(m.first, m.second);
  }
  static bool Inside(const void *p, size_t n, const char *base, size_t len) {
    return (const char *)p >= base && (const char *)p + n <= base + len;
  }
  std::vector<std::pair<char *, size_t>> maps_;
};

TEST_F(FixedArena, BlocksComeFromTheRangeAloneUntilItIsFull) {
  const size_t len = 32 * kMiB;
  char *buf;
  sicm_arena a = Fixed(len, 0, &buf);
  ASSERT_NE(nullptr, a);
  std::vector<void *> blocks;
  size_t total = 0;
  for (size_t i = 0;; i++) {
    size_t sz = (size_t)1 << (4 + i % 17);  // 16 B to 1 MiB
    void *p = sicm_arena_alloc(a, sz);
    if (p == nullptr) {
      EXPECT_EQ(ENOMEM, errno) << sicm_error_detail();
      break;
    }
    ASSERT_TRUE(Inside(p, sz, buf, len)) << p;
    EXPECT_EQ(a, sicm_arena_lookup(p));
    memset(p, (int)i, sz);
    blocks.push_back(p);
    total += sz;
    ASSERT_LT(total, len) << "more handed out than the range holds";
  }
  EXPECT_GT(total, len / 2);
  EXPECT_LE(sicm_arena_size(a), len);
  // Freed blocks serve again; realloc stays inside.
  for (void *p : blocks) sicm_free(p);
  void *big = sicm_arena_alloc(a, len / 2);
  ASSERT_NE(nullptr, big) << sicm_error_detail();
  void *grown = sicm_realloc(big, len / 2 + kMiB);
  ASSERT_NE(nullptr, grown);
  EXPECT_TRUE(Inside(grown, len / 2 + kMiB, buf, len));
  sicm_free(grown);
  EXPECT_EQ(0, sicm_arena_destroy(a));
  // The range is the caller's again, still mapped.
  memset(buf, 1, len);
}

TEST_F(FixedArena, ManyRangesInOneChunkEachFindTheirArena) {
  // Adjacent mappings: every one in the same 16 GiB chunk of addresses but
  // for a boundary; the heap is there too.
  std::vector<char *> bufs;
  std::vector<sicm_arena> arenas;
  for (int i = 0; i < 6; i++) {
    bufs.push_back(Map(4 * kMiB, 0));
    ASSERT_NE(nullptr, bufs.back());
    arenas.push_back(sicm_arena_create_fixed(bufs.back(), 4 * kMiB, nullptr));
    ASSERT_NE(nullptr, arenas.back()) << sicm_error_detail();
  }
  std::vector<void *> blocks;
  for (int i = 0; i < 6; i++) {
    for (size_t sz : {(size_t)24, (size_t)5000, (size_t)300000}) {
      void *p = sicm_arena_alloc(arenas[i], sz);
      ASSERT_NE(nullptr, p);
      EXPECT_TRUE(Inside(p, sz, bufs[i], 4 * kMiB));
      EXPECT_EQ(arenas[i], sicm_arena_lookup(p));
      blocks.push_back(p);
    }
  }
  void *heap = malloc(64);
  EXPECT_EQ(nullptr, sicm_arena_lookup(heap));
  free(heap);
  for (void *p : blocks) sicm_free(p);
  // Destroying one leaves the others found.
  EXPECT_EQ(0, sicm_arena_destroy(arenas[2]));
  void *p = sicm_arena_alloc(arenas[3], 100);
  ASSERT_NE(nullptr, p);
  EXPECT_EQ(arenas[3], sicm_arena_lookup(p));
  sicm_free(p);
  for (int i = 0; i < 6; i++)
    if (i != 2) EXPECT_EQ(0, sicm_arena_destroy(arenas[i]));
}

// The caller's bytes are whatever it left there; a shared mapping keeps
// them even when dropped: calloc writes its zeroes.
TEST_F(FixedArena, NothingIsAssumedZero) {
  for (int flags : {MAP_PRIVATE | MAP_ANONYMOUS, MAP_SHARED | MAP_ANONYMOUS}) {
    const size_t len = 16 * kMiB;
    char *buf = Map(len, 0xab, flags);
    ASSERT_NE(nullptr, buf);
    sicm_arena a = sicm_arena_create_fixed(buf, len, nullptr);
    ASSERT_NE(nullptr, a);
    for (size_t sz : {(size_t)64, (size_t)4096, 3 * kMiB}) {
      void *dirty = sicm_arena_alloc(a, sz);
      ASSERT_NE(nullptr, dirty);
      memset(dirty, 0xcd, sz);
      sicm_free(dirty);
      auto *z = (unsigned char *)sicm_arena_calloc(a, 1, sz);
      ASSERT_NE(nullptr, z) << sicm_error_detail();
      size_t nonzero = 0;
      for (size_t i = 0; i < sz; i++) nonzero += z[i] != 0;
      EXPECT_EQ(0u, nonzero) << sz << " bytes, flags " << flags;
      sicm_free(z);
    }
    EXPECT_EQ(0, sicm_arena_destroy(a));
  }
}

TEST_F(FixedArena, BadRangesAreRefused) {
  char *buf = Map(8 * kMiB, 0);
  ASSERT_NE(nullptr, buf);
  EXPECT_EQ(nullptr, sicm_arena_create_fixed(nullptr, kMiB, nullptr));
  EXPECT_EQ(EINVAL, errno);
  EXPECT_EQ(nullptr, sicm_arena_create_fixed(buf + 1, 4096, nullptr));  // no whole page
  EXPECT_EQ(EINVAL, errno);
  EXPECT_EQ(nullptr, sicm_arena_create_fixed(buf, SIZE_MAX, nullptr));
  EXPECT_EQ(EINVAL, errno);
  sicm_arena a = sicm_arena_create_fixed(buf, 4 * kMiB, nullptr);
  ASSERT_NE(nullptr, a);
  EXPECT_EQ(nullptr, sicm_arena_create_fixed(buf + 2 * kMiB, 4 * kMiB, nullptr));
  EXPECT_EQ(EINVAL, errno) << "overlapping ranges";
  sicm_arena b = sicm_arena_create_fixed(buf + 4 * kMiB, 4 * kMiB, nullptr);
  EXPECT_NE(nullptr, b) << "the range next to it is free";
  // Memory of another arena is that arena's.
  sicm_arena other = sicm_arena_create(0, dev_);
  ASSERT_NE(nullptr, other);
  void *block = sicm_arena_alloc(other, 8 * kMiB);
  ASSERT_NE(nullptr, block);
  EXPECT_EQ(nullptr, sicm_arena_create_fixed(block, 8 * kMiB, nullptr));
  EXPECT_EQ(EINVAL, errno);
  // Without a device it does not move.
  EXPECT_EQ(-1, sicm_arena_set_device(a, dev_));
  EXPECT_EQ(EINVAL, errno);
  sicm_free(block);
  EXPECT_EQ(0, sicm_arena_destroy(other));
  EXPECT_EQ(0, sicm_arena_destroy(b));
  EXPECT_EQ(0, sicm_arena_destroy(a));
  // The range is free for a new fixed arena once its arena is gone.
  a = sicm_arena_create_fixed(buf, 8 * kMiB, nullptr);
  EXPECT_NE(nullptr, a);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

TEST_F(FixedArena, WithADeviceItIsBoundAndMoves) {
  const size_t len = 8 * kMiB;
  char *buf;
  sicm_arena a = Fixed(len, 1, &buf, dev_);
  ASSERT_NE(nullptr, a);
  EXPECT_EQ(dev_, sicm_arena_get_device(a));
  auto *p = (char *)sicm_arena_alloc(a, 2 * kMiB);
  ASSERT_NE(nullptr, p);
  memset(p, 2, 2 * kMiB);
  size_t bytes[64] = {0};
  ASSERT_EQ(0, sicm_arena_residency(a, bytes, 64));
  EXPECT_GE(bytes[dev_->node], 2 * kMiB);
  EXPECT_EQ(0, sicm_arena_set_device(a, dev_)) << sicm_error_detail();
  sicm_free(p);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

// A refused call binds nothing: the other arena's pages keep its policy.
TEST_F(FixedArena, ARefusedRangeKeepsItsOwnersPolicy) {
  sicm_arena other = sicm_arena_create_devices(0, &dev_, 1, SICM_ARENA_PREFERRED);
  ASSERT_NE(nullptr, other) << sicm_error_detail();
  auto *block = (char *)sicm_arena_alloc(other, 4 * kMiB);
  ASSERT_NE(nullptr, block);
  memset(block, 1, 4 * kMiB);
  int before = -1, after = -1;
  ASSERT_EQ(0, get_mempolicy(&before, nullptr, 0, block + kMiB, MPOL_F_ADDR));
  EXPECT_EQ(nullptr, sicm_arena_create_fixed(block, 4 * kMiB, dev_));
  EXPECT_EQ(EINVAL, errno);
  ASSERT_EQ(0, get_mempolicy(&after, nullptr, 0, block + kMiB, MPOL_F_ADDR));
  EXPECT_EQ(before, after);
  EXPECT_EQ(MPOL_PREFERRED, after);
  sicm_free(block);
  EXPECT_EQ(0, sicm_arena_destroy(other));
}

// Memory the caller cannot write, or has not mapped, holds no blocks.
TEST_F(FixedArena, UnwritableOrUnmappedRangesAreRefused) {
  const size_t page = sysconf(_SC_PAGESIZE);
  for (int prot : {PROT_READ, PROT_NONE}) {
    void *p = mmap(nullptr, 4 * page, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, p);
    maps_.push_back({(char *)p, 4 * page});
    EXPECT_EQ(nullptr, sicm_arena_create_fixed(p, 4 * page, dev_)) << "prot " << prot;
    EXPECT_EQ(EINVAL, errno);
  }
  char *buf = Map(4 * page, 0);
  ASSERT_NE(nullptr, buf);
  munmap(buf + 2 * page, 2 * page);  // the range runs past the mapping
  EXPECT_EQ(nullptr, sicm_arena_create_fixed(buf, 4 * page, nullptr));
  EXPECT_EQ(EINVAL, errno);
  sicm_arena a = sicm_arena_create_fixed(buf, 2 * page, nullptr);
  EXPECT_NE(nullptr, a) << "the mapped part";
  if (a) EXPECT_EQ(0, sicm_arena_destroy(a));
}

// A range of a few pages holds a block of any small size, though the
// allocator's run of blocks of that size would span more pages.
TEST_F(FixedArena, AFewPagesHoldABlockOfAnySmallSize) {
  const size_t page = sysconf(_SC_PAGESIZE);
  for (size_t pages = 1; pages <= 4; pages++) {
    for (size_t size : {1, 8, 100, 112, 3000, 4096}) {
      char *buf;
      sicm_arena a = Fixed(pages * page, 0, &buf);
      ASSERT_NE(nullptr, a);
      auto *p = (char *)sicm_arena_alloc(a, size);
      EXPECT_NE(nullptr, p) << pages << " pages, " << size << " B: " << sicm_error_detail();
      EXPECT_TRUE(p == nullptr || Inside(p, size, buf, pages * page));
      if (p != nullptr) EXPECT_GE(sicm_usable_size(p), size);
      sicm_free(p);
      // With a page for each run, a block grows to any small size too.
      auto *q = pages >= 2 ? (char *)sicm_arena_alloc(a, 8) : nullptr;
      if (q != nullptr && size + 1 < page) {
        q = (char *)sicm_realloc(q, size + 1);
        EXPECT_NE(nullptr, q) << pages << " pages, realloc to " << size + 1;
        EXPECT_TRUE(q == nullptr || Inside(q, size + 1, buf, pages * page));
      }
      sicm_free(q);
      EXPECT_EQ(0, sicm_arena_destroy(a));
    }
  }
}

// The part of a shared arena's 16 GiB chunk past its segment may hold a
// fixed range; each address finds its own arena, before and after the
// shared arena goes.
TEST_F(FixedArena, ASharedArenasChunkHoldsAFixedRange) {
  char name[64];
  snprintf(name, sizeof name, "/sicm-fixed-%d", (int)getpid());
  sicm_arena_unlink(name);
  sicm_arena shared = sicm_arena_create_shared(name, 4 * kMiB, dev_, 0);
  ASSERT_NE(nullptr, shared) << sicm_error_detail();
  auto *in_shared = (char *)sicm_arena_alloc(shared, 1024);
  ASSERT_NE(nullptr, in_shared);
  uintptr_t chunk = (uintptr_t)in_shared & ~(((uintptr_t)16 << 30) - 1);
  void *want = (void *)(chunk + ((uintptr_t)8 << 30));
  void *buf = mmap(want, 4 * kMiB, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  ASSERT_EQ(want, buf);
  maps_.push_back({(char *)buf, 4 * kMiB});
  sicm_arena fixed = sicm_arena_create_fixed(buf, 4 * kMiB, nullptr);
  ASSERT_NE(nullptr, fixed) << sicm_error_detail();
  void *in_fixed = sicm_arena_alloc(fixed, 1024);
  ASSERT_NE(nullptr, in_fixed);
  EXPECT_EQ(fixed, sicm_arena_lookup(in_fixed));
  EXPECT_EQ(shared, sicm_arena_lookup(in_shared));
  sicm_free(in_shared);
  EXPECT_EQ(0, sicm_arena_destroy(shared));
  sicm_arena_unlink(name);
  EXPECT_EQ(fixed, sicm_arena_lookup(in_fixed)) << "after the shared arena left";
  sicm_free(in_fixed);
  EXPECT_EQ(0, sicm_arena_destroy(fixed));
  EXPECT_EQ(nullptr, sicm_arena_lookup(in_fixed));
}

}  // namespace
