/* SPDX-License-Identifier: BSD-3-Clause */
// test_sicm_info.cc: `sicm-info --json` is valid JSON and agrees with the C
// API and, for what decides migration speed, with the kernel.
#include <stdio.h>
#include <string.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "config.h"
#include "sicm_test.h"

namespace {

std::string RunCommand(const std::string &cmd, int *status) {
  FILE *p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while (p && (n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *status = p ? pclose(p) : -1;
  return out;
}

// Flattens the JSON to one line per device and ranking with python's json module.
const char *kFlatten =
    "python3 -c 'import json,sys; d=json.load(sys.stdin)\n"
    "for v in d[\"devices\"]: print(\"dev\", v[\"node\"], v[\"kind\"], v[\"page_size\"], "
    "v[\"capacity\"], v[\"perf\"][\"read_bandwidth\"], v[\"perf\"][\"read_latency\"], "
    "v[\"distance\"][str(v[\"node\"])])\n"
    "for k, r in d[\"rankings\"].items(): print(\"rank\", k, r[\"source\"], "
    "*[e[\"node\"] for e in r[\"order\"]])'";

TEST(SicmInfo, JsonIsValidAndAgreesWithTheApi) {
  std::string tool = sicm_test::BuildPath("tools/sicm-info");
  int status;
  std::string out = RunCommand(tool + " --json | " + kFlatten, &status);
  ASSERT_EQ(0, status) << out;

  sicm_test::Initialized init;
  ASSERT_TRUE(init.ok());
  std::ostringstream expect;
  const sicm_device_list *list = sicm_devices();
  for (unsigned i = 0; i < list->count; i++) {
    const sicm_device &d = list->devices[i];
    // An unknown figure (0) is null in the JSON.
    auto figure = [](uint64_t v) { return v ? std::to_string(v) : std::string("None"); };
    expect << "dev " << d.node << " " << sicm_device_kind_name(d.kind) << " " << d.page_size << " "
           << d.capacity << " " << figure(d.perf.read_bandwidth) << " "
           << figure(d.perf.read_latency) << " "
           << sicm_node_distance(d.node, d.node) << "\n";
  }
  for (sicm_rank_by by : {SICM_RANK_BANDWIDTH, SICM_RANK_LATENCY, SICM_RANK_CAPACITY,
                          SICM_RANK_NEAREST}) {
    std::vector<sicm_rank_entry> e(list->count);
    sicm_source source;
    int n = sicm_rank(by, sicm_node_self(), e.data(), e.size(), &source);
    expect << "rank " << sicm_rank_by_name(by) << " " << sicm_source_name(source);
    for (int i = 0; i < n; i++) expect << " " << e[i].device->node;
    expect << "\n";
  }
  EXPECT_EQ(expect.str(), out);
}

// A fixed 4-node topology (two DRAM nodes with CPUs, HBM, capacity memory)
// checks the JSON on values this machine cannot give.
TEST(SicmInfo, JsonOfFourNodeTopology) {
  std::string cmd = "HWLOC_XMLFILE=" + sicm_test::SourcePath("tests/data/hmat4.xml") + " " +
                    sicm_test::BuildPath("tools/sicm-info") +
                    " --json | python3 -c 'import json,sys; d=json.load(sys.stdin)\n"
                    "nodes = {v[\"node\"]: v[\"kind\"] for v in d[\"devices\"]\n"
                    "         if not v[\"huge\"]}\n"
                    "print(len(nodes), nodes[2])'";
  int status;
  std::string out = RunCommand(cmd, &status);
  ASSERT_EQ(0, status) << out;
  EXPECT_EQ("4 hbm\n", out);
}

// What the kernel says, read here independently of the tool.
std::string ThpChoice(const char *file) {
  std::string path = std::string("/sys/kernel/mm/transparent_hugepage/") + file, line;
  FILE *f = fopen(path.c_str(), "r");
  char buf[256];
  if (f == nullptr) return "None";
  if (fgets(buf, sizeof buf, f)) line = buf;
  fclose(f);
  size_t open = line.find('['), close = line.find(']');
  return open == std::string::npos || close == std::string::npos
             ? "None"
             : line.substr(open + 1, close - open - 1);
}

const char *kMigration =
    " --json | python3 -c 'import json,sys; m=json.load(sys.stdin)[\"migration\"]\n"
    "print(m[\"thp_enabled\"], m[\"thp_defrag\"], m[\"cap_sys_nice\"], m[\"init_on_alloc\"], "
    "m[\"init_on_alloc_source\"] != \"\")'";

TEST(SicmInfo, MigrationFactorsAreTheKernelsAndThisProcesssCapabilities) {
  int status;
  std::string out = RunCommand(sicm_test::BuildPath("tools/sicm-info") + kMigration, &status);
  ASSERT_EQ(0, status) << out;
  FILE *f = fopen("/proc/self/status", "r");
  ASSERT_NE(nullptr, f);
  char line[256];
  unsigned long long caps = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "CapEff: %llx", &caps) == 1) break;
  fclose(f);
  std::string expect = ThpChoice("enabled") + " " + ThpChoice("defrag") + " " +
                       ((caps >> 23) & 1 ? "True" : "False") + " ";
  EXPECT_EQ(0u, out.find(expect)) << out;
  // Without CAP_SYS_NICE in its bounding set, even root's sicm-info has none.
  if (system("setpriv --version >/dev/null 2>&1") == 0) {
    out = RunCommand("setpriv --bounding-set -sys_nice " +
                         sicm_test::BuildPath("tools/sicm-info") + kMigration,
                     &status);
    ASSERT_EQ(0, status) << out;
    EXPECT_NE(std::string::npos, out.find(" False ")) << out;
  }
}

TEST(SicmInfo, TableNamesEveryNode) {
  int status;
  std::string out = RunCommand(sicm_test::BuildPath("tools/sicm-info"), &status);
  ASSERT_EQ(0, status);
  EXPECT_NE(std::string::npos, out.find("ranking seen from node"));
  EXPECT_NE(std::string::npos, out.find("bandwidth"));
  EXPECT_NE(std::string::npos, out.find("init_on_alloc: "));
}

// On this machine's own topology (no firmware figures on a one-node VM, or
// some) and on the 4-node one with HMAT figures: an unknown figure is "-",
// never 0, and each ranking names its unit and where its values came from.
TEST(SicmInfo, TableShowsUnknownsAsDashesAndNamesEachRankingsUnit) {
  int status;
  std::string out = RunCommand("HWLOC_XMLFILE=" + sicm_test::SourcePath("tests/data/hmat4.xml") +
                                   " " + sicm_test::BuildPath("tools/sicm-info"),
                               &status);
  ASSERT_EQ(0, status) << out;
  EXPECT_NE(std::string::npos, out.find("bandwidth (MB/s, higher first, from ")) << out;
  EXPECT_NE(std::string::npos, out.find("latency   (ns, lower first, from ")) << out;
  EXPECT_NE(std::string::npos, out.find("capacity  (bytes, larger first, from ")) << out;
  EXPECT_NE(std::string::npos, out.find("nearest   (NUMA distance, lower first)")) << out;
  // A foreign topology: the kernel cannot say how much of it is free.
  EXPECT_EQ(std::string::npos, out.find(" ? ")) << out;
  EXPECT_NE(std::string::npos, out.find(" - ")) << out;

  sicm_test::Initialized init;
  ASSERT_TRUE(init.ok());
  const sicm_device_list *list = sicm_devices();
  bool unknown = false;
  for (unsigned i = 0; i < list->count; i++)
    unknown |= list->devices[i].perf.read_bandwidth == 0 || list->devices[i].perf.read_latency == 0;
  out = RunCommand(sicm_test::BuildPath("tools/sicm-info"), &status);
  ASSERT_EQ(0, status) << out;
  if (unknown) {
    // No device row may print 0 for a figure it does not have.
    EXPECT_EQ(std::string::npos, out.find("          0 ")) << out;
    EXPECT_NE(std::string::npos, out.find("      - ")) << out;
  }
  std::vector<sicm_rank_entry> e(list->count);
  sicm_source source;
  ASSERT_GE(sicm_rank(SICM_RANK_BANDWIDTH, sicm_node_self(), e.data(), e.size(), &source), 1);
  EXPECT_NE(std::string::npos,
            out.find(source == SICM_SOURCE_TOPOLOGY
                         ? "bandwidth (NUMA distance, lower first; no figure for every device)"
                         : "bandwidth (MB/s, higher first, from "))
      << out;
}

TEST(SicmInfo, VersionPrintsTheVersionAndExitsZero) {
  int status;
  std::string out = RunCommand(sicm_test::BuildPath("tools/sicm-info") + " --version", &status);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(0, WEXITSTATUS(status));
  const char *version = nullptr;
  int own = sicm_jemalloc_info(&version);
  ASSERT_NE(nullptr, version);
  EXPECT_EQ(std::string("sicm-info (libsicm) ") + PACKAGE_VERSION + "\njemalloc " + version +
                (own ? " (libsicm's own build: libsicm loads with dlopen)\n"
                     : " (the system's: libsicm cannot be loaded with dlopen)\n"),
            out);
}

// The jemalloc libsicm reports is the one it was built on: its release
// ("5.3.0", digits and dots), and whether it is the private build, as the
// JSON says; sicm_jemalloc_info needs no sicm_init.
TEST(SicmInfo, JemallocIsReportedWithWhetherDlopenCanLoadLibsicm) {
  const char *version = nullptr;
  int own = sicm_jemalloc_info(&version);
  ASSERT_NE(nullptr, version);
  EXPECT_TRUE(own == 0 || own == 1);
  EXPECT_GE(strlen(version), 3u);
  EXPECT_EQ(strlen(version), strspn(version, "0123456789.")) << version;
  EXPECT_EQ(sicm_jemalloc_info(nullptr), own);
  int status;
  std::string out = RunCommand(sicm_test::BuildPath("tools/sicm-info") +
                                   " --json | python3 -c 'import json,sys; l=json.load(sys.stdin)"
                                   "[\"library\"]; print(l[\"jemalloc\"], l[\"dlopen_safe\"])'",
                               &status);
  ASSERT_EQ(0, status) << out;
  EXPECT_EQ(std::string(version) + (own ? " True\n" : " False\n"), out);
}

TEST(SicmInfo, BadOptionExitsTwo) {
  // An empty or out-of-range node was taken as node 0 once.
  for (const char *args : {" --frobnicate", " --initiator", " --initiator x", " --initiator ''",
                           " --initiator 4294967296", " --initiator 1x"}) {
    int status;
    RunCommand(sicm_test::BuildPath("tools/sicm-info") + args + " 2>/dev/null", &status);
    EXPECT_TRUE(WIFEXITED(status)) << args;
    EXPECT_EQ(2, WEXITSTATUS(status)) << args;
  }
}

TEST(SicmInfo, MalformedConfIsReportedWithLine) {
  sicm_test::TempFile conf("node 0 speed=3\n");
  int status;
  std::string out = RunCommand("SICM_DEVICES_CONF=" + std::string(conf.path()) + " " +
                            sicm_test::BuildPath("tools/sicm-info") + " 2>&1",
                        &status);
  EXPECT_EQ(1, WEXITSTATUS(status));
  EXPECT_NE(std::string::npos, out.find(std::string(conf.path()) + ":1: unknown key 'speed'"))
      << out;
}

}  // namespace
