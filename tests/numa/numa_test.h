/* SPDX-License-Identifier: BSD-3-Clause */
// numa_test.h: what the NUMA suites (run in the multi-NUMA guest) share —
// where pages are, page by page, according to move_pages(2).
#ifndef NUMA_TEST_H
#define NUMA_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <numaif.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "../sicm_test.h"

namespace sicm_test {

inline size_t PageSize() {
  static const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  return page;
}

// Queries (moves nothing) every page of [p, p + len): (*status)[i] is the
// node of the i-th page, or its negative errno (-ENOENT: not present).
// Returns 0, or the errno of a failed move_pages call (never 0 then);
// *status is then all -1.
inline int PageStatus(const void *p, size_t len, std::vector<int> *status) {
  const size_t page = PageSize();
  std::vector<void *> pages;
  for (uintptr_t a = (uintptr_t)p & ~(page - 1); a < (uintptr_t)p + len; a += page)
    pages.push_back((void *)a);
  status->assign(pages.size(), -1);
  long rc = move_pages(0, pages.size(), pages.data(), nullptr, status->data(), 0);
  if (rc == 0) return 0;
  int err = rc < 0 && errno != 0 ? errno : EIO;  // a query never returns > 0
  status->assign(pages.size(), -1);
  return err;
}

// The node of every page of [p, p + len), or its negative errno (a page
// not present is -ENOENT, never a node).  A failed query is a test failure
// and every entry is then -1.
inline std::vector<int> NodesOfPages(const void *p, size_t len) {
  std::vector<int> status;
  int err = PageStatus(p, len, &status);
  EXPECT_EQ(0, err) << "move_pages: " << strerror(err);
  return status;
}

// How many pages of [p, p + len) are not on `node`; a page not present
// counts.  A failed query is a test failure and counts every page (so a
// forked child that only checks the result also sees it).
inline size_t PagesNotOn(const void *p, size_t len, int node) {
  std::vector<int> status;
  int err = PageStatus(p, len, &status);
  EXPECT_EQ(0, err) << "move_pages: " << strerror(err);
  if (err != 0) return status.size();
  size_t wrong = 0;
  for (int s : status) wrong += s != node;
  return wrong;
}

// Bytes of this process's memory on `node`, whatever maps it, from
// /proc/self/numa_maps ("N<node>=<pages>" per mapping, in the mapping's
// kernel page size); -1 if it cannot be read.
inline long long ProcessBytesOn(int node) {
  FILE *f = fopen("/proc/self/numa_maps", "r");
  if (f == nullptr) return -1;
  char key[16];
  snprintf(key, sizeof key, " N%d=", node);
  long long total = 0;
  char line[4096];
  while (fgets(line, sizeof line, f) != nullptr) {
    const char *n = strstr(line, key), *kb = strstr(line, "kernelpagesize_kB=");
    if (n != nullptr)
      total += atoll(n + strlen(key)) * (kb ? atoll(kb + 18) : 4) * 1024;
  }
  fclose(f);
  return total;
}

// A kernel setting of /proc/sys or /sys: its text ("" when it cannot be
// read), and writing one (root, as in the guest); true when written whole.
inline std::string ReadSetting(const std::string &path) {
  char text[32] = "";
  int fd = open(path.c_str(), O_RDONLY);
  ssize_t n = fd < 0 ? -1 : read(fd, text, sizeof text - 1);
  if (fd >= 0) close(fd);
  return n > 0 ? std::string(text, (size_t)n) : "";
}

inline bool WriteSetting(const std::string &path, const std::string &text) {
  int fd = open(path.c_str(), O_WRONLY);
  bool ok = fd >= 0 && write(fd, text.data(), text.size()) == (ssize_t)text.size();
  if (fd >= 0) close(fd);
  return ok;
}

}  // namespace sicm_test

#endif
