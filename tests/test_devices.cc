/* SPDX-License-Identifier: BSD-3-Clause */
// test_devices.cc: device discovery, lifetime and ranking on this machine,
// and the errors of the device calls.
#include <errno.h>
#include <sched.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sicm_test.h"

using sicm_test::Initialized;
using sicm_test::ScopedEnv;

namespace {

// MemTotal of a node from sysfs, in bytes.
size_t SysfsNodeMemTotal(int node) {
  std::ifstream in("/sys/devices/system/node/node" + std::to_string(node) + "/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string w[3];
    size_t kb;
    if (words >> w[0] >> w[1] >> w[2] >> kb && w[2] == "MemTotal:") return kb << 10;
  }
  return 0;
}

TEST(Lifetime, FiniWithoutInitFailsWithEperm) {
  errno = 0;
  EXPECT_EQ(-1, sicm_fini());
  EXPECT_EQ(EPERM, errno);
  EXPECT_NE(std::string(), sicm_error_detail());
}

TEST(Lifetime, CallsBeforeInitFailWithEperm) {
  errno = 0;
  EXPECT_EQ(nullptr, sicm_devices());
  EXPECT_EQ(EPERM, errno);
  errno = 0;
  EXPECT_EQ(-1, sicm_rank(SICM_RANK_BANDWIDTH, SICM_INITIATOR_SELF, nullptr, 0, nullptr));
  EXPECT_EQ(EPERM, errno);
  errno = 0;
  EXPECT_EQ(-1, sicm_node_distance(0, 0));
  EXPECT_EQ(EPERM, errno);
}

TEST(Lifetime, DoubleInitIsReferenceCounted) {
  ScopedEnv conf("SICM_DEVICES_CONF", nullptr);
  ASSERT_EQ(0, sicm_init());
  const sicm_device_list *first = sicm_devices();
  ASSERT_EQ(0, sicm_init());
  EXPECT_EQ(first, sicm_devices());
  EXPECT_EQ(0, sicm_fini());
  EXPECT_EQ(first, sicm_devices()) << "one reference is still held";
  EXPECT_EQ(0, sicm_fini());
  errno = 0;
  EXPECT_EQ(nullptr, sicm_devices());
  EXPECT_EQ(EPERM, errno);
  EXPECT_EQ(-1, sicm_fini());
}

TEST(Devices, EveryNodeHasABasePageDeviceWithSysfsCapacity) {
  Initialized init;
  ASSERT_TRUE(init.ok());
  const sicm_device_list *list = sicm_devices();
  ASSERT_NE(nullptr, list);
  ASSERT_GE(list->count, 1u);
  int dram = 0;
  for (unsigned i = 0; i < list->count; i++) {
    const sicm_device &d = list->devices[i];
    EXPECT_EQ(i, d.index);
    if (d.huge) continue;
    EXPECT_EQ((size_t)sysconf(_SC_PAGESIZE), d.page_size);
    EXPECT_EQ(SysfsNodeMemTotal(d.node), d.capacity) << "node " << d.node;
    if (d.kind == SICM_KIND_DRAM) dram++;
    EXPECT_EQ(&d, sicm_device_of_node(d.node, 0));
  }
  EXPECT_GE(dram, 1);
}

TEST(Devices, FreeBytesIsBelowCapacity) {
  // That the value is live is checked in the guest (numa_devices): this
  // host's node 0 does not account all of its memory in sysfs.
  Initialized init;
  ASSERT_TRUE(init.ok());
  const sicm_device *d = sicm_device_of_node(sicm_node_self(), 0);
  ASSERT_NE(nullptr, d);
  size_t free_bytes = 0;
  ASSERT_EQ(0, sicm_device_get_free_bytes(d, &free_bytes));
  EXPECT_GT(free_bytes, 0u);
  EXPECT_LE(free_bytes, d->capacity);
}

TEST(Devices, BadArgumentsGetEinval) {
  Initialized init;
  ASSERT_TRUE(init.ok());
  size_t bytes;
  sicm_device forged = *sicm_devices()->devices;
  errno = 0;
  EXPECT_EQ(-1, sicm_device_get_free_bytes(nullptr, &bytes));
  EXPECT_EQ(EINVAL, errno);
  errno = 0;
  EXPECT_EQ(-1, sicm_device_get_free_bytes(&forged, &bytes)) << "a copy is not a device from sicm_init";
  EXPECT_EQ(EINVAL, errno);
  errno = 0;
  EXPECT_EQ(-1, sicm_device_get_free_bytes(sicm_devices()->devices, nullptr));
  EXPECT_EQ(EINVAL, errno);
  errno = 0;
  EXPECT_EQ(nullptr, sicm_device_of_node(4096, 0));
  EXPECT_EQ(ENODEV, errno);
  errno = 0;
  EXPECT_EQ(-1, sicm_node_distance(0, 4096));
  EXPECT_EQ(EINVAL, errno);
  errno = 0;
  EXPECT_EQ(-1, sicm_node_of_cpus(nullptr, 1));
  EXPECT_EQ(EINVAL, errno);
  unsigned no_such_cpu = 1u << 20;
  errno = 0;
  EXPECT_EQ(-1, sicm_node_of_cpus(&no_such_cpu, 1));
  EXPECT_EQ(EINVAL, errno);
  errno = 0;
  EXPECT_EQ(-1, sicm_rank((sicm_rank_by)42, SICM_INITIATOR_SELF, nullptr, 0, nullptr));
  EXPECT_EQ(EINVAL, errno);
  errno = 0;
  EXPECT_EQ(-1, sicm_rank(SICM_RANK_LATENCY, SICM_INITIATOR_SELF, nullptr, 3, nullptr));
  EXPECT_EQ(EINVAL, errno);
  errno = 0;
  EXPECT_EQ(-1, sicm_rank(SICM_RANK_LATENCY, 4096, nullptr, 0, nullptr));
  EXPECT_EQ(EINVAL, errno);
  errno = 0;
  EXPECT_EQ(nullptr, sicm_device_best(SICM_RANK_LATENCY, -7));
  EXPECT_EQ(EINVAL, errno);
}

TEST(Nodes, SelfAndCpusAgreeWithTheKernel) {
  Initialized init;
  ASSERT_TRUE(init.ok());
  unsigned cpu = (unsigned)sched_getcpu();
  int self = sicm_node_self();
  EXPECT_EQ(self, sicm_node_of_cpus(&cpu, 1));
  EXPECT_EQ(10, sicm_node_distance(self, self));
}

TEST(Ranking, WithoutAttributesFallsBackToDistance) {
  ScopedEnv conf("SICM_DEVICES_CONF", nullptr);
  Initialized init;
  ASSERT_TRUE(init.ok());
  const sicm_device_list *list = sicm_devices();
  bool firmware = false;
  for (unsigned i = 0; i < list->count; i++)
    firmware |= list->devices[i].perf.source != SICM_SOURCE_NONE;
  if (firmware) GTEST_SKIP() << "this machine reports memory attributes";
  std::vector<sicm_rank_entry> order(list->count);
  sicm_source source = SICM_SOURCE_NONE;
  int n = sicm_rank(SICM_RANK_BANDWIDTH, SICM_INITIATOR_SELF, order.data(), order.size(), &source);
  ASSERT_EQ((int)list->count, n);
  EXPECT_EQ(SICM_SOURCE_TOPOLOGY, source);
  EXPECT_EQ(sicm_node_self(), order[0].device->node);
  for (int i = 1; i < n; i++) EXPECT_LE(order[i - 1].value, order[i].value);
}

TEST(Ranking, CapacityOrderIsDescendingAndComplete) {
  Initialized init;
  ASSERT_TRUE(init.ok());
  const sicm_device_list *list = sicm_devices();
  std::vector<sicm_rank_entry> order(list->count);
  ASSERT_EQ((int)list->count,
            sicm_rank(SICM_RANK_CAPACITY, SICM_INITIATOR_SELF, order.data(), order.size(), nullptr));
  std::set<const sicm_device *> seen;
  for (size_t i = 0; i < order.size(); i++) {
    seen.insert(order[i].device);
    EXPECT_EQ(order[i].device->capacity, order[i].value);
    if (i) {
      EXPECT_GE(order[i - 1].value, order[i].value);
    }
  }
  EXPECT_EQ(list->count, seen.size());
  EXPECT_EQ(order[0].device, sicm_device_best(SICM_RANK_CAPACITY, SICM_INITIATOR_SELF));
}

TEST(Names, AreStable) {
  EXPECT_STREQ("hbm", sicm_device_kind_name(SICM_KIND_HBM));
  EXPECT_STREQ("capacity", sicm_device_kind_name(SICM_KIND_CAPACITY));
  EXPECT_STREQ("unknown", sicm_device_kind_name((sicm_device_kind)99));
  EXPECT_STREQ("estimate", sicm_source_name(SICM_SOURCE_ESTIMATE));
  EXPECT_STREQ("nearest", sicm_rank_by_name(SICM_RANK_NEAREST));
  EXPECT_STREQ("invalid", sicm_rank_by_name((sicm_rank_by)99));
}

}  // namespace
