/* SPDX-License-Identifier: BSD-3-Clause */
// test_conf.cc: the administrator configuration file — valid files, errors
// that name file and line, overrides applied — and ranking on attributes it
// injects, on this machine and on a recorded 4-node HMAT topology.
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "sicm_test.h"

using sicm_test::ScopedEnv;
using sicm_test::SourcePath;
using sicm_test::TempFile;

namespace {

// sicm_init() with this configuration text must fail with err, and the
// detail must name the file and the line.
void ExpectConfRejected(const std::string &text, unsigned line, int err, const char *words) {
  TempFile conf(text);
  ScopedEnv env("SICM_DEVICES_CONF", conf.path());
  errno = 0;
  ASSERT_EQ(-1, sicm_init()) << text;
  EXPECT_EQ(err, errno);
  std::string detail = sicm_error_detail();
  EXPECT_NE(std::string::npos, detail.find(std::string(conf.path()) + ":" + std::to_string(line) + ":"))
      << detail;
  EXPECT_NE(std::string::npos, detail.find(words)) << detail;
  EXPECT_EQ(nullptr, sicm_devices()) << "a failed init leaves the library uninitialized";
}

TEST(Conf, MalformedFilesNameFileAndLine) {
  ExpectConfRejected("# comment\n\nnode 0 bandwith=10\n", 3, EINVAL, "unknown key 'bandwith'");
  ExpectConfRejected("node 0 kind=fast\n", 1, EINVAL, "kind must be");
  ExpectConfRejected("node 0 latency=-4\n", 1, EINVAL, "positive integer");
  ExpectConfRejected("node 0 latency=12ns\n", 1, EINVAL, "positive integer");
  ExpectConfRejected("node 0 latency\n", 1, EINVAL, "expected key=value");
  ExpectConfRejected("node 0\n", 1, EINVAL, "no settings");
  ExpectConfRejected("node\n", 1, EINVAL, "needs a node number");
  ExpectConfRejected("device 0 kind=hbm\n", 1, EINVAL, "expected 'node");
  ExpectConfRejected("node 0 kind=hbm\nnode 0 latency=5\n", 2, EINVAL, "configured twice");
  ExpectConfRejected(std::string("node 0 kind=hbm ") + std::string(2000, 'x') + "\n", 1, EINVAL,
                     "line longer");
}

// Reads are bounded: a device that never ends or a FIFO nobody writes
// (refused by type, never read or waited on: the child's alarm would end
// a wait), a NUL byte inside a line (which would hide the rest of it), a
// file past 1 MiB or 65,536 lines.
TEST(Conf, EndlessFilesAndNulBytesAreRejectedPromptly) {
  std::string fifo = "/tmp/sicm-conf-fifo-" + std::to_string(getpid());
  unlink(fifo.c_str());
  ASSERT_EQ(0, mkfifo(fifo.c_str(), 0600));
  for (const std::string &path : {std::string("/dev/zero"), fifo}) {
    sicm_test::ChildRun run = sicm_test::RunInChild([&] {
      setenv("SICM_DEVICES_CONF", path.c_str(), 1);
      return sicm_init() == -1 && errno == EINVAL &&
                     strstr(sicm_error_detail(), "not a regular file") != nullptr
                 ? 0
                 : 1;
    });
    EXPECT_EQ(0, run.status) << path << ": " << run.err;
  }
  unlink(fifo.c_str());
  // /dev/null is the conventional "no configuration": read as empty.
  sicm_test::ChildRun null_conf = sicm_test::RunInChild([&] {
    setenv("SICM_DEVICES_CONF", "/dev/null", 1);
    return sicm_init() == 0 && sicm_devices()->count > 0 ? 0 : 1;
  });
  EXPECT_EQ(0, null_conf.status) << "/dev/null: " << null_conf.err;
  ExpectConfRejected(std::string("node 0 kind=hbm\nnode 1 kind=dram\0 latency=oops\n", 47), 2,
                     EINVAL, "NUL byte");
  std::string many;
  for (int i = 0; i < 70000; i++) many += "#\n";
  ExpectConfRejected(many, 65537, EINVAL, "more than 65536 lines");
  TempFile big(std::string((2 << 20), '#'));
  ScopedEnv env("SICM_DEVICES_CONF", big.path());
  errno = 0;
  EXPECT_EQ(-1, sicm_init());
  EXPECT_EQ(EFBIG, errno);
  EXPECT_NE(std::string::npos, std::string(sicm_error_detail()).find("longer than 1048576 bytes"));
}

TEST(Conf, UnknownNodeIsRejected) {
  ExpectConfRejected("node 0 kind=dram\nnode 4095 kind=hbm\n", 2, EINVAL,
                     "node 4095 does not exist");
}

TEST(Conf, MissingFileIsEnoent) {
  ScopedEnv env("SICM_DEVICES_CONF", "/nonexistent/sicm.conf");
  errno = 0;
  EXPECT_EQ(-1, sicm_init());
  EXPECT_EQ(ENOENT, errno);
  EXPECT_NE(std::string::npos, std::string(sicm_error_detail()).find("/nonexistent/sicm.conf"));
}

TEST(Conf, OverrideIsApplied) {
  TempFile conf("node 0 kind=hbm read_bandwidth=5000 write_bandwidth=4000 latency=77 # fast\n");
  ScopedEnv env("SICM_DEVICES_CONF", conf.path());
  sicm_test::Initialized init;
  ASSERT_TRUE(init.ok());
  const sicm_device *d = sicm_device_of_node(0, 0);
  ASSERT_NE(nullptr, d);
  EXPECT_EQ(SICM_KIND_HBM, d->kind);
  EXPECT_EQ(SICM_SOURCE_CONFIG, d->kind_source);
  EXPECT_EQ(SICM_SOURCE_CONFIG, d->perf.source);
  EXPECT_EQ(5000u, d->perf.read_bandwidth);
  EXPECT_EQ(4000u, d->perf.write_bandwidth);
  EXPECT_EQ(77u, d->perf.read_latency);
  EXPECT_EQ(77u, d->perf.write_latency);
  EXPECT_EQ(0, d->perf.initiator);
  sicm_rank_entry first;
  sicm_source source;
  ASSERT_GE(sicm_rank(SICM_RANK_BANDWIDTH, 0, &first, 1, &source), 1);
  EXPECT_EQ(4500u, first.value) << "bandwidth ranks by the mean of read and write";
  EXPECT_EQ(SICM_SOURCE_CONFIG, first.source);
}

// The recorded topology of the project's 4-node QEMU guest (hwloc XML with
// its HMAT memory attributes): node 0 and 1 have CPUs, 2 is HBM-like, 3 is
// capacity-like.  Loading it makes multi-node logic testable on one node.
class RecordedHmat4 : public ::testing::Test {
 protected:
  RecordedHmat4()
      : xml_("HWLOC_XMLFILE", xml_path_.c_str()), conf_("SICM_DEVICES_CONF", nullptr) {}
  std::vector<int> Order(sicm_rank_by by, int initiator, sicm_source *source) {
    std::vector<sicm_rank_entry> entries(8);
    int n = sicm_rank(by, initiator, entries.data(), entries.size(), source);
    std::vector<int> nodes;
    for (int i = 0; i < n; i++) nodes.push_back(entries[i].device->node);
    return nodes;
  }
  std::string xml_path_ = SourcePath("tests/data/hmat4.xml");
  ScopedEnv xml_;
  ScopedEnv conf_;
};

TEST_F(RecordedHmat4, KindsComeFromFirmwareAttributes) {
  sicm_test::Initialized init;
  ASSERT_TRUE(init.ok());
  ASSERT_EQ(4u, sicm_devices()->count);
  const sicm_device_kind expect[] = {SICM_KIND_DRAM, SICM_KIND_DRAM, SICM_KIND_HBM,
                                     SICM_KIND_CAPACITY};
  for (int node = 0; node < 4; node++) {
    const sicm_device *d = sicm_device_of_node(node, 0);
    ASSERT_NE(nullptr, d);
    EXPECT_EQ(expect[node], d->kind) << "node " << node;
    EXPECT_EQ(node < 2, d->has_cpus) << "node " << node;
  }
  EXPECT_EQ(SICM_SOURCE_FIRMWARE, sicm_device_of_node(2, 0)->kind_source);
  EXPECT_EQ(409600u, sicm_device_of_node(2, 0)->perf.read_bandwidth);
  EXPECT_EQ(150u, sicm_device_of_node(2, 0)->perf.read_latency);
  EXPECT_EQ(0, sicm_device_of_node(3, 0)->perf.initiator);
  EXPECT_EQ(1, sicm_device_of_node(1, 0)->perf.initiator);
  size_t free_bytes;
  errno = 0;
  EXPECT_EQ(-1, sicm_device_get_free_bytes(sicm_device_of_node(2, 0), &free_bytes));
  EXPECT_EQ(EIO, errno) << "a recorded topology has no live free memory";
}

TEST_F(RecordedHmat4, RankingFromNodeZero) {
  sicm_test::Initialized init;
  ASSERT_TRUE(init.ok());
  sicm_source source;
  // Node 1 has no firmware value seen from node 0: it is estimated from its
  // own value scaled by distance (102400 * 10/21, 100 ns * 21/10).
  EXPECT_EQ((std::vector<int>{2, 0, 1, 3}), Order(SICM_RANK_BANDWIDTH, 0, &source));
  EXPECT_EQ(SICM_SOURCE_ESTIMATE, source);
  EXPECT_EQ((std::vector<int>{0, 2, 1, 3}), Order(SICM_RANK_LATENCY, 0, &source));
  EXPECT_EQ((std::vector<int>{0, 1, 2, 3}), Order(SICM_RANK_NEAREST, 0, &source));
  EXPECT_EQ(SICM_SOURCE_TOPOLOGY, source);
  sicm_rank_entry entries[4];
  ASSERT_EQ(4, sicm_rank(SICM_RANK_BANDWIDTH, 0, entries, 4, nullptr));
  EXPECT_EQ(409600u, entries[0].value);
  EXPECT_EQ(SICM_SOURCE_FIRMWARE, entries[0].source);
  EXPECT_EQ(48762u, entries[2].value);
  EXPECT_EQ(SICM_SOURCE_ESTIMATE, entries[2].source);
}

TEST_F(RecordedHmat4, RankingFromNodeOneEstimatesEveryFarNode) {
  sicm_test::Initialized init;
  ASSERT_TRUE(init.ok());
  sicm_source source;
  // From node 1: own DRAM 102400; node 2 409600*31/31; node 0 102400*10/21;
  // node 3 20480*41/41.
  EXPECT_EQ((std::vector<int>{2, 1, 0, 3}), Order(SICM_RANK_BANDWIDTH, 1, &source));
  EXPECT_EQ(1, sicm_device_best(SICM_RANK_LATENCY, 1)->node);
  unsigned cpu1 = 1;
  EXPECT_EQ(1, sicm_node_of_cpus(&cpu1, 1));
  errno = 0;
  EXPECT_EQ(nullptr, sicm_device_best(SICM_RANK_BANDWIDTH, 2)) << "node 2 has no CPUs";
  EXPECT_EQ(EINVAL, errno);
}

TEST_F(RecordedHmat4, ConfigOverridesFirmwareAndReordersRanking) {
  // The administrator says node 3 is fast and node 2 slow.
  TempFile conf("node 3 kind=hbm bandwidth=800000\nnode 2 bandwidth=1000 latency=900\n");
  ScopedEnv env("SICM_DEVICES_CONF", conf.path());
  sicm_test::Initialized init;
  ASSERT_TRUE(init.ok());
  EXPECT_EQ(SICM_KIND_HBM, sicm_device_of_node(3, 0)->kind);
  EXPECT_EQ(SICM_SOURCE_CONFIG, sicm_device_of_node(3, 0)->kind_source);
  EXPECT_EQ(SICM_KIND_CAPACITY, sicm_device_of_node(2, 0)->kind) << "reclassified from config";
  sicm_source source;
  EXPECT_EQ((std::vector<int>{3, 0, 1, 2}), Order(SICM_RANK_BANDWIDTH, 0, &source));
  EXPECT_EQ((std::vector<int>{0, 1, 3, 2}), Order(SICM_RANK_LATENCY, 0, &source));
}

// Weights for weighted interleave from bandwidth: tenths of the slowest
// device's, in lowest terms.
TEST_F(RecordedHmat4, InterleaveWeightsFollowBandwidthInLowestTerms) {
  TempFile conf("node 0 bandwidth=1000\nnode 2 bandwidth=1500\nnode 3 bandwidth=400\n");
  ScopedEnv env("SICM_DEVICES_CONF", conf.path());
  sicm_test::Initialized init;
  ASSERT_TRUE(init.ok());
  sicm_device *d0 = sicm_device_of_node(0, 0), *d2 = sicm_device_of_node(2, 0),
              *d3 = sicm_device_of_node(3, 0);
  struct {
    std::vector<sicm_device *> devs;
    std::vector<unsigned> weights;
  } cases[] = {
      {{d0, d2}, {2, 3}},         // 1.5 times as fast
      {{d0, d3}, {5, 2}},         // 2.5 times
      {{d2, d3, d0}, {38, 10, 25}},  // 3.75 (to a tenth: 3.8) and 2.5 times
      {{d2}, {1}},
  };
  for (auto &c : cases) {
    std::vector<unsigned> w(c.devs.size(), 0);
    ASSERT_EQ(0, sicm_interleave_weights_from_bandwidth(c.devs.data(), (unsigned)c.devs.size(),
                                                        w.data()))
        << sicm_error_detail();
    EXPECT_EQ(c.weights, w);
  }
}

// The firmware's bandwidth gives weights in the same proportion, each
// from 1 to 255.
TEST_F(RecordedHmat4, InterleaveWeightsFromFirmwareBandwidth) {
  sicm_test::Initialized init;
  ASSERT_TRUE(init.ok());
  sicm_device *devs[] = {sicm_device_of_node(0, 0), sicm_device_of_node(2, 0),
                         sicm_device_of_node(3, 0)};
  unsigned w[3];
  ASSERT_EQ(0, sicm_interleave_weights_from_bandwidth(devs, 3, w)) << sicm_error_detail();
  auto bw = [](const sicm_device *d) {
    return (double)(d->perf.read_bandwidth + d->perf.write_bandwidth) / 2;
  };
  for (int i = 0; i < 3; i++) {
    EXPECT_GE(w[i], 1u);
    EXPECT_LE(w[i], 255u);
    EXPECT_NEAR((double)w[i] / w[2], bw(devs[i]) / bw(devs[2]), 0.06 * bw(devs[i]) / bw(devs[2]))
        << "node " << devs[i]->node;
  }
}

}  // namespace

// Machines whose firmware gives no memory attributes: hwloc's node subtype
// (or the DAX device behind a kmem node) decides, recorded as its source.
// The XML files say where each fact about those machines comes from.
struct NoAttributesCase {
  const char *xml;
  int node;
  sicm_device_kind kind;
  sicm_source source;
};

class WithoutMemoryAttributes : public ::testing::TestWithParam<NoAttributesCase> {};

TEST_P(WithoutMemoryAttributes, KindComesFromTheNodeSubtype) {
  const NoAttributesCase &c = GetParam();
  ScopedEnv xml("HWLOC_XMLFILE", SourcePath(c.xml).c_str());
  ScopedEnv conf("SICM_DEVICES_CONF", nullptr);
  sicm_test::Initialized init;
  ASSERT_TRUE(init.ok());
  const sicm_device *d = sicm_device_of_node(c.node, 0);
  ASSERT_NE(nullptr, d) << c.xml;
  EXPECT_EQ(c.kind, d->kind) << c.xml << " node " << c.node;
  EXPECT_EQ(c.source, d->kind_source) << c.xml << " node " << c.node << ": "
                                      << sicm_source_name(d->kind_source);
  EXPECT_EQ(0u, d->perf.read_bandwidth) << "the file has no bandwidth";
  sicm_device *devs[] = {sicm_device_of_node(c.node, 0)};
  unsigned weight;
  errno = 0;
  EXPECT_EQ(-1, sicm_interleave_weights_from_bandwidth(devs, 1, &weight));
  EXPECT_EQ(ENODATA, errno) << "no weight from an unknown bandwidth";
}

INSTANTIATE_TEST_SUITE_P(
    RecordedMachines, WithoutMemoryAttributes,
    ::testing::Values(
        NoAttributesCase{"tests/data/knl-flat.xml", 0, SICM_KIND_DRAM, SICM_SOURCE_TOPOLOGY},
        NoAttributesCase{"tests/data/knl-flat.xml", 1, SICM_KIND_HBM, SICM_SOURCE_SUBTYPE},
        NoAttributesCase{"tests/data/dax-kmem.xml", 1, SICM_KIND_CAPACITY, SICM_SOURCE_SUBTYPE},
        NoAttributesCase{"tests/data/spr-hbm-nohmat.xml", 1, SICM_KIND_DRAM, SICM_SOURCE_TOPOLOGY},
        NoAttributesCase{"tests/data/spr-hbm-nohmat.xml", 2, SICM_KIND_HBM, SICM_SOURCE_SUBTYPE},
        NoAttributesCase{"tests/data/spr-hbm-nohmat.xml", 3, SICM_KIND_HBM, SICM_SOURCE_SUBTYPE}));

TEST(WithoutMemoryAttributesNames, SourcesHaveNames) {
  EXPECT_STREQ("subtype", sicm_source_name(SICM_SOURCE_SUBTYPE));
  EXPECT_STREQ("memory-tier", sicm_source_name(SICM_SOURCE_MEMORY_TIER));
}
