/* SPDX-License-Identifier: BSD-3-Clause */
// sicm_test.h: helpers shared by the GoogleTest suites.
#ifndef SICM_TEST_H
#define SICM_TEST_H

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "sicm.h"

namespace sicm_test {

// Sets (or unsets, with nullptr) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char *name, const char *value) : name_(name) {
    const char *old = getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value) setenv(name, value, 1); else unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_.c_str(), old_.c_str(), 1); else unsetenv(name_.c_str());
  }
 private:
  std::string name_, old_;
  bool had_;
};

// A file in the temporary directory, removed at the end of the scope.
class TempFile {
 public:
  explicit TempFile(const std::string &text) {
    char tmpl[] = "/tmp/sicm-test-XXXXXX";
    int fd = mkstemp(tmpl);
    EXPECT_GE(fd, 0);
    close(fd);
    path_ = tmpl;
    std::ofstream(path_) << text;
  }
  ~TempFile() { unlink(path_.c_str()); }
  const char *path() const { return path_.c_str(); }
 private:
  std::string path_;
};

// sicm_init() for one scope; the test fails if it does not succeed.
class Initialized {
 public:
  Initialized() { ok_ = sicm_init() == 0; EXPECT_TRUE(ok_) << sicm_error_detail(); }
  // A test that failed half-way may leave arenas: they are destroyed here
  // (and reported), so that the next test starts from nothing.
  ~Initialized() {
    if (!ok_ || sicm_fini() == 0) return;
    EXPECT_EQ(EBUSY, errno) << sicm_error_detail();
    sicm_arena left[64];
    int n = sicm_arenas_list(left, 64);
    ADD_FAILURE() << n << " arena(s) left alive by the test; destroying them";
    for (int i = 0; i < n && i < 64; i++) sicm_arena_destroy(left[i]);
    EXPECT_EQ(0, sicm_fini()) << sicm_error_detail();
  }
  bool ok() const { return ok_; }
 private:
  bool ok_;
};

// The fixture most suites start from: the library initialized for the
// test, and dev_ the DRAM device of the calling thread's node.
class LocalDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(init_.ok());
    dev_ = sicm_device_of_node(sicm_node_self(), 0);
    ASSERT_NE(nullptr, dev_);
  }
  Initialized init_;
  sicm_device *dev_ = nullptr;
};

// Source file of the project, from the SICM_TOP_SRCDIR make sets.
inline std::string SourcePath(const std::string &rel) {
  const char *top = getenv("SICM_TOP_SRCDIR");
  return std::string(top ? top : ".") + "/" + rel;
}

inline std::string BuildPath(const std::string &rel) {
  const char *top = getenv("SICM_TOP_BUILDDIR");
  return std::string(top ? top : ".") + "/" + rel;
}

// The process's address space and resident memory, in bytes (statm).
struct Memory {
  size_t address_space, resident;
};
inline Memory MemoryNow() {
  std::ifstream statm("/proc/self/statm");
  size_t size = 0, resident = 0;
  statm >> size >> resident;
  EXPECT_TRUE(statm.good()) << "cannot read /proc/self/statm";
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  return {size * page, resident * page};
}

// What a function run in a forked child did: its exit status (-1 if it
// did not exit, for example killed by the alarm), what it wrote to stderr,
// and how long it took in seconds.
struct ChildRun {
  int status;
  std::string err;
  double seconds;
};
template <typename Fn>
ChildRun RunInChild(Fn fn, unsigned alarm_seconds = 20) {
  int fds[2];
  EXPECT_EQ(0, pipe(fds));
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], 2);
    alarm(alarm_seconds);
    _exit(fn());
  }
  close(fds[1]);
  ChildRun run{-1, "", 0};
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) run.err.append(buf, (size_t)n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  run.seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

// How many times `needle` occurs in `text`.
inline int Occurrences(const std::string &text, const std::string &needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) n++;
  return n;
}

}  // namespace sicm_test

#endif
