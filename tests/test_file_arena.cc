/* SPDX-License-Identifier: BSD-3-Clause */
// test_file_arena.cc: file-backed arenas (sicm_arena_create_file) on this
// machine — a heap in a file of no name in a directory, bounded by its
// size, gone with the arena or the process, and its errors.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "sicm_test.h"

namespace {

class FileArena : public sicm_test::LocalDevice {
 protected:
  void SetUp() override {
    sicm_test::LocalDevice::SetUp();
    char tmpl[] = "/tmp/sicm-file-arena-XXXXXX";
    ASSERT_NE(nullptr, mkdtemp(tmpl));
    dir_ = tmpl;
  }
  void TearDown() override { rmdir(dir_.c_str()); }
  // Names in the directory (none: the file has no name).
  std::vector<std::string> Entries() const {
    std::vector<std::string> out;
    DIR *d = opendir(dir_.c_str());
    for (struct dirent *e; d && (e = readdir(d));)
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
        out.push_back(e->d_name);
    if (d) closedir(d);
    return out;
  }
  // Whether this process maps a file of the directory.
  bool Mapped() const {
    FILE *maps = fopen("/proc/self/maps", "re");
    char line[512];
    bool found = false;
    while (maps && fgets(line, sizeof line, maps))
      found |= strstr(line, dir_.c_str()) != nullptr;
    if (maps) fclose(maps);
    return found;
  }
  std::string dir_;
};

TEST_F(FileArena, HoldsBlocksInAFileOfNoNameAndGoesWithTheArena) {
  sicm_arena a = sicm_arena_create_file(dir_.c_str(), 8 << 20, dev_);
  ASSERT_NE(nullptr, a) << sicm_error_detail();
  EXPECT_TRUE(Entries().empty());
  EXPECT_TRUE(Mapped());
  std::vector<char *> blocks;
  for (size_t sz = 16; sz <= (1 << 20); sz *= 4) {
    char *p = (char *)sicm_arena_alloc(a, sz);
    ASSERT_NE(nullptr, p) << sz << ": " << sicm_error_detail();
    memset(p, (int)(sz & 0x7f), sz);
    EXPECT_EQ(a, sicm_arena_lookup(p));
    blocks.push_back(p);
  }
  char *z = (char *)sicm_arena_calloc(a, 1, 100000);
  ASSERT_NE(nullptr, z);
  for (int i = 0; i < 100000; i++) ASSERT_EQ(0, z[i]);
  for (char *p : blocks) {
    size_t sz = sicm_usable_size(p);
    EXPECT_GE(sz, 16u);
    sicm_free(p);
  }
  sicm_free(z);
  sicm_arena_stats st;
  EXPECT_EQ(0, sicm_arena_get_stats(a, &st));
  EXPECT_EQ(0, sicm_arena_destroy(a));
  EXPECT_FALSE(Mapped());
  EXPECT_TRUE(Entries().empty());
}

TEST_F(FileArena, SizeBoundsWhatItHolds) {
  sicm_arena a = sicm_arena_create_file(dir_.c_str(), 1 << 20, dev_);
  ASSERT_NE(nullptr, a) << sicm_error_detail();
  errno = 0;
  EXPECT_EQ(nullptr, sicm_arena_alloc(a, 2 << 20));
  EXPECT_EQ(ENOMEM, errno);
  void *fits = sicm_arena_alloc(a, 512 << 10);
  EXPECT_NE(nullptr, fits) << sicm_error_detail();
  sicm_free(fits);
  EXPECT_EQ(0, sicm_arena_destroy(a));
}

// A process killed while it holds a file-backed arena leaves nothing in
// the directory.
TEST_F(FileArena, NothingIsLeftWhenTheProcessDies) {
  pid_t child = fork();
  if (child == 0) {
    sicm_arena a = sicm_arena_create_file(dir_.c_str(), 4 << 20, dev_);
    char *p = a ? (char *)sicm_arena_alloc(a, 1 << 20) : nullptr;
    if (p) memset(p, 1, 1 << 20);
    kill(getpid(), SIGKILL);
    _exit(2);
  }
  int status = 0;
  ASSERT_EQ(child, waitpid(child, &status, 0));
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_TRUE(Entries().empty());
}

TEST_F(FileArena, BadInputIsRefused) {
  struct Case {
    const char *dir;
    size_t size;
    sicm_device *dev;
    int err;
  };
  std::string file = dir_ + "/plain";
  int fd = open(file.c_str(), O_CREAT | O_WRONLY, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  for (const Case &c : {Case{nullptr, 1 << 20, dev_, EINVAL}, Case{"", 1 << 20, dev_, EINVAL},
                        Case{dir_.c_str(), 4096, dev_, EINVAL}, Case{dir_.c_str(), 1 << 20, nullptr, EINVAL},
                        Case{"/nonexistent-sicm-dir", 1 << 20, dev_, ENOENT},
                        Case{file.c_str(), 1 << 20, dev_, ENOTDIR},
                        Case{dir_.c_str(), (size_t)1 << 45, dev_, ENOSPC}}) {
    errno = 0;
    EXPECT_EQ(nullptr, sicm_arena_create_file(c.dir, c.size, c.dev)) << (c.dir ? c.dir : "(null)");
    EXPECT_EQ(c.err, errno) << (c.dir ? c.dir : "(null)") << " " << c.size << ": " << sicm_error_detail();
  }
  unlink(file.c_str());
}

}  // namespace
