/* SPDX-License-Identifier: BSD-3-Clause */
// numa_nohbm.cc (runs in the guest topology without HBM, nohbm): a
// high-bandwidth allocator is portable — it follows its fallback instead of
// failing — and large-capacity memory is still found.
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "../sicm_test.h"

namespace {

class NoHbm : public ::testing::Test {
 protected:
  void SetUp() override {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    ASSERT_EQ(0, sched_setaffinity(0, sizeof set, &set));
    ASSERT_TRUE(init_.ok());
  }
  sicm_test::Initialized init_;
};

TEST_F(NoHbm, TheMachineHasNoHbmButHasCapacityMemory) {
  sicm_device *devs[8];
  EXPECT_EQ(0, sicm_memspace_devices(SICM_MEMSPACE_HIGH_BW, SICM_INITIATOR_SELF, devs, 8));
  ASSERT_EQ(1, sicm_memspace_devices(SICM_MEMSPACE_LARGE_CAP, SICM_INITIATOR_SELF, devs, 8));
  EXPECT_EQ(2, devs[0]->node);
  EXPECT_EQ(SICM_KIND_CAPACITY, devs[0]->kind);
}

TEST_F(NoHbm, HighBandwidthAllocatorFollowsItsFallback) {
  sicm_allocator *dflt = sicm_allocator_create(SICM_MEMSPACE_HIGH_BW, 0, nullptr);
  ASSERT_NE(nullptr, dflt) << "creating it works: the fallback decides";
  EXPECT_EQ(0, sicm_allocator_arenas(dflt, nullptr, 0));
  char *p = (char *)sicm_allocator_alloc(dflt, 4 << 20);
  ASSERT_NE(nullptr, p);
  memset(p, 1, 4 << 20);
  EXPECT_EQ(0, sicm_node_of_ptr(p)) << "default_mem_fb: the thread's DRAM";
  EXPECT_EQ(sicm_arena_get_default(), sicm_arena_lookup(p));
  sicm_allocator_free(dflt, p);

  sicm_alloctrait null_fb = {SICM_ATK_FALLBACK, SICM_ATV_NULL_FB};
  sicm_allocator *strict = sicm_allocator_create(SICM_MEMSPACE_HIGH_BW, 1, &null_fb);
  errno = 0;
  EXPECT_EQ(nullptr, sicm_allocator_alloc(strict, 64));
  EXPECT_EQ(ENOMEM, errno);

  sicm_allocator *cap = sicm_allocator_create(SICM_MEMSPACE_LARGE_CAP, 0, nullptr);
  sicm_alloctrait to_cap[] = {{SICM_ATK_FALLBACK, SICM_ATV_ALLOCATOR_FB},
                              {SICM_ATK_FB_DATA, (uintptr_t)cap}};
  sicm_allocator *chained = sicm_allocator_create(SICM_MEMSPACE_HIGH_BW, 2, to_cap);
  char *q = (char *)sicm_allocator_alloc(chained, 1 << 20);
  ASSERT_NE(nullptr, q);
  memset(q, 1, 1 << 20);
  EXPECT_EQ(2, sicm_node_of_ptr(q)) << "allocator_fb: the large-capacity node";
  sicm_allocator_free(nullptr, q);
  EXPECT_EQ(0, sicm_allocator_destroy(chained));
  EXPECT_EQ(0, sicm_allocator_destroy(cap));
  EXPECT_EQ(0, sicm_allocator_destroy(strict));
  EXPECT_EQ(0, sicm_allocator_destroy(dflt));
}

}  // namespace
