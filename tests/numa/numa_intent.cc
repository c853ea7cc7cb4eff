/* SPDX-License-Identifier: BSD-3-Clause */
// numa_intent.cc (runs in the 4-node guest): combined hints, hard
// constraints, and initiators given as a node, CPUs or a PCI device.
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <string>

#include "../sicm_test.h"

namespace {

class GuestIntent : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(init_.ok()); }
  // The node libsicm picks for an intent from node 0, or -1 with errno.
  int Pick(unsigned wants, uint64_t min_bw = 0, uint64_t max_lat = 0, sicm_device *only = nullptr) {
    sicm_intent intent = SICM_INTENT_INIT;
    intent.initiator = 0;
    intent.wants = wants;
    intent.min_bandwidth = min_bw;
    intent.max_latency = max_lat;
    intent.device = only;
    sicm_device *d = sicm_device_for_intent(&intent);
    return d ? d->node : -1;
  }
  sicm_test::Initialized init_;
};

TEST_F(GuestIntent, SoftWishesFromNodeZero) {
  EXPECT_EQ(2, Pick(SICM_INTENT_BANDWIDTH));
  EXPECT_EQ(0, Pick(SICM_INTENT_LATENCY));
  EXPECT_EQ(0, Pick(0)) << "no wish: nearest";
  // Bandwidth ranks 2,0,1,3 and latency 0,2,1,3: nodes 0 and 2 tie, and
  // the nearer wins.
  EXPECT_EQ(0, Pick(SICM_INTENT_BANDWIDTH | SICM_INTENT_LATENCY));
  // Nodes 0 and 2 hold nearly the same memory, and which holds more
  // depends on the boot: the larger one ranks first by capacity, so node 2
  // wins bandwidth+capacity outright if it is larger, else ties with node 0,
  // which is nearer.
  bool two_larger = sicm_device_of_node(2, 0)->capacity > sicm_device_of_node(0, 0)->capacity;
  EXPECT_EQ(two_larger ? 2 : 0, Pick(SICM_INTENT_BANDWIDTH | SICM_INTENT_CAPACITY));
}

TEST_F(GuestIntent, HardConstraints) {
  EXPECT_EQ(2, Pick(SICM_INTENT_LATENCY, 200000)) << "only node 2 reaches 200 GB/s";
  EXPECT_EQ(0, Pick(SICM_INTENT_BANDWIDTH, 0, 120)) << "only node 0 answers within 120 ns";
  errno = 0;
  EXPECT_EQ(-1, Pick(SICM_INTENT_BANDWIDTH, 500000));
  EXPECT_EQ(ENODEV, errno);
  EXPECT_EQ(3, Pick(SICM_INTENT_BANDWIDTH, 0, 0, sicm_device_of_node(3, 0)));
  errno = 0;
  EXPECT_EQ(-1, Pick(0, 100000, 0, sicm_device_of_node(3, 0)));
  EXPECT_EQ(ENODEV, errno);
}

TEST_F(GuestIntent, InitiatorFromCpusOrPciDevice) {
  sicm_intent intent = SICM_INTENT_INIT;
  intent.wants = SICM_INTENT_LATENCY;
  unsigned cpu1 = 1;
  intent.cpus = &cpu1;
  intent.ncpus = 1;
  ASSERT_NE(nullptr, sicm_device_for_intent(&intent));
  EXPECT_EQ(1, sicm_device_for_intent(&intent)->node);
  // The guest has a PCI device (not a bridge) behind an expander bridge on node 1.
  glob_t g;
  ASSERT_EQ(0, glob("/sys/bus/pci/devices/*", 0, nullptr, &g));
  std::string busid;
  for (size_t i = 0; i < g.gl_pathc && busid.empty(); i++) {
    std::string dir = g.gl_pathv[i];
    int node = -1;
    unsigned cls = 0;
    FILE *f = fopen((dir + "/numa_node").c_str(), "r");
    if (f && fscanf(f, "%d", &node) != 1) node = -1;
    if (f) fclose(f);
    f = fopen((dir + "/class").c_str(), "r");
    if (f && fscanf(f, "%x", &cls) != 1) cls = 0;
    if (f) fclose(f);
    if (node == 1 && (cls >> 8) != 0x0604) busid = dir.substr(dir.rfind('/') + 1);
  }
  globfree(&g);
  ASSERT_FALSE(busid.empty()) << "no PCI device on node 1 in the guest";
  intent = SICM_INTENT_INIT;
  intent.wants = SICM_INTENT_LATENCY;
  intent.pci_busid = busid.c_str();
  sicm_device *d = sicm_device_for_intent(&intent);
  ASSERT_NE(nullptr, d) << sicm_error_detail();
  EXPECT_EQ(1, d->node) << "lowest latency from the PCI device's node " << busid;
}

}  // namespace
