/* SPDX-License-Identifier: BSD-3-Clause */
// test_autoplace.cc: automatic placement on one node — arena names, the
// placer's configuration and its errors, the monitor's rates (the host's
// kernel reports referenced pages; where it does not, the start must say
// so) and pinning.  The plan has tests of its own (test_plan.cc);
// placement between nodes is proven in the guest
// (tests/numa/numa_autoplace.cc).
#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "sicm_test.h"

using sicm_test::ScopedEnv;

namespace {

class Autoplace : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(0, sicm_init()) << sicm_error_detail(); }
  void TearDown() override {
    sicm_autoplace_stop();
    for (sicm_arena a : arenas_) sicm_arena_destroy(a);
    EXPECT_EQ(0, sicm_fini()) << sicm_error_detail();
  }
  sicm_arena Make(unsigned flags = 0) {
    sicm_device *dev = sicm_device_of_node(0, 0);
    sicm_arena a = sicm_arena_create_devices(0, &dev, 1, flags);
    EXPECT_NE(nullptr, a) << sicm_error_detail();
    arenas_.push_back(a);
    return a;
  }
  // The defaults, but no bound on measuring: the tests count intervals.
  sicm_autoplace_config Config() {
    sicm_autoplace_config c;
    EXPECT_EQ(0, sicm_autoplace_config_init(&c)) << sicm_error_detail();
    c.cpu_share = 1;
    return c;
  }
  std::vector<sicm_arena> arenas_;
};

// What sicm_stats_print() writes.
std::string StatsText() {
  char *text = nullptr;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  if (out == nullptr) return "";
  sicm_stats_print(out, 0);
  fclose(out);
  std::string report(text, len);
  free(text);
  return report;
}

TEST_F(Autoplace, NamesAreKeptCheckedAndCleared) {
  sicm_arena a = Make();
  char name[SICM_ARENA_NAME_MAX];
  EXPECT_EQ(0, sicm_arena_get_name(a, name, sizeof name));
  EXPECT_STREQ("", name);
  ASSERT_EQ(0, sicm_arena_set_name(a, "solver-matrix"));
  EXPECT_EQ(13, sicm_arena_get_name(a, name, sizeof name));
  EXPECT_STREQ("solver-matrix", name);
  char small[4];
  errno = 0;
  EXPECT_EQ(-1, sicm_arena_get_name(a, small, sizeof small));
  EXPECT_EQ(EINVAL, errno);
  std::string long_name(SICM_ARENA_NAME_MAX, 'x');
  for (const char *bad : {long_name.c_str(), "quote\"", "back\\slash", "tab\t"}) {
    errno = 0;
    EXPECT_EQ(-1, sicm_arena_set_name(a, bad)) << bad;
    EXPECT_EQ(EINVAL, errno) << bad;
  }
  EXPECT_EQ(13, sicm_arena_get_name(a, name, sizeof name)) << "a refused name changes nothing";
  ASSERT_EQ(0, sicm_arena_set_name(a, nullptr));
  EXPECT_EQ(0, sicm_arena_get_name(a, name, sizeof name));
  errno = 0;
  EXPECT_EQ(-1, sicm_arena_set_name(nullptr, "x"));
  EXPECT_EQ(EINVAL, errno);
}

TEST_F(Autoplace, BadConfigurationsAreRefusedAndNothingStarts) {
  errno = 0;
  EXPECT_EQ(-1, sicm_autoplace_start(nullptr));
  EXPECT_EQ(EINVAL, errno);
  struct Case {
    const char *what;
    void (*spoil)(sicm_autoplace_config *);
  } cases[] = {
      {"interval 0", [](sicm_autoplace_config *c) { c->interval_ms = 0; }},
      {"half-life 0", [](sicm_autoplace_config *c) { c->half_life = 0; }},
      {"cpu share above a core", [](sicm_autoplace_config *c) { c->cpu_share = 1.5; }},
      {"cpu share below 0", [](sicm_autoplace_config *c) { c->cpu_share = -0.01; }},
      {"cpu share NaN", [](sicm_autoplace_config *c) { c->cpu_share = NAN; }},
      {"unknown arenas", [](sicm_autoplace_config *c) { c->arenas = 7; }},
      {"budget above the device", [](sicm_autoplace_config *c) { c->budget = c->devices[0]->capacity + 1; }},
      {"a device not from the list",
       [](sicm_autoplace_config *c) {
         static sicm_device fake;
         c->devices[0] = &fake;
       }},
      {"a device twice",
       [](sicm_autoplace_config *c) {
         c->devices[1] = c->devices[0];
         c->ndevices = 2;
       }},
      // No device means the default fast tier: the budget is checked
      // against it all the same.
      {"no device, a budget above any",
       [](sicm_autoplace_config *c) {
         c->ndevices = 0;
         c->budget = SIZE_MAX;
       }},
      {"no device, an interval of 0",
       [](sicm_autoplace_config *c) {
         c->ndevices = 0;
         c->interval_ms = 0;
       }},
  };
  for (const Case &k : cases) {
    sicm_autoplace_config c = Config();
    k.spoil(&c);
    errno = 0;
    EXPECT_EQ(-1, sicm_autoplace_start(&c)) << k.what;
    EXPECT_EQ(EINVAL, errno) << k.what;
    EXPECT_STRNE("", sicm_error_detail()) << k.what;
  }
  errno = 0;
  EXPECT_EQ(-1, sicm_autoplace_stop()) << "nothing was started";
  EXPECT_EQ(ESRCH, errno);
}

TEST_F(Autoplace, PlacerFlagsBelongToCreation) {
  sicm_arena a = Make(SICM_ARENA_AUTOPLACE | SICM_ARENA_ANYWHERE);
  sicm_device *dev = sicm_device_of_node(0, 0);
  errno = 0;
  EXPECT_EQ(-1, sicm_arena_set_devices(a, &dev, 1, SICM_ARENA_AUTOPLACE));
  EXPECT_EQ(EINVAL, errno);
  errno = 0;
  EXPECT_EQ(-1, sicm_arena_set_autoplace(a, 3));
  EXPECT_EQ(EINVAL, errno);
}

// Either the kernel reports referenced pages and the monitor measures the
// arena that is touched and not the one that is not, or the start fails
// with ENOTSUP and says why.
TEST_F(Autoplace, RatesFollowTheArenaThatIsTouched) {
  sicm_arena hot = Make(), cold = Make();
  const size_t size = 8 << 20;
  char *h = (char *)sicm_arena_alloc(hot, size), *c = (char *)sicm_arena_alloc(cold, size);
  ASSERT_TRUE(h && c);
  memset(h, 1, size);
  memset(c, 1, size);
  sicm_autoplace_config cfg = Config();
  cfg.interval_ms = 50;
  cfg.monitor_only = 1;
  if (sicm_autoplace_start(&cfg) != 0) {
    ASSERT_EQ(ENOTSUP, errno) << sicm_error_detail();
    GTEST_SKIP() << "the monitor cannot run here: " << sicm_error_detail();
  }
  errno = 0;
  EXPECT_EQ(-1, sicm_autoplace_start(&cfg)) << "a second placer";
  EXPECT_EQ(EBUSY, errno);
  sicm_arena_rates rh{}, rc{};
  for (int i = 0; i < 400 && (rh.intervals < 6 || rc.intervals < 6); i++) {
    for (size_t off = 0; off < size; off += 4096) h[off]++;
    usleep(5000);
    ASSERT_EQ(0, sicm_arena_get_rates(hot, &rh));
    ASSERT_EQ(0, sicm_arena_get_rates(cold, &rc));
  }
  ASSERT_GE(rh.intervals, 6u);
  EXPECT_EQ(0, sicm_autoplace_stop());
  EXPECT_GE(rh.resident, size);
  EXPECT_GE(rc.resident, size);
  EXPECT_GT(rh.referenced_per_second, 0.5 * size) << "touched every interval";
  EXPECT_LT(rc.referenced_per_second, 0.01 * size) << "never touched after the start";
  EXPECT_GT(rh.density, 50 * rc.density + 0.1);
  EXPECT_EQ(0u, rh.moves_in + rh.moves_out) << "monitor only";
  EXPECT_GT(rh.fast_ns + rh.slow_ns, 0u);
}

TEST_F(Autoplace, AMoveTheProgramMakesPinsTheArena) {
  sicm_arena a = Make();
  ASSERT_NE(nullptr, sicm_arena_alloc(a, 1 << 20));
  sicm_autoplace_config cfg = Config();
  cfg.interval_ms = 20;
  if (sicm_autoplace_start(&cfg) != 0) GTEST_SKIP() << sicm_error_detail();
  usleep(100000);
  ASSERT_EQ(0, sicm_arena_set_device(a, sicm_device_of_node(0, 0))) << sicm_error_detail();
  sicm_arena_rates r{};
  for (int i = 0; i < 200 && r.mode != SICM_AUTOPLACE_PIN; i++) {
    usleep(10000);
    ASSERT_EQ(0, sicm_arena_get_rates(a, &r));
  }
  EXPECT_EQ(SICM_AUTOPLACE_PIN, r.mode);
  ASSERT_EQ(0, sicm_arena_set_autoplace(a, SICM_AUTOPLACE_AUTO));
  ASSERT_EQ(0, sicm_arena_get_rates(a, &r));
  EXPECT_EQ(SICM_AUTOPLACE_AUTO, r.mode);
}

// A shared arena touched by one process only: the other process's placer
// ranks it by the sum both publish, and leaves placing it to the process
// whose placer claimed it first.
TEST_F(Autoplace, ASharedArenaIsRatedByEveryProcessAndPlacedByOne) {
#if defined(__SANITIZE_THREAD__)
  /* fork() runs jemalloc's prefork handler, which takes every arena's
   * mutexes at once: more than ThreadSanitizer's deadlock detector holds. */
  GTEST_SKIP() << "fork under ThreadSanitizer";
#endif
  const size_t size = 16 << 20;
  std::string name = "/sicm-test-autoplace-" + std::to_string(getpid());
  sicm_arena_unlink(name.c_str());
  sicm_arena shared = sicm_arena_create_shared(name.c_str(), 4 * size, sicm_device_of_node(0, 0), 0600);
  ASSERT_NE(nullptr, shared) << sicm_error_detail();
  char *block = (char *)sicm_arena_alloc(shared, size);
  ASSERT_NE(nullptr, block) << sicm_error_detail();
  memset(block, 1, size);
  int ready[2];
  ASSERT_EQ(0, pipe(ready));
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) { /* touches the block; its placer claims the arena first */
    close(ready[0]);
    sicm_autoplace_config cfg = Config();
    cfg.interval_ms = 50;
    if (sicm_autoplace_start(&cfg) != 0) _exit(3);
    usleep(200 * 1000);
    if (write(ready[1], "r", 1) != 1) _exit(4);
    for (int i = 0; i < 300; i++) {
      for (size_t off = 0; off < size; off += 4096) block[off]++;
      usleep(5000);
    }
    sicm_autoplace_stop();
    _exit(0);
  }
  close(ready[1]);
  char c;
  ASSERT_EQ(1, read(ready[0], &c, 1)) << "the child's placer did not start";
  close(ready[0]);
  sicm_autoplace_config cfg = Config();
  cfg.interval_ms = 50;
  ASSERT_EQ(0, sicm_autoplace_start(&cfg)) << sicm_error_detail();
  usleep(600 * 1000);
  sicm_arena_rates r{};
  ASSERT_EQ(0, sicm_arena_get_rates(shared, &r));
  std::string report = StatsText();
  int status = 0;
  ASSERT_EQ(child, waitpid(child, &status, 0));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(0, sicm_autoplace_stop());
  EXPECT_EQ(0, sicm_arena_destroy(shared));
  sicm_arena_unlink(name.c_str());
  // This process touched nothing since its placer started: any rate it
  // holds is the child's, published in the segment.  (How much depends on
  // how often the child ran, which a busy machine decides.)
  EXPECT_GT(r.referenced_per_second, 0.0) << "the child's accesses, not this one's";
  EXPECT_GT(r.intervals, 0u);
  EXPECT_NE(std::string::npos, report.find("another process's placer places it")) << report;
}

// A measure that costs more than its share of a core stretches the
// interval until it does not: with a share no measure can fit in, no
// interval of 20 ms passes in the time the unthrottled placer, started the
// same way in the same process, runs several.
TEST_F(Autoplace, AMeasureOverItsCpuShareLengthensTheInterval) {
  Make();
  sicm_autoplace_config cfg = Config();
  cfg.interval_ms = 20;
  cfg.monitor_only = 1;
  sicm_autoplace_totals t;
  errno = 0;
  EXPECT_EQ(-1, sicm_autoplace_get_totals(nullptr));
  EXPECT_EQ(EINVAL, errno);
  for (double share : {1.0, 1e-9}) {
    cfg.cpu_share = share;
    if (sicm_autoplace_start(&cfg) != 0) GTEST_SKIP() << sicm_error_detail();
    usleep(300 * 1000);
    ASSERT_EQ(0, sicm_autoplace_get_totals(&t));
    EXPECT_EQ(1, t.running);
    ASSERT_EQ(0, sicm_autoplace_stop());
    EXPECT_DOUBLE_EQ(share, t.cpu_share);
    EXPECT_EQ(20u, t.interval_ms);
    EXPECT_GT(t.cpu_seconds, 0.0) << "the start's measure at least";
    if (share == 1.0) {
      EXPECT_GE(t.intervals, 2u) << "unthrottled: every 20 ms";
      EXPECT_EQ(20u, t.interval_kept_ms);
    } else {
      EXPECT_EQ(0u, t.intervals) << "throttled: the first interval is still to come";
      EXPECT_GE(t.interval_kept_ms, 1000u * 1000) << "a measure's cost over a billionth of a core";
    }
    ASSERT_EQ(0, sicm_autoplace_get_totals(&t));
    EXPECT_EQ(0, t.running);
  }
  // With no device the placer takes the default fast tier, and the share asked.
  cfg.ndevices = 0;
  cfg.cpu_share = 0.5;
  ASSERT_EQ(0, sicm_autoplace_start(&cfg)) << sicm_error_detail();
  ASSERT_EQ(0, sicm_autoplace_get_totals(&t));
  EXPECT_DOUBLE_EQ(0.5, t.cpu_share);
  ASSERT_EQ(0, sicm_autoplace_stop());
}

}  // namespace

namespace {

// A migration in the background says how far it is: what it has to move
// once counted, never more moved than that.  (On one node nothing moves;
// the guest's numa suites move pages.)
TEST(MigrationProgress, CountsWhatItHasToMove) {
  ASSERT_EQ(0, sicm_init());
  sicm_device *dev = sicm_device_of_node(0, 0);
  sicm_arena a = sicm_arena_create(0, dev);
  ASSERT_NE(nullptr, a);
  const size_t size = 32 << 20;
  char *p = (char *)sicm_arena_alloc(a, size);
  ASSERT_NE(nullptr, p);
  memset(p, 1, size);
  sicm_migration *m = sicm_arena_set_devices_async(a, &dev, 1, 0);
  ASSERT_NE(nullptr, m) << sicm_error_detail();
  size_t moved = 1, to_move = 0;
  while (!sicm_migration_poll(m)) {
    ASSERT_EQ(0, sicm_migration_progress(m, &moved, &to_move));
    EXPECT_LE(moved, to_move);
  }
  ASSERT_EQ(0, sicm_migration_progress(m, &moved, &to_move));
  EXPECT_GE(to_move, size);
  EXPECT_LE(moved, to_move);
  errno = 0;
  EXPECT_EQ(-1, sicm_migration_progress(m, nullptr, &to_move));
  EXPECT_EQ(EINVAL, errno);
  EXPECT_EQ(0, sicm_migration_wait(m, nullptr)) << sicm_error_detail();
  EXPECT_EQ(0, sicm_arena_destroy(a));
  EXPECT_EQ(0, sicm_fini());
}

}  // namespace
