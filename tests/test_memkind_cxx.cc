/* SPDX-License-Identifier: BSD-3-Clause */
// test_memkind_cxx.cc: memkind's C++ allocators as libsicm's headers give
// them — containers on a static kind, on HBW, on a file-backed kind of
// their own and on a fixed kind over the caller's memory; copies and
// rebinds share the kind, a full kind throws std::bad_alloc, bad arguments
// std::invalid_argument.
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <list>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fixed_allocator.h"
#include "hbw_allocator.h"
#include "memkind_allocator.h"
#include "pmem_allocator.h"

namespace {

template <typename Alloc>
void FillAndCheck(const Alloc &alloc) {
  std::vector<int, Alloc> v(alloc);
  for (int i = 0; i < 100000; i++) v.push_back(i);
  long sum = 0;
  for (int x : v) sum += x;
  EXPECT_EQ(100000L * 99999 / 2, sum);
  using pair_alloc = typename std::allocator_traits<Alloc>::template rebind_alloc<std::pair<const int, int>>;
  std::map<int, int, std::less<int>, pair_alloc> m{pair_alloc(alloc)};
  for (int i = 0; i < 1000; i++) m[i] = i * 2;
  EXPECT_EQ(1998, m[999]);
}

TEST(MemkindCxx, StaticKindAndHbwAllocators) {
  libmemkind::static_kind::allocator<int> regular(libmemkind::kinds::REGULAR);
  FillAndCheck(regular);
  libmemkind::static_kind::allocator<long> rebound(regular);
  EXPECT_TRUE(regular == libmemkind::static_kind::allocator<int>(rebound));
  EXPECT_FALSE(regular == libmemkind::static_kind::allocator<int>(libmemkind::kinds::DEFAULT));
  hbw::allocator<int> hbw;
  FillAndCheck(hbw);
}

TEST(MemkindCxx, PmemAllocatorOwnsAFileBackedKind) {
  char dir[] = "/tmp/sicm-pmem-cxx-XXXXXX";
  ASSERT_NE(nullptr, mkdtemp(dir));
  {
    libmemkind::pmem::allocator<int> a(dir, 64 << 20);
    FillAndCheck(a);
    libmemkind::pmem::allocator<int> same(a);
    EXPECT_TRUE(a == same);
    libmemkind::pmem::allocator<int> other(std::string(dir), 64 << 20,
                                           libmemkind::allocation_policy::CONSERVATIVE);
    EXPECT_TRUE(a != other);
    EXPECT_THROW(libmemkind::pmem::allocator<int>(dir, 1), std::invalid_argument);
  }
  EXPECT_EQ(0, rmdir(dir)) << "the kinds' files outlived them";
}

TEST(MemkindCxx, FixedAllocatorUsesTheCallersMemoryAlone) {
  const size_t len = 16 << 20;
  void *buf = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(MAP_FAILED, buf);
  {
    libmemkind::fixed::allocator<int> a(buf, len);
    std::vector<int, libmemkind::fixed::allocator<int>> v(a);
    for (int i = 0; i < 100000; i++) v.push_back(i);
    EXPECT_GE((char *)v.data(), (char *)buf);
    EXPECT_LE((char *)(v.data() + v.size()), (char *)buf + len);
    std::list<int, libmemkind::fixed::allocator<int>> l(a);
    for (int i = 0; i < 1000; i++) l.push_back(i);
    EXPECT_TRUE(a == libmemkind::fixed::allocator<int>(l.get_allocator()));
    EXPECT_THROW(a.allocate(len), std::bad_alloc);
    EXPECT_THROW(libmemkind::fixed::allocator<int>(nullptr, len), std::invalid_argument);
  }
  // The kind is gone with its last copy: the range takes a new one.
  EXPECT_NO_THROW(libmemkind::fixed::allocator<char>(buf, len));
  munmap(buf, len);
}

}  // namespace
