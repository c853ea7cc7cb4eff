/* SPDX-License-Identifier: BSD-3-Clause */
// test_monitor.cc: the placer's monitor (autoplace_monitor.c) driven by
// hand on one node: its sample tells hot from cold, whole arenas are
// cleared together and only with their neighbours that take part, pages
// new since a clear read as referenced (an arena empty at its clear, or
// grown since), and smaps is read only up to the arenas.  Linked with the convenience library to reach the monitor.
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include <memory>
#include <vector>

#include "sicm_test.h"

extern "C" {
#include "autoplace.h"
}

namespace {

class Monitor : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(0, sicm_init()) << sicm_error_detail(); }
  void TearDown() override {
    for (sicm_arena a : arenas_) sicm_arena_destroy(a);
    EXPECT_EQ(0, sicm_fini()) << sicm_error_detail();
  }
  sicm_arena Make() {
    sicm_device *dev = sicm_device_of_node(0, 0);
    sicm_arena a = sicm_arena_create_devices(0, &dev, 1, 0);
    EXPECT_NE(nullptr, a) << sicm_error_detail();
    arenas_.push_back(a);
    return a;
  }
  std::vector<sicm_arena> arenas_;
};

// The monitor itself, its sample fixed at one chunk in eight (the placer
// picks the stride by cost, which arenas this small never pay for): the
// estimate still tells hot, half-hot and cold apart.  The half-hot arena's
// first half is touched.
int EveryArenaTakesPart(const sc_arena *) { return 1; }

TEST_F(Monitor, ASampleTellsHotFromHalfFromCold) {
  const size_t size = 48 << 20;
  sicm_arena hot = Make(), half = Make(), cold = Make();
  char *h = (char *)sicm_arena_alloc(hot, size), *f = (char *)sicm_arena_alloc(half, size),
       *c = (char *)sicm_arena_alloc(cold, size);
  ASSERT_TRUE(h && f && c);
  memset(h, 1, size);
  memset(f, 1, size);
  memset(c, 1, size);
  std::unique_ptr<sc_monitor> m(new sc_monitor);
  std::unique_ptr<sc_monitor_bytes> bytes(new sc_monitor_bytes);
  if (sc_monitor_check(m.get(), 100) != 0) {
    ASSERT_EQ(ENOTSUP, errno) << sicm_error_detail();
    GTEST_SKIP() << "the monitor cannot run here: " << sicm_error_detail();
  }
  if (!m->restores) GTEST_SKIP() << "this kernel does not let a sample be restored";
  m->every_fixed = 8;
  double share[3] = {0, 0, 0};
  const sicm_arena arenas[3] = {hot, half, cold};
  for (int interval = 0; interval < 12; interval++) {
    for (size_t off = 0; off < size; off += 4096) h[off]++;
    for (size_t off = 0; off < size / 2; off += 4096) f[off]++;
    ASSERT_EQ(0, sc_monitor_sample(m.get(), EveryArenaTakesPart, bytes.get()));
    EXPECT_EQ(8u, m->every);
    if (interval == 0) continue; /* the first reading follows no sample */
    for (int i = 0; i < 3; i++) {
      unsigned slot = sc_arena_resolve(arenas[i])->slot;
      share[i] += (double)bytes->referenced[slot] / (double)bytes->resident[slot] / 11;
    }
  }
  EXPECT_GT(share[0], 0.95) << "touched all over, every interval";
  EXPECT_GT(share[1], 0.4) << "half touched";
  EXPECT_LT(share[1], 0.6) << "half touched";
  EXPECT_LT(share[2], 0.05) << "never touched after the start";
}

// Arenas' windows lie side by side low in the address space, so a clear
// of whole arenas takes one call for each run of neighbours that take
// part, and never reaches an arena between them that does not.
sc_arena *excluded_arena;
int AllButOneTakePart(const sc_arena *a) { return a != excluded_arena; }

TEST_F(Monitor, WholeClearsJoinNeighboursAndSkipArenasThatTakeNoPart) {
  const size_t size = 1 << 20;
  sicm_arena arenas[4];
  char *p[4];
  for (int i = 0; i < 4; i++) {
    arenas[i] = Make();
    p[i] = (char *)sicm_arena_alloc(arenas[i], size);
    ASSERT_NE(nullptr, p[i]) << sicm_error_detail();
  }
  for (int i = 1; i < 4; i++) {
    sc_arena *a = sc_arena_resolve(arenas[i - 1]), *b = sc_arena_resolve(arenas[i]);
    if ((char *)a->windows[0].base + a->windows[0].size != b->windows[0].base)
      GTEST_SKIP() << "the windows do not lie side by side here";
  }
  std::unique_ptr<sc_monitor> m(new sc_monitor);
  std::unique_ptr<sc_monitor_bytes> bytes(new sc_monitor_bytes);
  if (sc_monitor_check(m.get(), 1000) != 0) {
    ASSERT_EQ(ENOTSUP, errno) << sicm_error_detail();
    GTEST_SKIP() << "the monitor cannot run here: " << sicm_error_detail();
  }
  if (m->refused) GTEST_SKIP() << "MADV_COLD is refused: the whole process is cleared";
  excluded_arena = sc_arena_resolve(arenas[1]); /* A | X | B C */
  for (int i = 0; i < 4; i++) memset(p[i], 1, size);
  ASSERT_EQ(0, sc_monitor_sample(m.get(), AllButOneTakePart, bytes.get()));
  EXPECT_EQ(2u, m->runs) << "A alone, then B and C in one call";
  ASSERT_EQ(0, sc_monitor_sample(m.get(), AllButOneTakePart, bytes.get()));
  for (int i = 0; i < 4; i++) {
    unsigned slot = sc_arena_resolve(arenas[i])->slot;
    EXPECT_GE(bytes->resident[slot], size) << i;
    if (i == 1)
      EXPECT_EQ(bytes->resident[slot], bytes->referenced[slot]) << "X was cleared";
    else
      EXPECT_EQ(0u, bytes->referenced[slot]) << i << " untouched since its clear";
  }
}

// An arena with nothing resident when it was cleared, touched after:
// all of it reads referenced, interval after interval (a cleared set
// that was never touched is kept, so a wrong zero would stick).
TEST_F(Monitor, AnArenaEmptyAtItsClearReadsHotOnceTouched) {
  const size_t size = 4 << 20;
  sicm_arena a = Make();
  char *p = (char *)sicm_arena_alloc(a, size);
  ASSERT_NE(nullptr, p);
  std::unique_ptr<sc_monitor> m(new sc_monitor);
  std::unique_ptr<sc_monitor_bytes> bytes(new sc_monitor_bytes);
  if (sc_monitor_check(m.get(), 1000) != 0) GTEST_SKIP() << sicm_error_detail();
  unsigned slot = sc_arena_resolve(a)->slot;
  ASSERT_EQ(0, sc_monitor_sample(m.get(), EveryArenaTakesPart, bytes.get()));
  ASSERT_LT(bytes->resident[slot], (uint64_t)size / 4) << "untouched yet";
  for (int interval = 0; interval < 4; interval++) {
    memset(p, interval + 1, size);
    ASSERT_EQ(0, sc_monitor_sample(m.get(), EveryArenaTakesPart, bytes.get()));
    EXPECT_GE(bytes->referenced[slot], (uint64_t)size) << "interval " << interval;
  }
}

// An arena that grows after its clear and touches only its new pages:
// they all read referenced, interval after interval, though the pages it
// had at the clear stay untouched.
TEST_F(Monitor, AnArenaThatGrewReadsItsNewPagesHot) {
  const size_t old_size = 1 << 20, new_size = 32 << 20;
  sicm_arena a = Make();
  char *old_part = (char *)sicm_arena_alloc(a, old_size);
  ASSERT_NE(nullptr, old_part);
  memset(old_part, 1, old_size);
  std::unique_ptr<sc_monitor> m(new sc_monitor);
  std::unique_ptr<sc_monitor_bytes> bytes(new sc_monitor_bytes);
  if (sc_monitor_check(m.get(), 1000) != 0) GTEST_SKIP() << sicm_error_detail();
  unsigned slot = sc_arena_resolve(a)->slot;
  ASSERT_EQ(0, sc_monitor_sample(m.get(), EveryArenaTakesPart, bytes.get()));
  char *new_part = (char *)sicm_arena_alloc(a, new_size);
  ASSERT_NE(nullptr, new_part);
  for (int interval = 0; interval < 4; interval++) {
    memset(new_part, interval + 1, new_size);
    ASSERT_EQ(0, sc_monitor_sample(m.get(), EveryArenaTakesPart, bytes.get()));
    EXPECT_GE(bytes->referenced[slot], (uint64_t)new_size) << "interval " << interval;
  }
}

// The monitor reads /proc/self/smaps only up to the arenas' last window:
// mappings the program makes elsewhere cost it nothing.
TEST_F(Monitor, TheMonitorReadsNoMappingPastTheArenas) {
  sicm_arena a = Make();
  ASSERT_NE(nullptr, sicm_arena_alloc(a, 4096));
  std::unique_ptr<sc_monitor> m(new sc_monitor);
  std::unique_ptr<sc_monitor_bytes> bytes(new sc_monitor_bytes);
  if (sc_monitor_check(m.get(), 1000) != 0) GTEST_SKIP() << sicm_error_detail();
  const size_t page = 4096;
  const int kMappings = 64;
  /* Read-only pages one apart: mappings that never merge. */
  char *map = (char *)mmap(nullptr, 2 * kMappings * page, PROT_NONE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(MAP_FAILED, map);
  sc_arena *arena = sc_arena_resolve(a);
  if ((uintptr_t)map < (uintptr_t)arena->windows[0].base)
    GTEST_SKIP() << "the arena's window is not low in the address space here";
  ASSERT_EQ(0, sc_monitor_sample(m.get(), EveryArenaTakesPart, bytes.get()));
  unsigned before = m->mappings;
  for (int i = 0; i < kMappings; i++)
    ASSERT_EQ(0, mprotect(map + 2 * i * page, page, PROT_READ));
  ASSERT_EQ(0, sc_monitor_sample(m.get(), EveryArenaTakesPart, bytes.get()));
  EXPECT_LT(m->mappings, before + 4) << "read " << m->mappings << " mappings, " << before
                                     << " before " << kMappings << " more were made";
  munmap(map, 2 * kMappings * page);
}

}  // namespace
