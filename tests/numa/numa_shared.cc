/* SPDX-License-Identifier: BSD-3-Clause */
// numa_shared.cc (runs in the multi-NUMA guest): a shared arena's pages are
// on its device whichever process touched them, and migrating it moves the
// pages every attached process maps (MPOL_MF_MOVE_ALL) — or, without
// CAP_SYS_NICE, fails with EPERM and moves nothing; two processes moving it
// at once are serialized.  Checked with move_pages in each process.
#include <errno.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "../shared_test.h"
#include "numa_test.h"

namespace {

using namespace shared_test;
using sicm_test::PagesNotOn;

const size_t kBlock = 8 << 20;

class SharedNuma : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(init_.ok()); }
  void TearDown() override { shm_unlink(name_.c_str()); }
  sicm_arena Create(int node) {
    name_ = "/sicm-numa-" + std::to_string(getpid()) + "-" + std::to_string(node);
    sicm_arena a = sicm_arena_create_shared(name_.c_str(), 64 << 20,
                                            sicm_device_of_node(node, 0), 0);
    EXPECT_NE(nullptr, a) << sicm_error_detail();
    return a;
  }
  // A new block of n bytes filled from seed; nullptr (and a failure) if none.
  unsigned char *FilledBlock(sicm_arena a, size_t n, unsigned seed) {
    auto *p = static_cast<unsigned char *>(sicm_arena_alloc(a, n));
    EXPECT_NE(nullptr, p) << sicm_error_detail();
    if (p != nullptr) Fill(p, n, seed);
    return p;
  }
  // A child process attached by name (not through fork's copy), as a rank.
  sicm_arena AttachInChild(sicm_arena inherited) {
    if (sicm_arena_detach(inherited) != 0) _exit(90);
    sicm_arena a = sicm_arena_attach(name_.c_str());
    if (a == nullptr) _exit(91);
    return a;
  }
  // Bytes of the arena's resident pages on nodes other than `node`.
  size_t BytesOff(sicm_arena a, int node) {
    size_t bytes[8] = {0}, off = 0;
    EXPECT_EQ(0, sicm_arena_residency(a, bytes, 8));
    for (int n = 0; n < 8; n++)
      if (n != node) off += bytes[n];
    return off;
  }
  sicm_test::Initialized init_;
  std::string name_;
};

TEST_F(SharedNuma, PagesTouchedByAnyProcessAreOnTheDevice) {
  for (int node : {2, 3}) {
    sicm_arena a = Create(node);
    ASSERT_NE(nullptr, a);
    auto *mine = FilledBlock(a, kBlock, 1);
    ASSERT_NE(nullptr, mine);
    int to_parent[2];
    ASSERT_EQ(0, pipe(to_parent));
    pid_t child = fork();
    if (child == 0) {
      sicm_arena b = AttachInChild(a);
      auto *theirs = static_cast<unsigned char *>(sicm_arena_alloc(b, kBlock));
      if (theirs == nullptr) _exit(10);
      Fill(theirs, kBlock, 2);
      if (PagesNotOn(theirs, kBlock, node) != 0) _exit(11);
      if (!Verify(mine, kBlock, 1) || PagesNotOn(mine, kBlock, node) != 0) _exit(12);
      if (write(to_parent[1], &theirs, sizeof theirs) != sizeof theirs) _exit(13);
      _exit(0);
    }
    unsigned char *theirs = nullptr;
    ASSERT_EQ((ssize_t)sizeof theirs, read(to_parent[0], &theirs, sizeof theirs));
    EXPECT_EQ(0, WaitExit(child));
    close(to_parent[0]);
    close(to_parent[1]);
    EXPECT_EQ(0u, PagesNotOn(mine, kBlock, node));
    // The child's pages count although this process never touched them.
    size_t bytes[8] = {0};
    ASSERT_EQ(0, sicm_arena_residency(a, bytes, 8));
    EXPECT_GE(bytes[node], 2 * kBlock);
    EXPECT_EQ(0u, BytesOff(a, node));
    EXPECT_TRUE(Verify(theirs, kBlock, 2));
    EXPECT_EQ(0u, PagesNotOn(theirs, kBlock, node));
    sicm_free(theirs);
    sicm_free(mine);
    EXPECT_EQ(0, sicm_arena_check(a, nullptr)) << sicm_error_detail();
    EXPECT_EQ(0, sicm_arena_detach(a));
    EXPECT_EQ(0, sicm_arena_unlink(name_.c_str()));
  }
}

// A file-backed arena on tmpfs (which honours memory policies): its pages
// are on its device, and a move puts them on another, data intact.
TEST_F(SharedNuma, AFileBackedArenaOnTmpfsIsPlacedAndMoved) {
  sicm_arena a = sicm_arena_create_file("/dev/shm", 32 << 20, sicm_device_of_node(2, 0));
  ASSERT_NE(nullptr, a) << sicm_error_detail();
  auto *p = FilledBlock(a, kBlock, 7);
  ASSERT_NE(nullptr, p);
  EXPECT_EQ(0u, PagesNotOn(p, kBlock, 2));
  EXPECT_EQ(0u, BytesOff(a, 2));
  ASSERT_EQ(0, sicm_arena_set_device(a, sicm_device_of_node(1, 0))) << sicm_error_detail();
  EXPECT_EQ(0u, PagesNotOn(p, kBlock, 1));
  EXPECT_EQ(0u, BytesOff(a, 1));
  EXPECT_TRUE(Verify(p, kBlock, 7));
  sicm_free(p);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

TEST_F(SharedNuma, MigrationMovesThePagesOfEveryAttachedProcess) {
  sicm_arena a = Create(2);
  ASSERT_NE(nullptr, a);
  auto *mine = FilledBlock(a, kBlock, 3);
  ASSERT_NE(nullptr, mine);
  int ready[2], go[2];
  ASSERT_EQ(0, pipe(ready));
  ASSERT_EQ(0, pipe(go));
  pid_t child = fork();
  if (child == 0) {
    sicm_arena b = AttachInChild(a);
    auto *theirs = static_cast<unsigned char *>(sicm_arena_alloc(b, kBlock));
    if (theirs == nullptr || !Verify(mine, kBlock, 3)) _exit(10);  // maps `mine` here too
    Fill(theirs, kBlock, 4);
    char c = 0;
    if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1) _exit(11);
    // The parent moved the arena meanwhile.
    if (PagesNotOn(mine, kBlock, 3) || PagesNotOn(theirs, kBlock, 3)) _exit(12);
    if (!Verify(mine, kBlock, 3) || !Verify(theirs, kBlock, 4)) _exit(13);
    sicm_device *dev = sicm_arena_get_device(b);
    if (dev == nullptr || dev->node != 3) _exit(14);
    auto *later = static_cast<unsigned char *>(sicm_arena_alloc(b, 1 << 20));
    if (later == nullptr) _exit(15);
    memset(later, 1, 1 << 20);
    if (PagesNotOn(later, 1 << 20, 3)) _exit(16);
    _exit(0);
  }
  char c;
  ASSERT_EQ(1, read(ready[0], &c, 1));
  ASSERT_EQ(0, sicm_arena_set_device(a, sicm_device_of_node(3, 0))) << sicm_error_detail();
  sicm_migration_report r;
  ASSERT_EQ(0, sicm_arena_last_migration(a, &r));
  EXPECT_GE(r.bytes_moved, 2 * kBlock) << "the child's block moved too";
  EXPECT_EQ(0u, BytesOff(a, 3));
  ASSERT_EQ(1, write(go[1], &c, 1));
  EXPECT_EQ(0, WaitExit(child));
  EXPECT_TRUE(Verify(mine, kBlock, 3));
  EXPECT_EQ(0, sicm_arena_check(a, nullptr)) << sicm_error_detail();
  EXPECT_EQ(0, sicm_arena_detach(a));
}

// Two ranks move the arena at the same moment, to different devices, five
// times: each migration succeeds, and after each round every page is on the
// device the arena records, as every process sees it.
TEST_F(SharedNuma, ConcurrentMigrationsFromTwoProcessesEndOnTheRecordedDevice) {
  sicm_arena a = Create(2);
  ASSERT_NE(nullptr, a);
  auto *mine = FilledBlock(a, 2 * kBlock, 6);
  ASSERT_NE(nullptr, mine);
  const int kRounds = 5;
  int go[2], done[2];
  ASSERT_EQ(0, pipe(go));
  ASSERT_EQ(0, pipe(done));
  pid_t child = fork();
  if (child == 0) {
    sicm_arena b = AttachInChild(a);
    if (!Verify(mine, 2 * kBlock, 6)) _exit(10);  // maps every page here too
    for (int round = 0; round < kRounds; round++) {
      char c;
      if (read(go[0], &c, 1) != 1) _exit(11);
      if (sicm_arena_set_device(b, sicm_device_of_node(round % 2 ? 3 : 2, 0)) != 0) _exit(12);
      if (write(done[1], &c, 1) != 1) _exit(13);
    }
    _exit(Verify(mine, 2 * kBlock, 6) ? 0 : 14);
  }
  for (int round = 0; round < kRounds; round++) {
    char c = 0;
    ASSERT_EQ(1, write(go[1], &c, 1));
    EXPECT_EQ(0, sicm_arena_set_device(a, sicm_device_of_node(round % 2 ? 2 : 3, 0)))
        << "round " << round << ": " << sicm_error_detail();
    ASSERT_EQ(1, read(done[0], &c, 1));
    sicm_device *dev = sicm_arena_get_device(a);
    ASSERT_NE(nullptr, dev);
    EXPECT_TRUE(dev->node == 2 || dev->node == 3);
    EXPECT_EQ(0u, PagesNotOn(mine, 2 * kBlock, dev->node)) << "round " << round;
    EXPECT_EQ(0u, BytesOff(a, dev->node)) << "round " << round;
  }
  EXPECT_EQ(0, WaitExit(child));
  EXPECT_TRUE(Verify(mine, 2 * kBlock, 6));
  EXPECT_EQ(0, sicm_arena_check(a, nullptr)) << sicm_error_detail();
  EXPECT_EQ(0, sicm_arena_detach(a));
}

// Drops CAP_SYS_NICE from this process's effective set.
bool DropSysNice() {
  __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2];
  if (syscall(SYS_capget, &header, data) != 0) return false;
  data[CAP_SYS_NICE / 32].effective &= ~(1u << (CAP_SYS_NICE % 32));
  return syscall(SYS_capset, &header, data) == 0;
}

TEST_F(SharedNuma, MigrationWithoutCapSysNiceIsEpermAndMovesNothing) {
  sicm_arena a = Create(2);
  ASSERT_NE(nullptr, a);
  auto *mine = FilledBlock(a, kBlock, 5);
  ASSERT_NE(nullptr, mine);
  pid_t child = fork();
  if (child == 0) {
    sicm_arena b = AttachInChild(a);
    if (!Verify(mine, kBlock, 5) || !DropSysNice()) _exit(10);
    errno = 0;
    if (sicm_arena_set_device(b, sicm_device_of_node(3, 0)) != -1 || errno != EPERM) _exit(11);
    if (strstr(sicm_error_detail(), "CAP_SYS_NICE") == nullptr) _exit(12);
    if (PagesNotOn(mine, kBlock, 2) != 0 || !Verify(mine, kBlock, 5)) _exit(13);
    sicm_device *dev = sicm_arena_get_device(b);
    if (dev == nullptr || dev->node != 2) _exit(14);
    _exit(0);
  }
  EXPECT_EQ(0, WaitExit(child));
  EXPECT_EQ(0u, BytesOff(a, 2));
  EXPECT_EQ(0u, PagesNotOn(mine, kBlock, 2));
  EXPECT_TRUE(Verify(mine, kBlock, 5));
  EXPECT_EQ(0, sicm_arena_detach(a));
}

}  // namespace
