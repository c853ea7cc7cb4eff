/* SPDX-License-Identifier: BSD-3-Clause */
// test_front.cc: a thread's front, which the header's inline path and the
// library's called functions serve, and how a destroy makes every thread's
// front stale or closed.
#include <errno.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "sicm_test.h"

namespace {

class Front : public sicm_test::LocalDevice {
 protected:
  sicm_arena Create() {
    sicm_arena a = sicm_arena_create(0, dev_);
    EXPECT_NE(nullptr, a) << sicm_error_detail();
    return a;
  }
};

// The header's inline calls and the library's functions serve the same
// bins: a region freed either way is the next one handed out either way.
TEST_F(Front, InlineAndCalledPathsShareTheThreadsBins) {
  sicm_arena a = Create();
  sicm_free(sicm_arena_alloc(a, 64));  // makes this thread's cache
  void *p = (sicm_arena_alloc)(a, 64); // makes a this thread's front
  (sicm_free)(p);
  void *q = sicm_arena_alloc(a, 64);
  EXPECT_EQ(p, q);
  sicm_free(q);
  void *r = (sicm_arena_alloc)(a, 64);
  EXPECT_EQ(q, r);
  EXPECT_EQ(a, sicm_arena_lookup(r));
  sicm_free(r);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

// A thread's front names a destroyed arena: neither the stale handle nor
// a new arena in the same slot and window may reach its bins.
TEST_F(Front, InlineFrontOfADestroyedArenaIsNeverUsed) {
  sicm_arena a = Create();
  sicm_free(sicm_arena_alloc(a, 64));
  void *p = (sicm_arena_alloc)(a, 64); // a is the front, p in its bin below
  sicm_free(p);
  ASSERT_EQ(0, sicm_arena_destroy(a));
  errno = 0;
  EXPECT_EQ(nullptr, sicm_arena_alloc(a, 64));
  EXPECT_EQ(ESTALE, errno);
  sicm_arena b = Create();
  std::vector<void *> from_b;
  for (int i = 0; i < 8; i++) {
    from_b.push_back(sicm_arena_alloc(b, 64));
    ASSERT_NE(nullptr, from_b.back());
  }
  sicm_arena_stats st;
  ASSERT_EQ(0, sicm_arena_get_stats(b, &st));
  EXPECT_GE(st.allocated, 8 * 64u) << "a region came from a's bins, not b's allocator";
  for (void *q : from_b) sicm_free(q);
  std::set<void *> again;
  for (size_t i = 0; i < from_b.size(); i++) again.insert(sicm_arena_alloc(b, 64));
  EXPECT_EQ(std::set<void *>(from_b.begin(), from_b.end()), again)
      << "b's frees did not reach b's bins";
  for (void *q : again) sicm_free(q);
  EXPECT_EQ(0, sicm_arena_destroy(b));
}

// The same through the called functions, which do not read the epoch: the
// destroy closes the front.
TEST_F(Front, CalledFrontOfADestroyedArenaIsNeverUsed) {
  sicm_arena a = Create();
  (sicm_free)((sicm_arena_alloc)(a, 64));
  void *p = (sicm_arena_alloc)(a, 64);
  (sicm_free)(p);
  ASSERT_EQ(0, sicm_arena_destroy(a));
  errno = 0;
  EXPECT_EQ(nullptr, (sicm_arena_alloc)(a, 64));
  EXPECT_EQ(ESTALE, errno);
  sicm_arena b = Create();
  std::vector<void *> from_b;
  for (int i = 0; i < 8; i++) from_b.push_back((sicm_arena_alloc)(b, 64));
  for (void *q : from_b) (sicm_free)(q);
  std::set<void *> again;
  for (size_t i = 0; i < from_b.size(); i++) again.insert((sicm_arena_alloc)(b, 64));
  EXPECT_EQ(std::set<void *>(from_b.begin(), from_b.end()), again)
      << "b's frees did not reach b's bins";
  for (void *q : again) (sicm_free)(q);
  EXPECT_EQ(0, sicm_arena_destroy(b));
}

// Another thread's front names the arena destroyed, whose slot and window
// the next arena takes.  That thread's frees of the new arena's blocks must
// reach the new arena's bins, and the stale handle must fail there too.
TEST_F(Front, DestroyClosesAnotherThreadsFront) {
  for (int inline_path = 0; inline_path < 2; inline_path++) {
    SCOPED_TRACE(inline_path ? "inline" : "called");
    sicm_arena a = Create(), b = nullptr;
    std::atomic<int> step{0};
    std::vector<void *> handed;
    std::set<void *> again;
    void *stale = nullptr, *in_a = nullptr;
    int stale_errno = 0;
    auto alloc = [&](sicm_arena x) {
      return inline_path ? sicm_arena_alloc(x, 64) : (sicm_arena_alloc)(x, 64);
    };
    auto release = [&](void *p) { inline_path ? sicm_free(p) : (sicm_free)(p); };
    std::thread other([&] {
      release(alloc(a)); // makes this thread's cache
      in_a = alloc(a);   // a is its front, and in_a in its bin below
      release(in_a);
      step = 1;
      while (step != 2) std::this_thread::yield();
      errno = 0;
      stale = alloc(a);
      stale_errno = errno;
      for (void *p : handed) release(p);
      for (size_t i = 0; i < handed.size(); i++) again.insert(alloc(b));
    });
    while (step != 1) std::this_thread::yield();
    ASSERT_EQ(0, sicm_arena_destroy(a));
    b = Create();
    for (int i = 0; i < 8; i++) handed.push_back(alloc(b));
    // The case at stake: b's blocks lie in the chunk (16 GiB) that the
    // other thread's front describes.
    ASSERT_EQ(reinterpret_cast<uintptr_t>(in_a) >> 34,
              reinterpret_cast<uintptr_t>(handed[0]) >> 34);
    step = 2;
    other.join();
    EXPECT_EQ(nullptr, stale);
    EXPECT_EQ(ESTALE, stale_errno);
    EXPECT_EQ(std::set<void *>(handed.begin(), handed.end()), again)
        << "the other thread's frees did not reach b's bins";
    for (void *q : again) sicm_free(q);
    EXPECT_EQ(0, sicm_arena_destroy(b));
  }
}

}  // namespace
