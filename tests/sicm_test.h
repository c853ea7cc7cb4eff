// sicm_test.h: helpers shared by the GoogleTest suites.
#ifndef SICM_TEST_H
#define SICM_TEST_H

#include <gtest/gtest.h>
#include <stdlib.h>
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
  ~Initialized() {
    if (ok_) {
      EXPECT_EQ(0, sicm_fini());
    }
  }
  bool ok() const { return ok_; }
 private:
  bool ok_;
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

}  // namespace sicm_test

#endif
