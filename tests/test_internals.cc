// test_internals.cc: white-box tests of what the public API only shows
// indirectly — jemalloc's size classes as libsicm reads them, the shared
// heap's size classes, and the configuration-file parser.  Linked with the
// convenience library, not libsicm.so.
#include <errno.h>

#include <string>

#include "sicm_test.h"

extern "C" {
#include "arena_je.h"
#include "shared.h"
}

using sicm_test::ScopedEnv;
using sicm_test::SourcePath;
using sicm_test::TempFile;

namespace {

size_t BinSize(unsigned bin) {
  size_t size = 0, len = sizeof size;
  std::string cmd = "arenas.bin." + std::to_string(bin) + ".size";
  EXPECT_EQ(0, je_mallctl(cmd.c_str(), &size, &len, nullptr, 0)) << cmd;
  return size;
}

TEST(SizeClasses, MatchWhatJemallocReportsAndServes) {
  ASSERT_EQ(0, sc_je_classes_init()) << sicm_error_detail();
  const sc_je_classes &c = sc_je_size_classes;
  unsigned nbins = 0;
  size_t len = sizeof nbins;
  ASSERT_EQ(0, je_mallctl("arenas.nbins", &nbins, &len, nullptr, 0));
  ASSERT_GT(c.nbins, 0u);
  ASSERT_LE(c.nbins, nbins);
  EXPECT_EQ(BinSize(c.nbins - 1), c.max);
  if (c.nbins < nbins) EXPECT_GT(BinSize(c.nbins), (size_t)SC_BIN_LOOKUP_MAX);
  // Every size goes to the smallest class that holds it, the one jemalloc
  // itself rounds it up to.
  for (size_t size = 1; size <= c.max; size++) {
    unsigned bin = sc_size_class(size);
    ASSERT_LT(bin, c.nbins) << size;
    ASSERT_GE(BinSize(bin), size) << size;
    if (bin > 0) ASSERT_LT(BinSize(bin - 1), size) << size;
    ASSERT_EQ(je_nallocx(size, 0), BinSize(bin)) << size;
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
    ASSERT_EQ(0, sc_topo_discover(&topo_)) << sicm_error_detail();
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
