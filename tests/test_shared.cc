/* SPDX-License-Identifier: BSD-3-Clause */
// test_shared.cc: shared arenas on this machine — names, attach errors, the
// heap's calls and invariants, processes and threads sharing one heap
// (crashes: test_shared_crash.cc; placement and migration: the guest).
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "shared_test.h"

namespace {

using namespace shared_test;

class Shared : public sicm_test::LocalDevice {
 protected:
  void TearDown() override {
    for (const std::string &n : names_)
      shm_unlink(n.c_str());
  }
  sicm_arena Create(size_t size, std::string *name_out = nullptr, const char *what = "a") {
    std::string name = UniqueName(what);
    names_.push_back(name);
    sicm_arena a = sicm_arena_create_shared(name.c_str(), size, dev_, 0);
    EXPECT_NE(nullptr, a) << sicm_error_detail();
    if (name_out) *name_out = name;
    return a;
  }
  void ExpectHeapOk(sicm_arena a, sicm_heap_report *r = nullptr) {
    sicm_heap_report local;
    EXPECT_EQ(0, sicm_arena_check(a, r ? r : &local)) << sicm_error_detail();
  }
  std::vector<std::string> names_;
};
// The same fixture for the long runs of `make check-stress`.
class SharedStress : public Shared {};

TEST(SharedUninitialized, CreateAndAttachFailWithEperm) {
  errno = 0;
  EXPECT_EQ(nullptr, sicm_arena_create_shared("/sicm-x", 1 << 20, nullptr, 0));
  EXPECT_EQ(EPERM, errno);
  errno = 0;
  EXPECT_EQ(nullptr, sicm_arena_attach("/sicm-x"));
  EXPECT_EQ(EPERM, errno);
}

TEST_F(Shared, BadNamesSizesAndModesAreEinval) {
  const char *bad[] = {nullptr, "", "/", "noslash", "/.", "/..", "/a/b", "/sp ace", "/semi;colon"};
  for (const char *n : bad) {
    errno = 0;
    EXPECT_EQ(nullptr, sicm_arena_create_shared(n, 1 << 20, dev_, 0)) << (n ? n : "null");
    EXPECT_EQ(EINVAL, errno);
    errno = 0;
    EXPECT_EQ(nullptr, sicm_arena_attach(n));
    EXPECT_EQ(EINVAL, errno);
    EXPECT_EQ(-1, sicm_arena_unlink(n));
    EXPECT_EQ(EINVAL, errno);
  }
  std::string longest = "/" + std::string(200, 'x'), too_long = longest + "x";
  errno = 0;
  EXPECT_EQ(nullptr, sicm_arena_create_shared(too_long.c_str(), 1 << 20, dev_, 0));
  EXPECT_EQ(EINVAL, errno);
  std::string name = UniqueName("sizes");
  names_.push_back(name);
  errno = 0;
  EXPECT_EQ(nullptr, sicm_arena_create_shared(name.c_str(), 4096, dev_, 0));
  EXPECT_EQ(EINVAL, errno);
  EXPECT_EQ(nullptr, sicm_arena_create_shared(name.c_str(), 1 << 20, dev_, 01000));
  EXPECT_EQ(EINVAL, errno);
  EXPECT_EQ(nullptr, sicm_arena_create_shared(name.c_str(), 1 << 20, nullptr, 0));
  EXPECT_EQ(EINVAL, errno);
  EXPECT_EQ(nullptr, sicm_arena_create_shared(name.c_str(), (size_t)32 << 40, dev_, 0))
      << "more than /dev/shm holds";
  EXPECT_EQ(ENOSPC, errno);
  // Nothing was left behind by the failures.
  EXPECT_EQ(nullptr, sicm_arena_attach(name.c_str()));
  EXPECT_EQ(ENOENT, errno);
  sicm_arena a = sicm_arena_create_shared(longest.c_str(), 1 << 20, dev_, 0);
  ASSERT_NE(nullptr, a) << sicm_error_detail();
  EXPECT_EQ(0, sicm_arena_detach(a));
  EXPECT_EQ(0, sicm_arena_unlink(longest.c_str()));
}

TEST_F(Shared, ModeIs0600UnlessGivenWhateverTheUmask) {
  mode_t old = umask(077);
  std::string a_name = UniqueName("mode"), b_name = UniqueName("mode");
  names_.push_back(a_name);
  names_.push_back(b_name);
  sicm_arena a = sicm_arena_create_shared(a_name.c_str(), 1 << 20, dev_, 0);
  sicm_arena b = sicm_arena_create_shared(b_name.c_str(), 1 << 20, dev_, 0640);
  umask(old);
  ASSERT_NE(nullptr, a);
  ASSERT_NE(nullptr, b);
  struct stat st;
  ASSERT_EQ(0, stat(("/dev/shm" + a_name).c_str(), &st));
  EXPECT_EQ(0600u, st.st_mode & 0777);
  ASSERT_EQ(0, stat(("/dev/shm" + b_name).c_str(), &st));
  EXPECT_EQ(0640u, st.st_mode & 0777);
  EXPECT_EQ(0, sicm_arena_detach(a));
  EXPECT_EQ(0, sicm_arena_detach(b));
}

TEST_F(Shared, CreateTwiceIsEexistAndMissingIsEnoent) {
  std::string name;
  sicm_arena a = Create(1 << 20, &name);
  errno = 0;
  EXPECT_EQ(nullptr, sicm_arena_create_shared(name.c_str(), 1 << 20, dev_, 0));
  EXPECT_EQ(EEXIST, errno);
  EXPECT_EQ(a, sicm_arena_attach(name.c_str())) << "attaching again gives the same arena";
  EXPECT_EQ(0, sicm_arena_detach(a));
  EXPECT_EQ(-1, sicm_arena_detach(a));
  EXPECT_EQ(ESTALE, errno);
  EXPECT_EQ(0, sicm_arena_unlink(name.c_str()));
  EXPECT_EQ(nullptr, sicm_arena_attach(name.c_str()));
  EXPECT_EQ(ENOENT, errno);
  EXPECT_EQ(-1, sicm_arena_unlink(name.c_str()));
  EXPECT_EQ(ENOENT, errno);
  sicm_arena priv = sicm_arena_create(0, dev_);
  ASSERT_NE(nullptr, priv);
  EXPECT_EQ(-1, sicm_arena_detach(priv));
  EXPECT_EQ(EINVAL, errno);
  EXPECT_EQ(-1, sicm_arena_check(priv, nullptr));
  EXPECT_EQ(EINVAL, errno);
  EXPECT_EQ(0, sicm_arena_destroy(priv));
}

TEST_F(Shared, AllocationCallsWorkAndKeepTheHeapConsistent) {
  sicm_arena a = Create(4 << 20);
  ASSERT_NE(nullptr, a);
  EXPECT_EQ((size_t)4 << 20, sicm_arena_size(a));
  char *p = static_cast<char *>(sicm_arena_alloc(a, 100));
  ASSERT_NE(nullptr, p);
  EXPECT_EQ(0u, (uintptr_t)p % 16);
  EXPECT_EQ(a, sicm_arena_lookup(p));
  EXPECT_EQ(a, sicm_arena_lookup(p + 99));
  EXPECT_GE(sicm_usable_size(p), 100u);
  Fill(p, 100, 1);
  p = static_cast<char *>(sicm_realloc(p, 5000));  // grows in place or moves
  ASSERT_NE(nullptr, p);
  EXPECT_TRUE(Verify(p, 100, 1));
  p = static_cast<char *>(sicm_arena_realloc(a, p, 40));
  ASSERT_NE(nullptr, p);
  EXPECT_TRUE(Verify(p, 40, 1));
  for (size_t align : {32, 64, 4096, 1 << 16}) {
    void *q = sicm_arena_aligned_alloc(a, align, 24);
    ASSERT_NE(nullptr, q) << align;
    EXPECT_EQ(0u, (uintptr_t)q % align);
    ExpectHeapOk(a);
    sicm_free(q);
  }
  auto *z = static_cast<unsigned char *>(sicm_arena_calloc(a, 1000, 3));
  ASSERT_NE(nullptr, z);
  for (int i = 0; i < 3000; i++) ASSERT_EQ(0, z[i]);
  sicm_heap_report r;
  ExpectHeapOk(a, &r);
  EXPECT_EQ(2u, r.blocks_used);
  sicm_arena_stats st;
  ASSERT_EQ(0, sicm_arena_get_stats(a, &st));
  EXPECT_GE(st.allocated, 3040u);
  EXPECT_EQ((size_t)4 << 20, st.mapped);
  sicm_free(z);
  sicm_free(p);
  ExpectHeapOk(a, &r);
  EXPECT_EQ(0u, r.blocks_used);
  EXPECT_EQ(1u, r.blocks_free) << "every block coalesced back into one";
  EXPECT_EQ(0, sicm_arena_detach(a));
}

TEST_F(Shared, BadPointersAndDoubleFreesAreRefusedWithoutDamage) {
  sicm_arena a = Create(1 << 20);
  ASSERT_NE(nullptr, a);
  char *p = static_cast<char *>(sicm_arena_alloc(a, 256));
  char *q = static_cast<char *>(sicm_arena_alloc(a, 256));
  ASSERT_TRUE(p && q);
  Fill(q, 256, 9);
  sicm_free(p);
  errno = 0;
  sicm_free(p);  // twice
  EXPECT_EQ(EINVAL, errno);
  errno = 0;
  sicm_free(q + 16);  // inside a block
  EXPECT_EQ(EINVAL, errno);
  EXPECT_EQ(nullptr, sicm_realloc(q + 32, 10));
  EXPECT_EQ(EINVAL, errno);
  EXPECT_EQ(0u, sicm_usable_size(q + 48));
  EXPECT_EQ(nullptr, sicm_arena_alloc(a, 0));
  EXPECT_EQ(EINVAL, errno);
  EXPECT_EQ(nullptr, sicm_arena_alloc(a, SIZE_MAX));
  EXPECT_EQ(ENOMEM, errno);
  EXPECT_EQ(nullptr, sicm_realloc(q, 0));
  EXPECT_EQ(EINVAL, errno);
  EXPECT_TRUE(Verify(q, 256, 9));
  sicm_heap_report r;
  ExpectHeapOk(a, &r);
  EXPECT_EQ(1u, r.blocks_used);
  sicm_free(q);
  EXPECT_EQ(0, sicm_arena_detach(a));
}

TEST_F(Shared, FullArenaIsEnomemAndRecovers) {
  sicm_arena a = Create(1 << 20);
  ASSERT_NE(nullptr, a);
  std::vector<void *> blocks;
  std::mt19937 rng(7);
  void *p;
  // Random churn (3 allocations per free) until the first failure: what
  // fragmentation costs is the share of the heap still in free blocks then.
  size_t requested = 0;
  std::vector<size_t> sizes;
  for (;;) {
    if (!blocks.empty() && rng() % 4 == 0) {
      size_t k = rng() % blocks.size();
      sicm_free(blocks[k]);
      requested -= sizes[k];
      blocks[k] = blocks.back();
      sizes[k] = sizes.back();
      blocks.pop_back();
      sizes.pop_back();
      continue;
    }
    size_t n = 16 + rng() % 3000;
    if ((p = sicm_arena_alloc(a, n)) == nullptr) break;
    blocks.push_back(p);
    sizes.push_back(n);
    requested += n;
  }
  EXPECT_EQ(ENOMEM, errno);
  sicm_heap_report r;
  ExpectHeapOk(a, &r);
  printf("first ENOMEM with %zu live blocks: %.1f%% of the heap requested, %.1f%% in blocks, "
         "%zu free blocks, largest %zu bytes\n", blocks.size(), 100.0 * requested / (1 << 20),
         100.0 * r.bytes_used / (r.bytes_used + r.bytes_free), r.blocks_free, r.largest_free);
  EXPECT_GT(requested, (size_t)(1 << 20) * 80 / 100) << "fragmentation above 20%";
  for (size_t i = 0; i < blocks.size(); i += 2) sicm_free(blocks[i]);
  EXPECT_NE(nullptr, p = sicm_arena_alloc(a, 3000));
  sicm_free(p);
  for (size_t i = 1; i < blocks.size(); i += 2) sicm_free(blocks[i]);
  ExpectHeapOk(a, &r);
  EXPECT_EQ(0u, r.blocks_used);
  EXPECT_EQ(1u, r.blocks_free);
  EXPECT_EQ(0, sicm_arena_detach(a));
}

// ---- attach errors ----

// Writes `bytes` as a new shm object; returns false on failure.
bool WriteObject(const std::string &name, const void *bytes, size_t len, size_t total) {
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return false;
  if (len > total) len = total;
  bool ok = ftruncate(fd, (off_t)total) == 0 && pwrite(fd, bytes, len, 0) == (ssize_t)len;
  close(fd);
  return ok;
}

TEST_F(Shared, AttachRefusesForeignVersionLayoutAndTruncatedObjects) {
  std::string name;
  sicm_arena a = Create(1 << 20, &name);
  ASSERT_NE(nullptr, a);
  // A copy of a real header, changed field by field.
  std::vector<char> header(16384);
  int fd = shm_open(name.c_str(), O_RDONLY, 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ((ssize_t)header.size(), pread(fd, header.data(), header.size(), 0));
  close(fd);
  struct Case { const char *what; size_t offset; uint32_t value; size_t total; int err; };
  const Case cases[] = {
      {"other version", 8, 99, 1 << 20, EPROTO},
      {"other layout", 12, 0x12345678, 1 << 20, EPROTO},
      {"truncated", 12, 0, 256 << 10, EBADMSG},  // value 0: header unchanged
      {"shorter than its header", 12, 0, 4096, EBADMSG},
  };
  for (const Case &c : cases) {
    std::vector<char> h = header;
    if (c.value) memcpy(h.data() + c.offset, &c.value, sizeof c.value);
    std::string n = UniqueName("foreign");
    names_.push_back(n);
    ASSERT_TRUE(WriteObject(n, h.data(), h.size(), c.total));
    errno = 0;
    EXPECT_EQ(nullptr, sicm_arena_attach(n.c_str())) << c.what;
    EXPECT_EQ(c.err, errno) << c.what << ": " << sicm_error_detail();
  }
  std::string junk = UniqueName("junk");
  names_.push_back(junk);
  ASSERT_TRUE(WriteObject(junk, "not an arena, not zero", 22, 1 << 20));
  errno = 0;
  EXPECT_EQ(nullptr, sicm_arena_attach(junk.c_str()));
  EXPECT_EQ(EPROTO, errno);
  EXPECT_EQ(0, sicm_arena_detach(a));
}

TEST_F(Shared, AttachToATakenAddressIsEexistAndClobbersNothing) {
  std::string name;
  sicm_arena a = Create(1 << 20, &name);
  ASSERT_NE(nullptr, a);
  void *base = sicm_arena_alloc(a, 64);
  ASSERT_NE(nullptr, base);
  uintptr_t page = (uintptr_t)base & ~(uintptr_t)4095;
  ASSERT_EQ(0, sicm_arena_detach(a));
  // Something else now lives in the arena's range.
  auto *squatter = static_cast<int *>(mmap((void *)page, 4096, PROT_READ | PROT_WRITE,
                                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                                           -1, 0));
  ASSERT_EQ((void *)page, (void *)squatter);
  *squatter = 4242;
  errno = 0;
  EXPECT_EQ(nullptr, sicm_arena_attach(name.c_str()));
  EXPECT_EQ(EEXIST, errno);
  EXPECT_NE(nullptr, strstr(sicm_error_detail(), "already uses")) << sicm_error_detail();
  EXPECT_EQ(4242, *squatter);
  munmap(squatter, 4096);
  sicm_arena again = sicm_arena_attach(name.c_str());
  ASSERT_NE(nullptr, again) << sicm_error_detail();
  EXPECT_EQ(again, sicm_arena_lookup(base)) << "same address as before";
  sicm_free(base);
  ExpectHeapOk(again);
  EXPECT_EQ(0, sicm_arena_detach(again));
}

// A creator holds an open-file-description lock on the object until its
// header is complete; here the test plays a creator that is still at work.
TEST_F(Shared, AttachWaitsForACreatorStillBuildingThenEagain) {
  std::string n = UniqueName("unfinished");
  names_.push_back(n);
  std::vector<char> zeros(16384);
  ASSERT_TRUE(WriteObject(n, zeros.data(), zeros.size(), 1 << 20));
  int fd = shm_open(n.c_str(), O_RDWR, 0);
  ASSERT_GE(fd, 0);
  struct flock lock = {};
  lock.l_type = F_WRLCK;
  ASSERT_EQ(0, fcntl(fd, F_OFD_SETLK, &lock));
  errno = 0;
  EXPECT_EQ(nullptr, sicm_arena_attach(n.c_str()));
  EXPECT_EQ(EAGAIN, errno) << sicm_error_detail();
  close(fd);
}

// The same object with nobody building it is abandoned: refused at once.
TEST_F(Shared, AttachRefusesAnObjectNobodyIsBuildingWithEnoent) {
  std::string n = UniqueName("abandoned");
  names_.push_back(n);
  std::vector<char> zeros(16384);
  ASSERT_TRUE(WriteObject(n, zeros.data(), zeros.size(), 1 << 20));
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  errno = 0;
  EXPECT_EQ(nullptr, sicm_arena_attach(n.c_str()));
  EXPECT_EQ(ENOENT, errno) << sicm_error_detail();
  clock_gettime(CLOCK_MONOTONIC, &t1);
  EXPECT_LT(t1.tv_sec - t0.tv_sec, 1) << "waited for a creator that is not there";
  EXPECT_NE(nullptr, strstr(sicm_error_detail(), "never finished")) << sicm_error_detail();
}

// ---- several processes ----

// Runs fn in a child that attaches `name` itself; returns its exit status.
template <typename Fn>
pid_t Spawn(sicm_arena inherited, const std::string &name, Fn fn) {
  pid_t pid = fork();
  if (pid == 0) {
    // Through the attach path, as an unrelated process would.
    if (sicm_arena_detach(inherited) != 0) _exit(90);
    sicm_arena a = sicm_arena_attach(name.c_str());
    if (a == nullptr) _exit(91);
    _exit(fn(a));
  }
  return pid;
}

TEST_F(Shared, MemoryFreedByOneProcessIsReusedByAnother) {
  std::string name;
  sicm_arena a = Create(1 << 20, &name);
  ASSERT_NE(nullptr, a);
  void *keep = sicm_arena_alloc(a, 100);  // below, so the freed block is not the heap's start
  void *p = sicm_arena_alloc(a, 1000);
  void *fence = sicm_arena_alloc(a, 100);  // keeps p from merging with the rest
  ASSERT_TRUE(keep && p && fence);
  pid_t child = Spawn(a, name, [p](sicm_arena b) {
    errno = 0;
    sicm_free(p);  // into the thread's cache; the detach gives it back
    return errno == 0 && sicm_arena_detach(b) == 0 ? 0 : 1;
  });
  errno = 0;
  ASSERT_EQ(0, WaitExit(child));
  EXPECT_EQ(p, sicm_arena_alloc(a, 1000)) << "the block the child freed";
  child = Spawn(a, name, [p](sicm_arena b) {
    sicm_free(p);
    return sicm_arena_alloc(b, 1000) == p ? 0 : 1;
  });
  EXPECT_EQ(0, WaitExit(child));
  sicm_heap_report r;
  ExpectHeapOk(a, &r);
  EXPECT_EQ(3u, r.blocks_used);
  EXPECT_EQ(0, sicm_arena_detach(a));
}

TEST_F(Shared, ForkedProcessesAllocateAndFreeConcurrently) {
  std::string name;
  sicm_arena a = Create(32 << 20, &name);
  ASSERT_NE(nullptr, a);
  auto *box = static_cast<Mailbox *>(mmap(nullptr, sizeof(Mailbox), PROT_READ | PROT_WRITE,
                                          MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(MAP_FAILED, (void *)box);
  std::vector<pid_t> children;
  for (unsigned id = 1; id <= 3; id++)
    children.push_back(Spawn(a, name, [box, id](sicm_arena b) { return Traffic(b, box, id, 60000); }));
  EXPECT_EQ(0, Traffic(a, box, 0, 60000));
  for (pid_t c : children) EXPECT_EQ(0, WaitExit(c));
  for (void *&p : box->slot)
    if (p) sicm_free(p);
  sicm_heap_report r;
  ExpectHeapOk(a, &r);
  EXPECT_EQ(0u, r.blocks_used) << "every block was freed by some process";
  EXPECT_EQ(0u, r.repairs);
  munmap(box, sizeof(Mailbox));
  EXPECT_EQ(0, sicm_arena_detach(a));
}

TEST_F(Shared, ThreadsOfOneProcessShareTheHeap) {
  sicm_arena a = Create(16 << 20);
  ASSERT_NE(nullptr, a);
  auto *box = static_cast<Mailbox *>(mmap(nullptr, sizeof(Mailbox), PROT_READ | PROT_WRITE,
                                          MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(MAP_FAILED, (void *)box);
  int results[3] = {-1, -1, -1};
  std::vector<std::thread> threads;
  for (unsigned id = 0; id < 3; id++)
    threads.emplace_back([&, id] { results[id] = Traffic(a, box, 50 + id, 20000); });
  for (std::thread &t : threads) t.join();
  for (int r : results) EXPECT_EQ(0, r);
  for (void *&p : box->slot)
    if (p) sicm_free(p);
  sicm_heap_report r;
  ExpectHeapOk(a, &r);
  EXPECT_EQ(0u, r.blocks_used);
  munmap(box, sizeof(Mailbox));
  EXPECT_EQ(0, sicm_arena_detach(a));
}

// ---- the threads' caches of freed blocks ----

TEST_F(Shared, AThreadsFreedBlocksWaitInItsCacheUntilItExits) {
  sicm_arena a = Create(1 << 20);
  ASSERT_NE(nullptr, a);
  void *p = sicm_arena_alloc(a, 64), *q = nullptr;
  ASSERT_NE(nullptr, p);
  std::atomic<int> step{0};
  std::thread t([&] {
    sicm_free(p);
    q = sicm_arena_alloc(a, 64);  // the block it just freed
    sicm_free(q);
    step = 1;
    while (step != 2) usleep(100);
  });
  while (step != 1) usleep(100);
  EXPECT_EQ(p, q);
  sicm_heap_report r;
  ExpectHeapOk(a, &r);
  EXPECT_EQ(1u, r.blocks_used) << "the block waits in the other thread's cache";
  errno = 0;
  sicm_free(p);
  EXPECT_EQ(EINVAL, errno) << "a cached block is a freed block";
  step = 2;
  t.join();
  ExpectHeapOk(a, &r);
  EXPECT_EQ(0u, r.blocks_used) << "the thread's exit gave it back";
  EXPECT_EQ(1u, r.blocks_free);
  EXPECT_EQ(0, sicm_arena_detach(a));
}

// A child that dies with blocks in its cache, by exit or by SIGKILL: they
// go back at the next check, and an allocation that finds the heap full
// takes them back too.
TEST_F(Shared, BlocksCachedByAForkedChildThatDiedGoBackToTheHeap) {
  std::string name;
  sicm_arena a = Create(1 << 20, &name);
  ASSERT_NE(nullptr, a);
  for (int how : {0, SIGKILL}) {
    std::vector<void *> blocks;
    for (void *p; (p = sicm_arena_alloc(a, 64)) != nullptr;) blocks.push_back(p);
    ASSERT_EQ(ENOMEM, errno);
    ASSERT_GT(blocks.size(), 8u);
    std::vector<void *> freed(blocks.end() - 4, blocks.end());
    blocks.resize(blocks.size() - 4);
    pid_t child = Spawn(a, name, [&](sicm_arena) {
      for (void *p : freed) sicm_free(p);
      if (how) raise(how);
      return 0;
    });
    EXPECT_EQ(how ? 128 + how : 0, WaitExit(child));
    void *again = sicm_arena_alloc(a, 64);
    EXPECT_TRUE(again == freed[0] || again == freed[1] || again == freed[2] || again == freed[3])
        << "the full heap took back the dead child's cache";
    if (again) blocks.push_back(again);
    for (void *p : blocks) sicm_free(p);
    sicm_heap_report r;
    ExpectHeapOk(a, &r);
    EXPECT_EQ(0u, r.blocks_used);
    EXPECT_EQ(1u, r.blocks_free);
  }
  EXPECT_EQ(0, sicm_arena_detach(a));
}

// A forked child inherits its parent's thread cache in its copy of memory;
// the blocks are still the parent's, so the child must not hand them out.
TEST_F(Shared, AForkedChildDoesNotReuseItsParentsCachedBlocks) {
  sicm_arena a = Create(1 << 20);
  ASSERT_NE(nullptr, a);
  void *p = sicm_arena_alloc(a, 200);
  ASSERT_NE(nullptr, p);
  sicm_free(p);
  pid_t child = fork();
  if (child == 0) {
    void *q = sicm_arena_alloc(a, 200);
    sicm_free(q);
    _exit(q == nullptr ? 2 : q == p ? 1 : 0);
  }
  EXPECT_EQ(0, WaitExit(child));
  EXPECT_EQ(p, sicm_arena_alloc(a, 200)) << "still in the parent's cache";
  sicm_free(p);
  sicm_heap_report r;
  ExpectHeapOk(a, &r);
  EXPECT_EQ(0u, r.blocks_used) << "the child's cache went back when it exited";
  EXPECT_EQ(0, sicm_arena_detach(a));
}

// Threads of a process that has not attached the arena yet attach it at
// once: each trial, every one gets the same handle (one mapping).
TEST_F(SharedStress, ConcurrentAttachesOfOneArenaReturnOneHandle) {
  std::string name;
  sicm_arena created = Create(1 << 20, &name);
  ASSERT_NE(nullptr, created);
  pid_t pid = fork();
  if (pid == 0) {
    if (sicm_arena_detach(created) != 0) _exit(90);
    const unsigned trials = 1000, nthreads = 4;
    unsigned failures = 0;
    for (unsigned t = 0; t < trials; t++) {
      sicm_arena got[nthreads];
      std::atomic<unsigned> ready{0};
      std::vector<std::thread> threads;
      for (unsigned i = 0; i < nthreads; i++)
        threads.emplace_back([&, i] {
          ready.fetch_add(1);
          while (ready.load() < nthreads) {
          }
          got[i] = sicm_arena_attach(name.c_str());
        });
      for (std::thread &th : threads) th.join();
      bool same = got[0] != nullptr;
      for (unsigned i = 1; i < nthreads; i++) same &= got[i] == got[0];
      failures += !same;
      if (got[0] != nullptr && sicm_arena_detach(got[0]) != 0) _exit(91);
    }
    _exit(failures == 0 ? 0 : failures > 200 ? 200 : (int)failures);
  }
  ASSERT_GT(pid, 0);
  EXPECT_EQ(0, WaitExit(pid)) << "trials in which the threads got different handles (or none)";
  EXPECT_EQ(0, sicm_arena_detach(created));
}

}  // namespace
