/* SPDX-License-Identifier: BSD-3-Clause */
// numa_coexist.cc (runs in the multi-NUMA guest, as root, on a kernel that
// makes memory tiers of its nodes: Linux 6.12, not 6.1): an arena
// libsicm bound stays where it is bound while the kernel's NUMA balancing
// in tiering mode promotes hot pages.  A mapping with no policy, read the
// same way beside it, is the control: the kernel must move it, or the test
// proves nothing.  (Demotion under memory pressure does move bound pages;
// sicm_autoplace(3) says so.)
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <string>

#include "numa_test.h"

namespace {

using sicm_test::PagesNotOn;
using sicm_test::ReadSetting;
using sicm_test::WriteSetting;

const size_t kBytes = 16u << 20;

double Now() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

volatile long sink;

void ReadAll(const char *p) {
  long s = 0;
  for (size_t i = 0; i < kBytes; i += 64) s += p[i];
  sink = sink + s;
}

const char kBalancing[] = "/proc/sys/kernel/numa_balancing";

#if defined(__SANITIZE_ADDRESS__)
const bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
const bool kAddressSanitizer = true;
#else
const bool kAddressSanitizer = false;
#endif
#else
const bool kAddressSanitizer = false;
#endif

// Memory tiers the kernel made of the nodes: tiering mode promotes from a
// lower one only (Linux 6.1 puts the guest's nodes in one tier).
int MemoryTiers() {
  DIR *d = opendir("/sys/devices/virtual/memory_tiering");
  int n = 0;
  for (dirent *e; d != nullptr && (e = readdir(d)) != nullptr;)
    n += strncmp(e->d_name, "memory_tier", 11) == 0;
  if (d != nullptr) closedir(d);
  return n;
}

class Coexist : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(init_.ok());
    saved_ = ReadSetting(kBalancing);
    if (saved_.empty()) GTEST_SKIP() << "no NUMA balancing in this kernel";
    if (MemoryTiers() < 2) GTEST_SKIP() << "one memory tier: tiering mode promotes nothing";
    // NUMA balancing scans a few GiB of address space per period, in
    // address order: AddressSanitizer's shadow, terabytes of it, keeps the
    // scanner from the test's pages for minutes.
    if (kAddressSanitizer) GTEST_SKIP() << "AddressSanitizer's shadow starves the balancing scanner";
    ASSERT_TRUE(WriteSetting(kBalancing, "2")) << "tiering mode needs root";
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    CPU_SET(0, &cpus);  // node 0's CPU: above the capacity node 3
    ASSERT_EQ(0, sched_getaffinity(0, sizeof old_cpus_, &old_cpus_));
    ASSERT_EQ(0, sched_setaffinity(0, sizeof cpus, &cpus));
  }
  void TearDown() override {
    if (!saved_.empty()) WriteSetting(kBalancing, saved_);
    sched_setaffinity(0, sizeof old_cpus_, &old_cpus_);
  }
  sicm_test::Initialized init_;
  std::string saved_;
  cpu_set_t old_cpus_;
};

TEST_F(Coexist, TieringBalancingLeavesABoundArenaWhereItIs) {
  sicm_arena a = sicm_arena_create(0, sicm_device_of_node(3, 0));
  ASSERT_NE(nullptr, a) << sicm_error_detail();
  char *bound = (char *)sicm_arena_alloc(a, kBytes);
  ASSERT_NE(nullptr, bound);
  memset(bound, 1, kBytes);
  // The control: pages first touched on node 3 under the thread's policy,
  // in a mapping with none of its own.
  char *loose = (char *)mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(MAP_FAILED, (void *)loose);
  unsigned long node3 = 1ul << 3;
  ASSERT_EQ(0, set_mempolicy(MPOL_BIND, &node3, 64));
  memset(loose, 1, kBytes);
  ASSERT_EQ(0, set_mempolicy(MPOL_DEFAULT, nullptr, 0));
  const size_t pages = kBytes / sicm_test::PageSize();
  ASSERT_EQ(0u, PagesNotOn(loose, kBytes, 3));
  // Both read hot from node 0's CPU until the kernel has promoted most of
  // the control (a few seconds in the guest), at most a minute.
  double start = Now();
  size_t promoted = 0;
  while (Now() - start < 60 && promoted < pages * 9 / 10) {
    for (int i = 0; i < 20; i++) ReadAll(bound), ReadAll(loose);
    promoted = pages - PagesNotOn(loose, kBytes, 0);
  }
  printf("    control: %zu of %zu pages promoted to node 0 in %.1f s\n", promoted, pages,
         Now() - start);
  ASSERT_GE(promoted, pages * 9 / 10) << "NUMA balancing moved nothing: the test proves nothing";
  EXPECT_EQ(0u, PagesNotOn(bound, kBytes, 3)) << "a page of the bound arena left node 3";
  munmap(loose, kBytes);
  sicm_free(bound);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

}  // namespace
