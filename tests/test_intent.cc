/* SPDX-License-Identifier: BSD-3-Clause */
// test_intent.cc: choosing a device by intent on this one-node machine —
// errors, hard constraints, and the fallback of an allocator whose intent
// no device meets.  Multi-node choices are checked in the guest (numa_intent).
#include <errno.h>

#include "sicm_test.h"

namespace {

class Intent : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(init_.ok()); }
  sicm_test::Initialized init_;
};

TEST_F(Intent, BadIntentsAreRejected) {
  sicm_intent intent = SICM_INTENT_INIT;
  errno = 0;
  EXPECT_EQ(nullptr, sicm_device_for_intent(nullptr));
  EXPECT_EQ(EINVAL, errno);
  intent.wants = 1u << 7;
  errno = 0;
  EXPECT_EQ(nullptr, sicm_device_for_intent(&intent));
  EXPECT_EQ(EINVAL, errno);
  intent = SICM_INTENT_INIT;
  intent.initiator = 4095;
  errno = 0;
  EXPECT_EQ(nullptr, sicm_device_for_intent(&intent));
  EXPECT_EQ(EINVAL, errno);
  intent = SICM_INTENT_INIT;
  unsigned no_cpu = 1u << 20;
  intent.cpus = &no_cpu;
  intent.ncpus = 1;
  errno = 0;
  EXPECT_EQ(nullptr, sicm_device_for_intent(&intent));
  EXPECT_EQ(EINVAL, errno);
  intent = SICM_INTENT_INIT;
  intent.pci_busid = "0000:ff:1f.7";
  errno = 0;
  EXPECT_EQ(nullptr, sicm_device_for_intent(&intent));
  EXPECT_EQ(ENOENT, errno);
  sicm_device forged = *sicm_devices()->devices;
  intent = SICM_INTENT_INIT;
  intent.device = &forged;
  errno = 0;
  EXPECT_EQ(nullptr, sicm_device_for_intent(&intent));
  EXPECT_EQ(EINVAL, errno);
}

TEST_F(Intent, OneNodeMachine) {
  sicm_intent intent = SICM_INTENT_INIT;
  intent.wants = SICM_INTENT_BANDWIDTH | SICM_INTENT_CAPACITY;
  sicm_device *d = sicm_device_for_intent(&intent);
  ASSERT_NE(nullptr, d) << sicm_error_detail();
  EXPECT_EQ(sicm_node_self(), d->node);
  // Nothing is known of bandwidth here, so a bandwidth limit is never met.
  intent.min_bandwidth = 1;
  errno = 0;
  EXPECT_EQ(nullptr, sicm_device_for_intent(&intent));
  EXPECT_EQ(ENODEV, errno);
  intent = SICM_INTENT_INIT;
  intent.min_free = SIZE_MAX / 2;
  errno = 0;
  EXPECT_EQ(nullptr, sicm_device_for_intent(&intent));
  EXPECT_EQ(ENODEV, errno);
}

TEST_F(Intent, UnmetIntentAllocatorFollowsItsFallback) {
  sicm_intent intent = SICM_INTENT_INIT;
  intent.min_free = SIZE_MAX / 2;
  sicm_alloctrait null_fb = {SICM_ATK_FALLBACK, SICM_ATV_NULL_FB};
  sicm_allocator *strict = sicm_allocator_create_for_intent(&intent, 1, &null_fb);
  ASSERT_NE(nullptr, strict) << sicm_error_detail();
  EXPECT_EQ(0, sicm_allocator_arenas(strict, nullptr, 0));
  errno = 0;
  EXPECT_EQ(nullptr, sicm_allocator_alloc(strict, 64));
  EXPECT_EQ(ENOMEM, errno);
  sicm_allocator *relaxed = sicm_allocator_create_for_intent(&intent, 0, nullptr);
  void *p = sicm_allocator_alloc(relaxed, 64);
  EXPECT_EQ(sicm_arena_get_default(), sicm_arena_lookup(p)) << "default_mem_fb";
  sicm_allocator_free(relaxed, p);
  intent = SICM_INTENT_INIT;
  sicm_allocator *met = sicm_allocator_create_for_intent(&intent, 0, nullptr);
  sicm_arena own;
  ASSERT_EQ(1, sicm_allocator_arenas(met, &own, 1));
  p = sicm_allocator_alloc(met, 64);
  EXPECT_EQ(own, sicm_arena_lookup(p));
  sicm_allocator_free(met, p);
  EXPECT_EQ(0, sicm_allocator_destroy(met));
  EXPECT_EQ(0, sicm_allocator_destroy(relaxed));
  EXPECT_EQ(0, sicm_allocator_destroy(strict));
  errno = 0;
  EXPECT_EQ(nullptr, sicm_allocator_create_for_intent(nullptr, 0, nullptr));
  EXPECT_EQ(EINVAL, errno);
}

}  // namespace
