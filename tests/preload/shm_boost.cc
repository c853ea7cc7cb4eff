// SPDX-License-Identifier: BSD-3-Clause
// shm_boost.cc: a POSIX shared-memory segment made by Boost.Interprocess
// (shared_memory_object, truncate, mapped_region), checked page by page.
//
//   shm_boost create NAME MIB NODE   make the segment without touching it,
//       run `shm_boost attach` without LD_PRELOAD to write every page, then
//       read every page back and ask move_pages where each page of this
//       process's mapping is
//   shm_boost attach NAME MIB NODE   (run by create)
//
// NODE -1: report the nodes, check none.  Exit 1 on any mismatch.
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/shared_memory_object.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace bip = boost::interprocess;

static const size_t kPage = 4096;

static uint64_t stamp(size_t page) { return page * 131 + 11; }

static bool check_pages(const char *who, char *base, size_t size, int node) {
  size_t n = size / kPage;
  std::vector<void *> pages(n);
  std::vector<int> status(n, -1);
  for (size_t i = 0; i < n; i++) pages[i] = base + i * kPage;
  if (syscall(SYS_move_pages, 0, n, pages.data(), nullptr, status.data(), 0) != 0) {
    perror("move_pages");
    return false;
  }
  std::map<int, size_t> counts;
  size_t wrong = 0, first = n;
  for (size_t i = 0; i < n; i++) {
    counts[status[i]]++;
    if (node >= 0 && status[i] != node && wrong++ == 0) first = i;
  }
  std::printf("  %s (pid %d): pages per node", who, (int)getpid());
  for (auto &c : counts) std::printf(" %d:%zu", c.first, c.second);
  std::printf("\n");
  if (wrong)
    std::printf("  %s: %zu of %zu pages not on node %d, first at page %zu\n", who, wrong, n, node,
                first);
  std::fflush(stdout);
  return wrong == 0;
}

static int attach(const char *name, size_t size, int node) {
  bip::shared_memory_object seg(bip::open_only, name, bip::read_write);
  bip::mapped_region region(seg, bip::read_write);
  if (region.get_size() < size) return 1;
  char *base = static_cast<char *>(region.get_address());
  for (size_t at = 0; at < size; at += kPage) {
    uint64_t v = stamp(at / kPage);
    std::memcpy(base + at, &v, sizeof v);
  }
  return check_pages("writer", base, size, node) ? 0 : 1;
}

static int create(const char *name, size_t size, int node) {
  bip::shared_memory_object::remove(name);
  bip::shared_memory_object seg(bip::create_only, name, bip::read_write);
  seg.truncate((bip::offset_t)size);
  bip::mapped_region region(seg, bip::read_write);
  char *base = static_cast<char *>(region.get_address());
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return 1;
  self[len] = '\0';
  std::string cmd = std::string("env -u LD_PRELOAD '") + self + "' attach " + name + " " +
                    std::to_string(size >> 20) + " " + std::to_string(node);
  int rc = std::system(cmd.c_str());
  bool ok = rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0;
  size_t bad = 0, n = size / kPage;
  for (size_t i = 0; i < n; i++) {
    uint64_t v;
    std::memcpy(&v, base + i * kPage, sizeof v);
    bad += v != stamp(i);
  }
  std::printf("  creator (pid %d): %zu of %zu pages hold what the writer wrote\n", (int)getpid(),
              n - bad, n);
  ok = check_pages("creator", base, size, node) && ok && bad == 0;
  bip::shared_memory_object::remove(name);
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s create|attach NAME MIB NODE\n", argv[0]);
    return 2;
  }
  size_t size = std::strtoull(argv[3], nullptr, 10) << 20;
  int node = std::atoi(argv[4]);
  try {
    if (std::strcmp(argv[1], "create") == 0) return create(argv[2], size, node);
    return attach(argv[2], size, node);
  } catch (const bip::interprocess_exception &e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
}
