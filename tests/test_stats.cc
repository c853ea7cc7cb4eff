/* SPDX-License-Identifier: BSD-3-Clause */
// test_stats.cc: sicm_stats_print() and the SICM_STATS report at exit.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "sicm_autoplace.h"
#include "sicm_test.h"

using sicm_test::Initialized;
using sicm_test::ScopedEnv;
using sicm_test::TempFile;

namespace {

std::string printed(unsigned flags) {
  char *buf = nullptr;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  EXPECT_EQ(0, sicm_stats_print(f, flags)) << sicm_error_detail();
  fclose(f);
  std::string out(buf, len);
  free(buf);
  return out;
}

std::string slurp(const char *path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Whether python3's json module reads the file (CI has python3).
bool valid_json(const char *path) {
  std::string cmd = std::string("python3 -c 'import json,sys; json.load(open(sys.argv[1]))' ") + path;
  return system(cmd.c_str()) == 0;
}

// One arena on the first device with 1 MiB written, moved once (to where
// it is: a migration all the same).
sicm_arena busy_arena(sicm_device **dev) {
  *dev = &sicm_devices()->devices[0];
  sicm_arena sa = sicm_arena_create(0, *dev);
  EXPECT_NE(nullptr, sa);
  void *p = sicm_arena_alloc(sa, 1 << 20);
  EXPECT_NE(nullptr, p);
  memset(p, 1, 1 << 20);
  EXPECT_EQ(0, sicm_arena_set_device(sa, *dev)) << sicm_error_detail();
  return sa;
}

}  // namespace

TEST(Stats, TextNamesEachArenaItsDevicesBytesResidencyAndMigrations) {
  Initialized init;
  sicm_device *dev;
  sicm_arena sa = busy_arena(&dev);
  std::string out = printed(0);
  std::string node = "devices node " + std::to_string(dev->node) + " " + sicm_device_kind_name(dev->kind);
  EXPECT_NE(std::string::npos, out.find(node)) << out;
  EXPECT_NE(std::string::npos, out.find("resident node " + std::to_string(dev->node) + " ")) << out;
  EXPECT_NE(std::string::npos, out.find("migrations 1 (")) << out;
  EXPECT_NE(std::string::npos, out.find(" live arenas; destroyed before: ")) << out;
  EXPECT_EQ(0, sicm_arena_destroy(sa));
}

TEST(Stats, JsonIsOneValidObject) {
  Initialized init;
  sicm_device *dev;
  sicm_arena sa = busy_arena(&dev);
  TempFile file("");
  FILE *f = fopen(file.path(), "w");
  ASSERT_NE(nullptr, f);
  EXPECT_EQ(0, sicm_stats_print(f, SICM_STATS_JSON));
  fclose(f);
  std::string out = slurp(file.path());
  EXPECT_NE(std::string::npos, out.find("\"migrations\": 1,")) << out;
  EXPECT_TRUE(valid_json(file.path())) << out;
  EXPECT_EQ(0, sicm_arena_destroy(sa));
}

// Each arena's peak of held bytes, in both forms: after 64 MiB allocated
// and freed, at least 64 MiB, and never below held.
TEST(Stats, PeakHeldIsReported) {
  Initialized init;
  sicm_arena sa = sicm_arena_create(0, &sicm_devices()->devices[0]);
  ASSERT_NE(nullptr, sa);
  const std::string name = "peak-check";
  ASSERT_EQ(0, sicm_arena_set_name(sa, name.c_str())) << sicm_error_detail();
  void *p = sicm_arena_alloc(sa, 64 << 20);
  ASSERT_NE(nullptr, p);
  memset(p, 1, 64 << 20);
  sicm_free(p);
  p = sicm_arena_alloc(sa, 4096);
  std::string out = printed(SICM_STATS_JSON);
  size_t at = out.find("\"name\": \"" + name + "\"");
  ASSERT_NE(std::string::npos, at) << out;
  size_t held_at = out.find("\"held\": ", at), peak_at = out.find("\"peak_held\": ", at);
  ASSERT_NE(std::string::npos, held_at);
  ASSERT_NE(std::string::npos, peak_at);
  unsigned long long held = strtoull(out.c_str() + held_at + 8, nullptr, 10);
  unsigned long long peak = strtoull(out.c_str() + peak_at + 13, nullptr, 10);
  EXPECT_GE(peak, 64ull << 20) << out;
  EXPECT_LE(held, peak) << out;
  EXPECT_NE(std::string::npos, printed(0).find("(peak ")) << printed(0);
  sicm_free(p);
  EXPECT_EQ(0, sicm_arena_destroy(sa));
}

TEST(Stats, DestroyedArenasAddToTheTotals) {
  Initialized init;
  auto destroyed = [] {
    std::string out = printed(0);
    size_t at = out.find("destroyed before: ");
    return at == std::string::npos ? -1L : strtol(out.c_str() + at + 18, nullptr, 10);
  };
  long before = destroyed();
  sicm_device *dev;
  sicm_arena sa = busy_arena(&dev);
  EXPECT_EQ(0, sicm_arena_destroy(sa));
  std::string out = printed(0);
  EXPECT_EQ(before + 1, destroyed()) << out;
  EXPECT_NE(std::string::npos, out.find("migrations ")) << out;
}

TEST(Stats, BadFlagsNoLibraryAndFailedWritesAreErrors) {
  errno = 0;
  EXPECT_EQ(-1, sicm_stats_print(nullptr, 0));
  EXPECT_EQ(EPERM, errno);
  Initialized init;
  errno = 0;
  EXPECT_EQ(-1, sicm_stats_print(nullptr, 0x80));
  EXPECT_EQ(EINVAL, errno);
  FILE *full = fopen("/dev/full", "w");  // every write fails with ENOSPC
  ASSERT_NE(nullptr, full);
  errno = 0;
  EXPECT_EQ(-1, sicm_stats_print(full, 0));
  EXPECT_EQ(EIO, errno);
  fclose(full);
}

// SICM_STATS=path.json: a child process that never calls
// sicm_stats_print() writes the report when it exits.
TEST(Stats, EnvironmentWritesTheReportAtExit) {
  for (const char *suffix : {".json", ".txt"}) {
    std::string path = std::string("/tmp/sicm-stats-") + std::to_string(getpid()) + suffix;
    unlink(path.c_str());
    ScopedEnv env("SICM_STATS", path.c_str());
    pid_t pid = fork();
    if (pid == 0) {
      if (sicm_init() != 0)
        _exit(2);
      sicm_device *dev;
      busy_arena(&dev);
      exit(0);  // atexit handlers run; the arena is still live
    }
    int status = 0;
    ASSERT_EQ(pid, waitpid(pid, &status, 0));
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    std::string out = slurp(path.c_str());
    if (strcmp(suffix, ".json") == 0) {
      EXPECT_TRUE(valid_json(path.c_str())) << out;
      EXPECT_NE(std::string::npos, out.find("\"migrations\": 1,")) << out;
    } else {
      EXPECT_NE(std::string::npos, out.find("migrations 1 (")) << out;
      EXPECT_NE(std::string::npos, out.find("1 live arenas")) << out;
    }
    unlink(path.c_str());
  }
}
