/* SPDX-License-Identifier: BSD-3-Clause */
// test_settings.cc: the one grammar of every setting (src/base_settings.c,
// sicm(7) SETTINGS) — sizes, times, shares, counts and switches, the items
// of a variable against a table of keys, the old separator — and
// SICM_AUTOPLACE read through it.  The preload's keys are run in
// tests/preload/host.sh.
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <random>
#include <string>

#include "sicm_test.h"

extern "C" {
#include "base_settings.h"
}

using sicm_test::ScopedEnv;

namespace {

TEST(Settings, SizesAreNumbersWithBinaryUnits) {
  struct { const char *text; size_t bytes; } good[] = {
      {"0", 0}, {"4096", 4096}, {"64K", 64 << 10}, {"64k", 64 << 10}, {"1M", 1 << 20},
      {"1.5G", (size_t)3 << 29}, {"2GiB", (size_t)2 << 30}, {"2gib", (size_t)2 << 30},
      {"100B", 100}, {"1T", (size_t)1 << 40}, {"0.5K", 512}, {"16EiB", 0}};
  for (auto &g : good) {
    size_t v = 1;
    if (strcmp(g.text, "16EiB") == 0) {
      EXPECT_EQ(-1, sc_setting_size(g.text, &v)) << "no E unit";
      continue;
    }
    ASSERT_EQ(0, sc_setting_size(g.text, &v)) << g.text;
    EXPECT_EQ(g.bytes, v) << g.text;
  }
  size_t max = 0;
  ASSERT_EQ(0, sc_setting_size("18446744073709551615", &max)) << "the largest size_t";
  EXPECT_EQ(SIZE_MAX, max);
  ASSERT_EQ(0, sc_setting_size("1.0000000000000000000001K", &max)) << "digits past the 18th";
  EXPECT_EQ(1024u, max);
  for (const char *bad : {"", "K", "nan", "inf", "1e3", "0x10", "-5", "1.M", ".5M", "4x", "1 M",
                          "1 B", "512 iB", "1\tB", "1MM", "1iB", "18446744073709551616",
                          "16777216T", "1.5.5"}) {
    size_t v = 7;
    EXPECT_EQ(-1, sc_setting_size(bad, &v)) << bad;
    EXPECT_EQ(7u, v) << "a refused value writes nothing: " << bad;
  }
}

// The model: every size written the ways sicm(7) allows reads back as the
// number it was written from.
TEST(Settings, EverySizeWrittenReadsBack) {
  std::mt19937_64 rng(12345);
  const char *units[] = {"", "K", "M", "G", "T"};
  for (int i = 0; i < 20000; i++) {
    unsigned shift = (unsigned)(rng() % 5);
    uint64_t n = rng() >> (rng() % 64);
    n >>= 10 * shift;
    char text[64];
    const char *suffix = shift == 0 ? (rng() % 2 ? "B" : "") : (rng() % 2 ? "iB" : "");
    snprintf(text, sizeof text, "%llu%s%s", (unsigned long long)n, units[shift], suffix);
    size_t v;
    ASSERT_EQ(0, sc_setting_size(text, &v)) << text;
    ASSERT_EQ((size_t)n << (10 * shift), v) << text;
  }
}

TEST(Settings, TimesSharesCountsAndSwitches) {
  uint64_t ns;
  ASSERT_EQ(0, sc_setting_time_ns("250", 1000000, &ns));
  EXPECT_EQ(250000000u, ns) << "a number alone is in the key's unit";
  ASSERT_EQ(0, sc_setting_time_ns("2s", 1000000, &ns));
  EXPECT_EQ(2000000000u, ns);
  ASSERT_EQ(0, sc_setting_time_ns("0.5s", 1000000, &ns));
  EXPECT_EQ(500000000u, ns);
  ASSERT_EQ(0, sc_setting_time_ns("20ms", 1000000000, &ns));
  EXPECT_EQ(20000000u, ns);
  for (const char *bad : {"", "s", "1h", "1 s", "-1s", "1sec", "99999999999999999999s"})
    EXPECT_EQ(-1, sc_setting_time_ns(bad, 1000000, &ns)) << bad;
  double share;
  ASSERT_EQ(0, sc_setting_share("0.5%", &share));
  EXPECT_DOUBLE_EQ(0.005, share);
  ASSERT_EQ(0, sc_setting_share("1", &share));
  EXPECT_DOUBLE_EQ(1.0, share);
  for (const char *bad : {"0", "0%", "101%", "1.5", "x", "1%%", "-1%", "", "nan"})
    EXPECT_EQ(-1, sc_setting_share(bad, &share)) << bad;
  unsigned long n;
  ASSERT_EQ(0, sc_setting_uint("16", 0, 16, &n));
  EXPECT_EQ(16u, n);
  for (const char *bad : {"17", "-1", "1.0", "", "0x1", "1K"})
    EXPECT_EQ(-1, sc_setting_uint(bad, 0, 16, &n)) << bad;
  int on = -1;
  for (const char *yes : {"on", "1"}) {
    ASSERT_EQ(0, sc_setting_bool(yes, &on));
    EXPECT_EQ(1, on);
  }
  for (const char *no : {"off", "0"}) {
    ASSERT_EQ(0, sc_setting_bool(no, &on));
    EXPECT_EQ(0, on);
  }
  for (const char *bad : {"yes", "true", "2", "", "ON"}) EXPECT_EQ(-1, sc_setting_bool(bad, &on));
}

// A table of two keys, as each variable's own.
struct Seen {
  size_t size = 0;
  std::string list;
  int calls = 0;
};

int SetSize(void *ctx, const char *v, char *, size_t) {
  Seen *s = (Seen *)ctx;
  s->calls++;
  return sc_setting_size(v, &s->size);
}

int SetList(void *ctx, const char *v, char *why, size_t len) {
  Seen *s = (Seen *)ctx;
  s->calls++;
  if (strcmp(v, "bad") == 0) {
    snprintf(why, len, "its own words");
    return -1;
  }
  s->list = v;
  return 0;
}

const sc_setting kKeys[] = {{"size", "a SIZE", SetSize}, {"list", "A[+B...]", SetList}};

int Parse(const char *text, Seen *seen, std::string *why) {
  char buffer[SC_SETTINGS_WHY_MAX] = "";
  int rc = sc_settings_parse("test", "SICM_TEST", text, kKeys, 2, seen, buffer, sizeof buffer);
  *why = buffer;
  return rc;
}

TEST(Settings, ItemsAreCommaSeparatedKeysOfTheTable) {
  Seen seen;
  std::string why;
  ASSERT_EQ(0, Parse("size=64K,list=a+b", &seen, &why)) << why;
  EXPECT_EQ((size_t)64 << 10, seen.size);
  EXPECT_EQ("a+b", seen.list);
  seen = Seen();
  ASSERT_EQ(0, Parse(" size = 1M , list=x ", &seen, &why)) << "spaces around items: " << why;
  EXPECT_EQ((size_t)1 << 20, seen.size);
  EXPECT_EQ("x", seen.list);
  struct { const char *text, *words; } bad[] = {
      {"size=1M,size=2M", "'size' is given twice"},
      {"colour=blue", "unknown key 'colour' (known: size, list)"},
      {"size", "expected key=value, got 'size'"},
      {"size=1M,", "an empty setting"},
      {",size=1M", "an empty setting"},
      {"size=1M,,list=a", "an empty setting"},
      {"size=", "bad value size=: a SIZE"},
      {"size=lots", "bad value size=lots: a SIZE"},
      {"list=bad", "bad value list=bad: its own words"},
      {"list=a,b", "expected key=value, got 'b' (a list inside a value takes '+')"}};
  for (auto &b : bad) {
    seen = Seen();
    EXPECT_EQ(-1, Parse(b.text, &seen, &why)) << b.text;
    EXPECT_NE(std::string::npos, why.find(b.words)) << b.text << ": " << why;
  }
  std::string long_text(SC_SETTINGS_TEXT_MAX, 'x');
  EXPECT_EQ(-1, Parse(long_text.c_str(), &seen, &why));
  EXPECT_NE(std::string::npos, why.find("longer than")) << why;
}

// The preload's first separator: ';' between items and ',' inside a list,
// read as before, with one line on stderr.
TEST(Settings, TheOldSeparatorIsReadWithANotice) {
  Seen seen;
  std::string why;
  testing::internal::CaptureStderr();
  ASSERT_EQ(0, Parse("size=2M;list=dram,capacity", &seen, &why)) << why;
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ((size_t)2 << 20, seen.size);
  EXPECT_EQ("dram+capacity", seen.list);
  EXPECT_EQ("test: SICM_TEST: ';' between settings is deprecated and will be refused; write ',' "
            "between settings and '+' inside a list\n", err);
  testing::internal::CaptureStderr();
  ASSERT_EQ(0, Parse("size=2M,list=dram+capacity", &seen, &why)) << why;
  EXPECT_EQ("", testing::internal::GetCapturedStderr()) << "the new grammar: no notice";
  testing::internal::CaptureStderr();
  EXPECT_EQ(-1, Parse("size=2M;size=3M", &seen, &why)) << "one rule for duplicates in both";
  seen = Seen();
  ASSERT_EQ(0, Parse("size=1M;;list=a;", &seen, &why)) << "the old grammar skipped empty items";
  EXPECT_EQ((size_t)1 << 20, seen.size);
  testing::internal::GetCapturedStderr();
}

// Any text: the parser returns 0 or -1 and never reads or writes past it
// (the sanitizer builds run this).
TEST(Settings, AnyTextIsReadOrRefused) {
  std::mt19937 rng(99);
  const char alphabet[] = "sizelt=,;+ .0123456789KMGTiBb%";
  testing::internal::CaptureStderr(); // the old separator's notices
  for (int i = 0; i < 20000; i++) {
    std::string text;
    for (int n = (int)(rng() % 24); n > 0; n--) text += alphabet[rng() % (sizeof alphabet - 1)];
    Seen seen;
    std::string why;
    int rc = Parse(text.c_str(), &seen, &why);
    if (!(rc == 0 || (rc == -1 && !why.empty()))) {
      testing::internal::GetCapturedStderr();
      FAIL() << text;
    }
  }
  testing::internal::GetCapturedStderr();
}

TEST(AutoplaceConfig, TheVariableIsReadStrictly) {
  ASSERT_EQ(0, sicm_init());
  sicm_autoplace_config c;
  ASSERT_EQ(0, sicm_autoplace_config_parse(&c, "on")) << sicm_error_detail();
  EXPECT_EQ(1000u, c.interval_ms);
  ASSERT_EQ(0, sicm_autoplace_config_parse(&c, "fast=0,budget=64M,reserve=1G,interval=2s,halflife=3,"
                                     "arenas=flagged,mode=monitor"))
      << sicm_error_detail();
  EXPECT_EQ((size_t)64 << 20, c.budget);
  EXPECT_EQ((size_t)1 << 30, c.reserve);
  EXPECT_EQ(2000u, c.interval_ms);
  EXPECT_EQ(3u, c.half_life);
  EXPECT_EQ((unsigned)SICM_AUTOPLACE_FLAGGED, c.arenas);
  EXPECT_EQ(1, c.monitor_only);
  ASSERT_EQ(0, sicm_autoplace_config_parse(&c, "interval=250"));
  EXPECT_EQ(250u, c.interval_ms);
  EXPECT_DOUBLE_EQ(0.01, c.cpu_share) << "the default";
  ASSERT_EQ(0, sicm_autoplace_config_parse(&c, "cpu=0.5%"));
  EXPECT_DOUBLE_EQ(0.005, c.cpu_share);
  ASSERT_EQ(0, sicm_autoplace_config_parse(&c, "cpu=0.02"));
  EXPECT_DOUBLE_EQ(0.02, c.cpu_share);
  ASSERT_EQ(0, sicm_autoplace_config_parse(&c, "cpu=100%"));
  EXPECT_DOUBLE_EQ(1.0, c.cpu_share);
  ASSERT_EQ(0, sicm_autoplace_config_parse(&c, "interval=0.5s, budget=1.5G, cpu=1% "));
  EXPECT_EQ(500u, c.interval_ms);
  EXPECT_EQ((size_t)3 << 29, c.budget);
  // A refused text leaves the configuration as it was.
  sicm_autoplace_config before = c;
  EXPECT_EQ(-1, sicm_autoplace_config_parse(&c, "budget=2G,interval=0"));
  EXPECT_EQ(0, memcmp(&before, &c, sizeof c));
  EXPECT_EQ(-1, sicm_autoplace_config_parse(&c, "reserve=16T"));
  EXPECT_EQ(0, memcmp(&before, &c, sizeof c)) << "refused by the checks after the parse";
  errno = 0;
  EXPECT_EQ(-1, sicm_autoplace_config_parse(nullptr, "on"));
  EXPECT_EQ(EINVAL, errno);
  EXPECT_EQ(-1, sicm_autoplace_config_parse(&c, nullptr));
  EXPECT_EQ(EINVAL, errno);
  for (const char *bad : {"interval=0", "interval=5ms", "interval=1h", "budget=1X", "budget=",
                          "speed=1", "fast=99", "fast=0+0", "arenas=some", "mode=fast",
                          "halflife=0", "budget=99999T", "fast", ",", "interval=1s,,",
                          "cpu=0", "cpu=0%", "cpu=101%", "cpu=1.5", "cpu=x", "cpu=1%%",
                          "cpu=-1%", "cpu=", "interval=2.5ms", "interval=3601s",
                          // strict at both ends: no separator leads or trails
                          "budget=1G,", "interval=10,", "fast=0,", "fast=0+", "fast=+0",
                          ",interval=10", "mode=place,", "fast=0+,",
                          // a key given twice
                          "budget=1K,budget=2K", "mode=monitor,interval=20,mode=place",
                          // a reserve the fast tier cannot hold: nothing would ever move
                          "reserve=16T"}) {
    errno = 0;
    EXPECT_EQ(-1, sicm_autoplace_config_parse(&c, bad)) << bad;
    EXPECT_EQ(EINVAL, errno) << bad;
  }
  EXPECT_EQ(0, sicm_fini());
}

// The variable: a bad value is one line on stderr, sicm_init succeeds,
// and no placer runs (so the API may start one).
TEST(AutoplaceConfig, ABadVariableStartsNothing) {
  ScopedEnv env("SICM_AUTOPLACE", "interval=0");
  testing::internal::CaptureStderr();
  ASSERT_EQ(0, sicm_init());
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(std::string::npos, err.find("SICM_AUTOPLACE")) << err;
  EXPECT_NE(std::string::npos, err.find("interval")) << err;
  errno = 0;
  EXPECT_EQ(-1, sicm_autoplace_stop());
  EXPECT_EQ(ESRCH, errno);
  EXPECT_EQ(0, sicm_fini());
}

// The variable started a placer: the API cannot start a second one, and
// stopping it through the API works (or the kernel cannot measure, and
// sicm_init said so on stderr).
TEST(AutoplaceConfig, TheVariableAndTheApiDoNotBothRun) {
  ScopedEnv env("SICM_AUTOPLACE", "interval=50ms,mode=monitor");
  testing::internal::CaptureStderr();
  ASSERT_EQ(0, sicm_init());
  std::string err = testing::internal::GetCapturedStderr();
  if (!err.empty()) {
    EXPECT_NE(std::string::npos, err.find("referenced")) << err;
    EXPECT_EQ(0, sicm_fini());
    GTEST_SKIP() << err;
  }
  sicm_autoplace_config c;
  ASSERT_EQ(0, sicm_autoplace_config_init(&c));
  errno = 0;
  EXPECT_EQ(-1, sicm_autoplace_start(&c));
  EXPECT_EQ(EBUSY, errno);
  EXPECT_EQ(0, sicm_autoplace_stop());
  EXPECT_EQ(0, sicm_fini());
}

// SICM_STATS's report at the last sicm_fini is written after the placer
// stopped, so it holds the placer's whole run.
TEST(AutoplaceConfig, TheReportAtFiniFollowsThePlacersStop) {
  char path[] = "/tmp/sicm-stats-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  ScopedEnv placer("SICM_AUTOPLACE", "interval=20ms,mode=monitor"), stats("SICM_STATS", path);
  testing::internal::CaptureStderr();
  ASSERT_EQ(0, sicm_init());
  std::string err = testing::internal::GetCapturedStderr();
  if (!err.empty()) {
    EXPECT_EQ(0, sicm_fini());
    unlink(path);
    GTEST_SKIP() << err;
  }
  usleep(100 * 1000);
  EXPECT_EQ(0, sicm_fini());
  FILE *f = fopen(path, "r");
  ASSERT_NE(nullptr, f);
  std::string report;
  char line[512];
  while (fgets(line, sizeof line, f)) report += line;
  fclose(f);
  unlink(path);
  EXPECT_NE(std::string::npos, report.find("placer: stopped")) << report;
}

}  // namespace
