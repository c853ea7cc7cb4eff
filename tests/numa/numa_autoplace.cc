/* SPDX-License-Identifier: BSD-3-Clause */
// numa_autoplace.cc (runs in the multi-NUMA guest): the placer puts the
// hot arenas on the fast node and the cold ones elsewhere, by itself —
// checked with move_pages after every interval, phase after phase — and
// leaves pinned arenas alone, and puts idle ANYWHERE arenas on capacity
// memory.  Every node of the guest runs at one speed, so what is checked
// is the decisions, not speed-ups.
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "numa_test.h"

namespace {

using sicm_test::PagesNotOn;

constexpr int kFast = 2, kHome = 0, kCapacity = 3;
constexpr size_t kArenaBytes = 16 << 20;
constexpr unsigned kIntervalMs = 200;
// Intervals after a phase change within which the placement must be right.
// A phase starts as an interval does: the new arenas rank in by the bytes
// they referenced in that interval, which pay a third of their move, so the
// placer moves them when it ends and they are in place in the next one.
// (A phase that starts within an interval makes that one a draw, the old
// arenas having been referenced in it too: one interval more.)
constexpr unsigned kPhaseSettleIntervals = 2;
// Intervals the other tests give the placer to reach a state: room for a
// move to be refused and retried, or for a budget to shrink and recover.
constexpr unsigned kSettleIntervals = 8;

struct Arena {
  sicm_arena handle;
  char *data;
};

class Autoplace : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(0, sicm_init()) << sicm_error_detail();
    if (sicm_device_of_node(kFast, 0) == nullptr || sicm_device_of_node(kCapacity, 0) == nullptr)
      GTEST_SKIP() << "needs the 4-node guest";
  }
  void TearDown() override {
    sicm_autoplace_stop();
    for (Arena &a : arenas_) sicm_arena_destroy(a.handle);
    if (hog_ != nullptr) sicm_arena_destroy(hog_);
    EXPECT_EQ(0, sicm_fini()) << sicm_error_detail();
  }
  void MakeArenas(unsigned n, unsigned flags = 0) {
    sicm_device *home = sicm_device_of_node(kHome, 0);
    for (unsigned i = 0; i < n; i++) {
      sicm_arena a = sicm_arena_create_devices(0, &home, 1, flags);
      ASSERT_NE(nullptr, a) << sicm_error_detail();
      char *p = (char *)sicm_arena_alloc(a, kArenaBytes);
      ASSERT_NE(nullptr, p);
      memset(p, 1, kArenaBytes);
      ASSERT_EQ(0, sicm_arena_set_name(a, ("arena" + std::to_string(i)).c_str()));
      arenas_.push_back({a, p});
    }
  }
  void Start(size_t budget, size_t reserve = (size_t)64 << 20) {
    sicm_autoplace_config c;
    ASSERT_EQ(0, sicm_autoplace_config_init(&c));
    c.ndevices = 1;
    c.devices[0] = sicm_device_of_node(kFast, 0);
    c.budget = budget;
    c.reserve = reserve;
    c.interval_ms = kIntervalMs;
    c.cpu_share = 1; /* these tests count intervals: no bound on measuring */
    ASSERT_EQ(0, sicm_autoplace_start(&c)) << sicm_error_detail();
  }
  // One byte per page of each hot arena: the whole arena is referenced.
  void Touch(const std::vector<unsigned> &hot) {
    for (unsigned i : hot)
      for (size_t off = 0; off < kArenaBytes; off += 4096) arenas_[i].data[off]++;
  }
  uint64_t Intervals() {
    sicm_arena_rates r;
    EXPECT_EQ(0, sicm_arena_get_rates(arenas_[0].handle, &r));
    return r.intervals;
  }
  uint64_t Moves(unsigned i) {
    sicm_arena_rates r;
    EXPECT_EQ(0, sicm_arena_get_rates(arenas_[i].handle, &r));
    return r.moves_in + r.moves_out;
  }
  // Census: the hot arenas wholly on the fast node, no page of the others.
  bool Placed(const std::vector<unsigned> &hot, std::string *why) {
    bool ok = true;
    for (unsigned i = 0; i < arenas_.size(); i++) {
      bool is_hot = std::find(hot.begin(), hot.end(), i) != hot.end();
      std::vector<int> nodes = sicm_test::NodesOfPages(arenas_[i].data, kArenaBytes);
      size_t on_fast = std::count(nodes.begin(), nodes.end(), kFast);
      if (is_hot ? on_fast != nodes.size() : on_fast != 0) {
        ok = false;
        *why += "arena" + std::to_string(i) + (is_hot ? " (hot)" : " (cold)") + ": " +
                std::to_string(on_fast) + " of " + std::to_string(nodes.size()) +
                " pages on node 2; ";
      }
    }
    return ok;
  }
  // The report, as one line of JSON.
  std::string StatsJson() {
    char *text = nullptr;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    EXPECT_EQ(0, sicm_stats_print(f, SICM_STATS_JSON));
    fclose(f);
    std::string json(text, len);
    free(text);
    return json;
  }
  std::vector<Arena> arenas_;
  sicm_arena hog_ = nullptr;
};

// Eight arenas of 16 MiB, a budget for two, three phases each touching two
// others: after each change the hot two reach node 2 within
// kPhaseSettleIntervals and the rest are off it, and no arena moves more than
// twice in a phase (in once, out once).
TEST_F(Autoplace, TheHotArenasOfEachPhaseReachTheFastNode) {
  MakeArenas(8);
  ASSERT_NO_FATAL_FAILURE(Start(2 * kArenaBytes + (1 << 20)));
  const std::vector<std::vector<unsigned>> phases = {{0, 1}, {5, 6}, {2, 7}};
  for (size_t ph = 0; ph < phases.size(); ph++) {
    const std::vector<unsigned> &hot = phases[ph];
    std::vector<uint64_t> moves_before;
    for (unsigned i = 0; i < arenas_.size(); i++) moves_before.push_back(Moves(i));
    for (uint64_t before = Intervals(); Intervals() == before;) usleep(1000);
    uint64_t start = Intervals(), settled = 0;
    std::string why;
    while (Intervals() < start + kPhaseSettleIntervals + 4) {
      Touch(hot);
      usleep(kIntervalMs * 1000 / 8);
      why.clear();
      if (!settled && Placed(hot, &why)) settled = Intervals() - start;
    }
    why.clear();
    EXPECT_TRUE(Placed(hot, &why)) << "phase " << ph << " at its end: " << why;
    EXPECT_GT(settled, 0u) << "phase " << ph << " never placed: " << why;
    EXPECT_LE(settled, kPhaseSettleIntervals) << "phase " << ph;
    printf("phase %zu: placed after %llu intervals\n", ph, (unsigned long long)settled);
    for (unsigned i = 0; i < arenas_.size(); i++)
      EXPECT_LE(Moves(i) - moves_before[i], 2u) << "arena" << i << " in phase " << ph;
  }
  // The report: one line of JSON with the decisions.
  std::string text = StatsJson();
  EXPECT_EQ(1, std::count(text.begin(), text.end(), '\n'));
  EXPECT_NE(std::string::npos, text.find("\"why\": \"hot: referenced")) << text.substr(0, 400);
  EXPECT_NE(std::string::npos, text.find("\"name\": \"arena7\""));
}

// An arena the program moved itself is pinned: hot as it is, the placer
// leaves it where the program put it.
TEST_F(Autoplace, AnArenaTheProgramMovedStaysWhereItWasPut) {
  MakeArenas(2);
  ASSERT_NO_FATAL_FAILURE(Start(4 * kArenaBytes));
  ASSERT_EQ(0, sicm_arena_set_device(arenas_[0].handle, sicm_device_of_node(1, 0)));
  uint64_t start = Intervals();
  while (Intervals() < start + 6) {
    Touch({0, 1});
    usleep(kIntervalMs * 1000 / 8);
  }
  EXPECT_EQ(0u, PagesNotOn(arenas_[0].data, kArenaBytes, 1)) << "pinned on node 1";
  EXPECT_EQ(0u, PagesNotOn(arenas_[1].data, kArenaBytes, kFast)) << "the other one is placed";
  sicm_arena_rates r;
  ASSERT_EQ(0, sicm_arena_get_rates(arenas_[0].handle, &r));
  EXPECT_EQ(SICM_AUTOPLACE_PIN, r.mode);
}

// Arenas whose data is not in active use go to capacity memory; when one
// of them becomes hot it reaches the fast node like any other.
TEST_F(Autoplace, IdleAnywhereArenasLiveOnCapacityMemory) {
  MakeArenas(3, SICM_ARENA_ANYWHERE);
  ASSERT_NO_FATAL_FAILURE(Start(4 * kArenaBytes));
  uint64_t start = Intervals();
  while (Intervals() < start + kSettleIntervals) {
    Touch({2});
    usleep(kIntervalMs * 1000 / 8);
  }
  EXPECT_EQ(0u, PagesNotOn(arenas_[0].data, kArenaBytes, kCapacity)) << StatsJson();
  EXPECT_EQ(0u, PagesNotOn(arenas_[1].data, kArenaBytes, kCapacity)) << StatsJson();
  EXPECT_EQ(0u, PagesNotOn(arenas_[2].data, kArenaBytes, kFast)) << StatsJson();
}

// Fills node `node` but for `leave` bytes with an arena of the program
// that the placer leaves alone.  Preferred, not bound: where the kernel
// keeps more free than `leave` (its min watermark is 29 MB on the fast
// node under 6.12), the rest falls back instead of meeting the OOM killer.
void Fill(sicm_arena *hog, int node, size_t leave) {
  sicm_device *dev = sicm_device_of_node(node, 0);
  *hog = sicm_arena_create_devices(0, &dev, 1, SICM_ARENA_PREFERRED);
  ASSERT_NE(nullptr, *hog);
  ASSERT_EQ(0, sicm_arena_set_autoplace(*hog, SICM_AUTOPLACE_EXCLUDE));
  size_t free_bytes = 0;
  ASSERT_EQ(0, sicm_device_get_free_bytes(dev, &free_bytes));
  ASSERT_GT(free_bytes, leave + (64 << 20));
  char *h = (char *)sicm_arena_alloc(*hog, free_bytes - leave);
  ASSERT_NE(nullptr, h);
  memset(h, 1, free_bytes - leave);
}

// Capacity memory full: an idle ANYWHERE arena still never reaches the
// fast node, neither its pages when the placer moves it nor what it
// allocates afterwards; it is bound to the nodes off the fast tier.
TEST_F(Autoplace, AnAnywhereArenaNeverReachesTheFastNodeWhateverFillsTheOthers) {
  // 40 MiB left on capacity memory; the idle arena holds 80 MiB.
  ASSERT_NO_FATAL_FAILURE(Fill(&hog_, kCapacity, 40 << 20));
  MakeArenas(2, SICM_ARENA_ANYWHERE);
  char *bulk = (char *)sicm_arena_alloc(arenas_[0].handle, 4 * kArenaBytes);
  ASSERT_NE(nullptr, bulk);
  memset(bulk, 1, 4 * kArenaBytes);
  ASSERT_NO_FATAL_FAILURE(Start(4 * kArenaBytes));
  uint64_t start = Intervals();
  while (Intervals() < start + kSettleIntervals) {
    Touch({1});
    usleep(kIntervalMs * 1000 / 8);
  }
  auto pages = [](const char *p, size_t len) { return sicm_test::NodesOfPages(p, len).size(); };
  EXPECT_EQ(pages(arenas_[0].data, kArenaBytes), PagesNotOn(arenas_[0].data, kArenaBytes, kFast));
  EXPECT_EQ(pages(bulk, 4 * kArenaBytes), PagesNotOn(bulk, 4 * kArenaBytes, kFast));
  sicm_device *devs[SICM_ARENA_DEVICES_MAX];
  int n = sicm_arena_get_devices(arenas_[0].handle, devs, SICM_ARENA_DEVICES_MAX);
  EXPECT_GT(n, 1) << "bound to the nodes off the fast tier";
  for (int i = 0; i < n; i++) EXPECT_NE(kFast, devs[i]->node);
  char *more = (char *)sicm_arena_alloc(arenas_[0].handle, kArenaBytes);
  ASSERT_NE(nullptr, more);
  memset(more, 1, kArenaBytes);
  EXPECT_EQ(pages(more, kArenaBytes), PagesNotOn(more, kArenaBytes, kFast));
  sicm_free(more);
}

// An ANYWHERE arena written whole once, then idle, with capacity memory
// full and room on the fast node: its first writes do not promote it.
TEST_F(Autoplace, AnAnywhereArenaWrittenOnceStaysOffTheFastNode) {
  ASSERT_NO_FATAL_FAILURE(Fill(&hog_, kCapacity, 40 << 20));
  MakeArenas(1, SICM_ARENA_ANYWHERE);
  const size_t kBulk = 8 * kArenaBytes;
  char *bulk = (char *)sicm_arena_alloc(arenas_[0].handle, kBulk);
  ASSERT_NE(nullptr, bulk);
  memset(bulk, 1, kBulk);
  ASSERT_NO_FATAL_FAILURE(Start(0));
  uint64_t start = Intervals();
  while (Intervals() < start + kSettleIntervals) usleep(kIntervalMs * 1000 / 4);
  auto pages = [](const char *p, size_t len) { return sicm_test::NodesOfPages(p, len).size(); };
  EXPECT_EQ(pages(bulk, kBulk), PagesNotOn(bulk, kBulk, kFast));
  EXPECT_EQ(pages(arenas_[0].data, kArenaBytes), PagesNotOn(arenas_[0].data, kArenaBytes, kFast));
}

// A hot arena on the fast node grows while the node is full: what does
// not fit falls back elsewhere.  Once the node has room again, the placer
// completes the promotion, judging by the arena's pages, not its binding.
TEST_F(Autoplace, APromotionThatOnlyPartlyFitIsCompletedOnceThereIsRoom) {
  const size_t kMore = 4 * kArenaBytes;
  MakeArenas(1);
  ASSERT_NO_FATAL_FAILURE(Start(0, 0));
  uint64_t start = Intervals();
  while (Intervals() < start + kSettleIntervals && PagesNotOn(arenas_[0].data, kArenaBytes, kFast))
    Touch({0}), usleep(kIntervalMs * 1000 / 8);
  ASSERT_EQ(0u, PagesNotOn(arenas_[0].data, kArenaBytes, kFast)) << "never promoted";
  // 32 MiB left on the fast node, and the arena grows by 64 MiB.
  ASSERT_NO_FATAL_FAILURE(Fill(&hog_, kFast, 32 << 20));
  char *more = (char *)sicm_arena_alloc(arenas_[0].handle, kMore);
  ASSERT_NE(nullptr, more);
  memset(more, 1, kMore);
  size_t off = PagesNotOn(more, kMore, kFast);
  ASSERT_GT(off, 0u) << "all of it fit: the test proves nothing";
  ASSERT_EQ(0, sicm_arena_destroy(hog_));
  hog_ = nullptr;
  start = Intervals();
  while (Intervals() < start + kSettleIntervals && PagesNotOn(more, kMore, kFast)) {
    Touch({0});
    for (size_t at = 0; at < kMore; at += 4096) more[at]++;
    usleep(kIntervalMs * 1000 / 8);
  }
  EXPECT_EQ(0u, PagesNotOn(more, kMore, kFast)) << off << " pages were off";
  EXPECT_EQ(0u, PagesNotOn(arenas_[0].data, kArenaBytes, kFast));
  sicm_free(more);
}

// The fast node fills up behind the placer's back (another arena of the
// program, excluded from placement): the budget shrinks below what the
// placer holds there, and it gives the room back before the node is full,
// naming why.
TEST_F(Autoplace, AFillingFastNodeIsGivenBackBeforeItIsFull) {
  MakeArenas(1);
  // A reserve far above what the fill leaves: the kernel may keep more of
  // the node free than asked, and did so beyond a smaller reserve under load.
  const size_t kReserve = (size_t)256 << 20;
  ASSERT_NO_FATAL_FAILURE(Start(0, kReserve));
  uint64_t start = Intervals();
  while (Intervals() < start + kSettleIntervals && PagesNotOn(arenas_[0].data, kArenaBytes, kFast))
    Touch({0}), usleep(kIntervalMs * 1000 / 8);
  ASSERT_EQ(0u, PagesNotOn(arenas_[0].data, kArenaBytes, kFast)) << "never promoted";
  // Leave 32 MiB free on node 2, far less than the reserve.
  ASSERT_NO_FATAL_FAILURE(Fill(&hog_, kFast, 32 << 20));
  // Until every page is back: a move goes page by page, so the first page
  // off the fast node says only that the move began.
  start = Intervals();
  while (Intervals() < start + kSettleIntervals && PagesNotOn(arenas_[0].data, kArenaBytes, kHome))
    Touch({0}), usleep(kIntervalMs * 1000 / 8);
  EXPECT_EQ(0u, PagesNotOn(arenas_[0].data, kArenaBytes, kHome)) << "given back to node 0";
  std::string json = StatsJson();
  EXPECT_NE(std::string::npos, json.find("budget shrank")) << json;
}

// A hot arena three times the budget: the placer puts the part the budget
// holds on the fast node and leaves the rest home, never more on the fast
// node than the budget, whatever the interval.  Then a smaller arena as
// hot per byte, which fits whole, takes the room: the part goes home.
TEST_F(Autoplace, AHotArenaLargerThanTheBudgetIsPlacedInPart) {
  const size_t kBig = 3 * kArenaBytes, kBudget = kArenaBytes + (1 << 20);
  sicm_device *home = sicm_device_of_node(kHome, 0);
  sicm_arena big = sicm_arena_create_devices(0, &home, 1, 0);
  ASSERT_NE(nullptr, big) << sicm_error_detail();
  char *data = (char *)sicm_arena_alloc(big, kBig);
  ASSERT_NE(nullptr, data);
  memset(data, 1, kBig);
  arenas_.push_back({big, data});
  ASSERT_NO_FATAL_FAILURE(Start(kBudget));
  auto touch_big = [&] {
    for (size_t off = 0; off < kBig; off += 4096) data[off]++;
  };
  // Pages of [p, p + len) on the node (jemalloc may start a large block
  // within a page: len spans one page more).
  auto on = [&](char *p, size_t len, int node) {
    std::vector<int> nodes = sicm_test::NodesOfPages(p, len);
    return (size_t)std::count(nodes.begin(), nodes.end(), node);
  };
  auto pages = [](char *p, size_t len) {
    return ((uintptr_t)p + len + 4095) / 4096 - (uintptr_t)p / 4096;
  };
  uint64_t start = Intervals();
  size_t fast = 0, most = 0;
  while (Intervals() < start + kSettleIntervals && fast < kArenaBytes / 4096) {
    touch_big();
    usleep(kIntervalMs * 1000 / 8);
    fast = on(data, kBig, kFast);
    most = std::max(most, fast);
  }
  EXPECT_EQ(kArenaBytes / 4096, fast) << "the budget's whole 2 MiB grains, in "
                                      << Intervals() - start << " intervals";
  EXPECT_LE(most * 4096, kBudget);
  EXPECT_EQ(pages(data, kBig) - fast, on(data, kBig, kHome)) << "the rest stays home";
  sicm_arena_rates r;
  ASSERT_EQ(0, sicm_arena_get_rates(big, &r));
  EXPECT_EQ(0, r.on_fast) << "bound home still";

  MakeArenas(1);
  Arena &small = arenas_.back();
  start = Intervals();
  size_t small_fast = 0;
  const size_t small_pages = pages(small.data, kArenaBytes);
  while (Intervals() < start + kSettleIntervals && small_fast < small_pages) {
    touch_big();
    Touch({1});
    usleep(kIntervalMs * 1000 / 8);
    small_fast = on(small.data, kArenaBytes, kFast);
    most = std::max(most, small_fast + on(data, kBig, kFast));
  }
  EXPECT_EQ(small_pages, small_fast) << "the arena that fits whole";
  EXPECT_EQ(pages(data, kBig), on(data, kBig, kHome)) << "the part went home";
  EXPECT_LE(most * 4096, kBudget);
  std::string json = StatsJson();
  EXPECT_NE(std::string::npos, json.find("larger than the room")) << json;
  EXPECT_NE(std::string::npos, json.find("its part leaves")) << json;
}

}  // namespace
