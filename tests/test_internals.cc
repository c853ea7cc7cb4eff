/* SPDX-License-Identifier: BSD-3-Clause */
// test_internals.cc: white-box tests of what the public API only shows
// indirectly — jemalloc's size classes as libsicm reads them, an arena's
// shards, the shared heap's size classes, and the configuration-file parser.  Linked with the
// convenience library, not libsicm.so.
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "sicm_test.h"

extern "C" {
#include "arena_je.h"
#include "migrate.h"
#include "shared.h"
}

using sicm_test::ScopedEnv;
using sicm_test::SourcePath;
using sicm_test::TempFile;

namespace {

// Every size goes to the class jemalloc itself rounds it up to: binned
// ones through the lookup table, larger ones through the four-per-doubling
// rule that page tags rely on.
TEST(SizeClasses, MatchWhatJemallocServes) {
  ASSERT_EQ(0, sc_je_classes_init()) << sicm_error_detail();
  const sc_je_classes &c = sc_je_size_classes;
  ASSERT_GT(c.nbins, 0u);
  ASSERT_LE(c.nbins, c.nclasses);
  EXPECT_EQ(c.size[c.nbins - 1], c.max);
  EXPECT_LE(c.max, (size_t)SC_BIN_LOOKUP_MAX);
  if (c.nbins < c.nclasses) {
    EXPECT_GT(c.size[c.nbins], (size_t)SC_BIN_LOOKUP_MAX);
  }
  for (size_t size = 1; size <= c.max; size++) {
    unsigned bin = sc_size_class(size);
    ASSERT_LT(bin, c.nbins) << size;
    ASSERT_EQ(je_nallocx(size, 0), c.size[bin]) << size;
    ASSERT_EQ(bin, sc_class_of(size)) << size;
  }
  EXPECT_GE(c.tagged_max, (size_t)1 << 30) << "large classes must be tagged well past 1 GiB";
  for (unsigned i = c.nbins; i < c.nclasses && c.size[i] <= c.tagged_max; i++) {
    for (size_t size : {c.size[i - 1] + 1, (c.size[i - 1] + c.size[i]) / 2, c.size[i]}) {
      ASSERT_EQ(i, sc_class_of(size)) << size;
      ASSERT_EQ(je_nallocx(size, 0), c.size[i]) << size;
    }
  }
  EXPECT_EQ((unsigned)SC_CLASSES_MAX, sc_class_of(c.tagged_max + 1));
}

// Threads that use an arena at the same time get jemalloc arenas of their
// own, up to one per CPU; a small maxsize keeps one (each costs 2 MiB).
TEST(Shards, ConcurrentThreadsGetTheirOwnUpToOnePerCpu) {
  sicm_test::Initialized init;
  ASSERT_TRUE(init.ok());
  sicm_device *dev = sicm_device_of_node(sicm_node_self(), 0);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  unsigned expect = cpus > SC_SHARDS_MAX ? SC_SHARDS_MAX : (unsigned)cpus;
  for (size_t maxsize : {(size_t)0, (size_t)16 << 20}) {
    sicm_arena sa = sicm_arena_create(maxsize, dev);
    ASSERT_NE(nullptr, sa);
    const unsigned nthreads = expect + 1;
    std::atomic<unsigned> ready{0};
    std::vector<std::thread> threads;
    std::vector<void *> blocks(nthreads);
    for (unsigned t = 0; t < nthreads; t++)
      threads.emplace_back([&, t] {
        ready++;
        while (ready < nthreads) std::this_thread::yield();
        blocks[t] = sicm_arena_alloc(sa, 1 << 20);
        ready++;
        while (ready < 2 * nthreads) std::this_thread::yield(); // none exits early
      });
    for (auto &th : threads) th.join();
    uint64_t generation;
    sc_arena *a = sc_arena_of_ptr(blocks[0], &generation);
    ASSERT_NE(nullptr, a);
    EXPECT_EQ(maxsize ? 1u : expect, sc_je_of(a)->nshards) << "maxsize " << maxsize;
    sicm_arena_stats st;
    ASSERT_EQ(0, sicm_arena_get_stats(sa, &st));
    EXPECT_GE(st.allocated, nthreads * (size_t)(1 << 20)) << "statistics miss a shard";
    for (void *p : blocks) {
      EXPECT_EQ(sa, sicm_arena_lookup(p));
      sicm_free(p);
    }
    EXPECT_EQ(0, sicm_arena_destroy(sa));
  }
}

TEST(SharedClasses, SmallSizesHaveOneClassPer16Bytes) {
  for (uint64_t size = 0; size < SC_SHM_SMALL_LIMIT; size += SC_SHM_ALIGN) {
    unsigned fl, sl;
    sc_shm_class_of(size, &fl, &sl);
    EXPECT_EQ(0u, fl) << size;
    EXPECT_EQ(size / SC_SHM_ALIGN, sl) << size;
  }
}

TEST(SharedClasses, LargeSizesStepAtEachThirtySecondOfAPowerOfTwo) {
  unsigned prev_fl = 0, prev_sl = SC_SHM_SL_COUNT - 1;
  for (unsigned lg = 9; lg < 40; lg++) {
    for (uint64_t j = 0; j < SC_SHM_SL_COUNT; j++) {
      uint64_t start = (1ull << lg) + j * (1ull << (lg - SC_SHM_SL_LOG));
      unsigned fl, sl, fl_end, sl_end;
      sc_shm_class_of(start, &fl, &sl);
      sc_shm_class_of(start + (1ull << (lg - SC_SHM_SL_LOG)) - 1, &fl_end, &sl_end);
      ASSERT_EQ(lg - 8, fl) << start;
      ASSERT_EQ(j, sl) << start;
      ASSERT_EQ(fl, fl_end) << start << ": one class to its end";
      ASSERT_EQ(sl, sl_end) << start;
      ASSERT_TRUE(fl > prev_fl || (fl == prev_fl && sl == prev_sl + 1)) << start;
      ASSERT_LT(fl, SC_SHM_FL_COUNT);
      prev_fl = fl;
      prev_sl = sl;
    }
  }
}

// The 4-node topology the guest boots, as lstopo recorded it.
class ConfParser : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(0, sc_topo_discover(&topo_, 0)) << sicm_error_detail();
    ASSERT_EQ(4u, topo_.nnodes);
  }
  void TearDown() override {
    sc_conf_release(&conf_);
    sc_topo_release(&topo_);
  }
  ScopedEnv xml_{"HWLOC_XMLFILE", SourcePath("tests/data/hmat4.xml").c_str()};
  sc_topo topo_ = {};
  sc_conf conf_ = {};
};

TEST_F(ConfParser, KeysLandInTheirFields) {
  TempFile file(
      "# capacity memory on node 3\n"
      "   node 3   kind=capacity  read_bandwidth=100 write_bandwidth=50\t latency=900  \n"
      "\n"
      "node 2 bandwidth=7 read_latency=11 write_latency=13 kind=hbm\n");
  ASSERT_EQ(0, sc_conf_parse(file.path(), &topo_, &conf_)) << sicm_error_detail();
  ASSERT_EQ(2u, conf_.count);
  const sc_conf_node &n3 = conf_.nodes[0], &n2 = conf_.nodes[1];
  EXPECT_EQ(3, n3.node);
  EXPECT_EQ(SICM_KIND_CAPACITY, n3.kind);
  EXPECT_EQ(100u, n3.perf.read_bandwidth);
  EXPECT_EQ(50u, n3.perf.write_bandwidth);
  EXPECT_EQ(900u, n3.perf.read_latency);
  EXPECT_EQ(900u, n3.perf.write_latency);
  EXPECT_EQ(SICM_SOURCE_CONFIG, n3.perf.source);
  EXPECT_EQ(2, n2.node);
  EXPECT_EQ(SICM_KIND_HBM, n2.kind);
  EXPECT_EQ(7u, n2.perf.read_bandwidth);
  EXPECT_EQ(7u, n2.perf.write_bandwidth);
  EXPECT_EQ(11u, n2.perf.read_latency);
  EXPECT_EQ(13u, n2.perf.write_latency);
}

TEST_F(ConfParser, KindAloneSetsNoPerformance) {
  TempFile file("node 1 kind=dram\n");
  ASSERT_EQ(0, sc_conf_parse(file.path(), &topo_, &conf_)) << sicm_error_detail();
  ASSERT_EQ(1u, conf_.count);
  EXPECT_EQ(SICM_KIND_DRAM, conf_.nodes[0].kind);
  EXPECT_EQ(0u, conf_.nodes[0].perf.read_bandwidth);
  EXPECT_NE(SICM_SOURCE_CONFIG, conf_.nodes[0].perf.source);
}

TEST_F(ConfParser, ApplyReplacesTheNearestInitiatorsValuesAndClearsTheOthers) {
  TempFile file("node 3 read_bandwidth=100\n");
  ASSERT_EQ(0, sc_conf_parse(file.path(), &topo_, &conf_)) << sicm_error_detail();
  int target = sc_topo_index(&topo_, 3);
  int nearest = sc_topo_nearest_initiator(&topo_, (unsigned)target);
  ASSERT_GE(nearest, 0);
  uint64_t latency_before = sc_topo_perf(&topo_, (unsigned)nearest, (unsigned)target)->read_latency;
  sc_conf_apply(&conf_, &topo_);
  for (unsigned i = 0; i < topo_.nnodes; i++) {
    const sc_perf_cell *cell = sc_topo_perf(&topo_, i, (unsigned)target);
    if ((int)i == nearest) {
      EXPECT_EQ(100u, cell->read_bandwidth);
      EXPECT_EQ(SICM_SOURCE_CONFIG, cell->source);
      EXPECT_EQ(latency_before, cell->read_latency) << "keys not in the file stay";
    } else {
      EXPECT_EQ(0u, cell->read_bandwidth) << "initiator " << i << " gets an estimate, not a copy";
    }
  }
}

TEST_F(ConfParser, FailureReleasesWhatWasParsed) {
  TempFile file("node 0 kind=dram\nnode 0 kind=hbm\n");
  errno = 0;
  EXPECT_EQ(-1, sc_conf_parse(file.path(), &topo_, &conf_));
  EXPECT_EQ(EINVAL, errno);
  EXPECT_NE(std::string::npos, std::string(sicm_error_detail()).find(":2: node 0 is configured twice"))
      << sicm_error_detail();
  EXPECT_EQ(0u, conf_.count);
  EXPECT_EQ(nullptr, conf_.nodes);
}

}  // namespace

// Linux memory tiers (as under /sys/devices/virtual/memory_tiering): a
// memory-only node in a slower tier than its initiator's DRAM is capacity
// memory, in a faster one HBM; the same tier says nothing.
TEST(MemoryTiers, TierAgainstTheInitiatorsDecidesTheKind) {
  char dir[] = "/tmp/sicm-tiers-XXXXXX";
  ASSERT_NE(nullptr, mkdtemp(dir));
  auto tier = [&](const char *name, const char *nodes) {
    std::string d = std::string(dir) + "/" + name;
    mkdir(d.c_str(), 0755);
    FILE *f = fopen((d + "/nodelist").c_str(), "w");
    fputs(nodes, f);
    fclose(f);
  };
  tier("memory_tier1", "3\n");
  tier("memory_tier4", "0-1\n");
  tier("memory_tier22", "2,4\n");
  sc_node nodes[5] = {};
  unsigned distance[25], n = 5;
  sc_perf_cell perf[25] = {};
  for (unsigned i = 0; i < n; i++) {
    nodes[i].id = (int)i;
    nodes[i].has_cpus = i < 2;
    nodes[i].memory_tier = -1;
    for (unsigned j = 0; j < n; j++) distance[i * n + j] = i == j ? 10 : 20;
  }
  sc_topo topo = {n, nodes, distance, perf, 1, SICM_TOPOLOGY_DISCOVERED};
  EXPECT_EQ(3u, sc_memory_tiers_read(dir, &topo));
  EXPECT_EQ(4, nodes[0].memory_tier);
  EXPECT_EQ(22, nodes[4].memory_tier);
  sicm_source source;
  EXPECT_EQ(SICM_KIND_CAPACITY, sc_classify(&topo, 2, &source));
  EXPECT_EQ(SICM_SOURCE_MEMORY_TIER, source);
  EXPECT_EQ(SICM_KIND_HBM, sc_classify(&topo, 3, &source));
  EXPECT_EQ(SICM_SOURCE_MEMORY_TIER, source);
  nodes[4].memory_tier = 4;  // the initiator's tier: no information
  EXPECT_EQ(SICM_KIND_UNKNOWN, sc_classify(&topo, 4, &source));
  strcpy(nodes[4].subtype, "CXL-DRAM");  // hwloc's subtype comes first
  EXPECT_EQ(SICM_KIND_CAPACITY, sc_classify(&topo, 4, &source));
  EXPECT_EQ(SICM_SOURCE_SUBTYPE, source);
  EXPECT_EQ(0u, sc_memory_tiers_read("/nonexistent/memory_tiering", &topo));
  std::string rm = std::string("rm -rf ") + dir;
  EXPECT_EQ(0, system(rm.c_str()));
}

// Every environment variable libsicm reads is read strictly: a value that
// is not entirely valid gets one line naming the variable, the value and
// what is accepted, and the variable counts as unset.
TEST(Environment, GarbageIsRefusedWithOneLineAndTheDefaultApplies) {
  struct Case {
    const char *name, *value, *accepted;
  };
  const std::string long_path(5000, 'd');
  const Case cases[] = {
      {"SICM_MIGRATE_THREADS", "4x", "1 to 256"},   {"SICM_MIGRATE_THREADS", "1e3", "1 to 256"},
      {"SICM_MIGRATE_THREADS", "0", "1 to 256"},    {"SICM_MIGRATE_THREADS", "257", "1 to 256"},
      {"SICM_MIGRATE_THREADS", "-1", "1 to 256"},   {"SICM_MIGRATE_THREADS", " 4", "1 to 256"},
      {"SICM_MIGRATE_THREADS", "0x10", "1 to 256"},
      {"SICM_MIGRATE_THREADS", "99999999999999999999", "1 to 256"},
      {"SICM_MIGRATE_HUGE", "Heads", "heads, subpages or mbind"},
      {"SICM_MIGRATE_HUGE", "mbind ", "heads, subpages or mbind"},
      {"SICM_SHARE_TOPOLOGY", "yes", "on, 1, off or 0"},
      {"SICM_SHARE_TOPOLOGY", "1 ", "on, 1, off or 0"},
      {"SICM_TOPOLOGY_DIR", long_path.c_str(), "a path shorter than"},
      {"SICM_STATS", long_path.c_str(), "a path shorter than"},
      {"SICM_DEVICES_CONF", long_path.c_str(), "a path shorter than"},
  };
  for (const Case &c : cases) {
    // The topology's directory is read only when sharing is on.
    const bool share = strcmp(c.name, "SICM_TOPOLOGY_DIR") == 0;
    sicm_test::ChildRun run = sicm_test::RunInChild([&] {
      setenv(c.name, c.value, 1);
      if (sicm_init_with(share ? SICM_INIT_SHARE_TOPOLOGY : 0) != 0) return 10;
      const sc_migrate_options m = sc_migrate_options_get();
      int unset = m.threads == 0 && m.huge == SC_MOVE_HEADS &&
                  sc_state_get()->options.share_topology == share;
      return unset ? 0 : 11;
    });
    std::string shown = std::string(c.value).substr(0, 60);
    EXPECT_EQ(0, run.status) << c.name << "=" << shown << " (11: not the default)\n" << run.err;
    EXPECT_EQ(1, sicm_test::Occurrences(run.err, "\n")) << c.name << "=" << shown << "\n" << run.err;
    EXPECT_NE(std::string::npos, run.err.find(std::string("libsicm: ") + c.name + "=\"" + shown))
        << run.err;
    EXPECT_NE(std::string::npos, run.err.find(c.accepted)) << run.err;
  }
  // Valid values are taken, without a word.
  sicm_test::ChildRun run = sicm_test::RunInChild([] {
    setenv("SICM_MIGRATE_THREADS", "4", 1);
    setenv("SICM_MIGRATE_HUGE", "subpages", 1);
    if (sicm_init() != 0) return 10;
    const sc_migrate_options m = sc_migrate_options_get();
    return m.threads == 4 && m.huge == SC_MOVE_SUBPAGES ? 0 : 11;
  });
  EXPECT_EQ(0, run.status);
  EXPECT_EQ("", run.err);
}
