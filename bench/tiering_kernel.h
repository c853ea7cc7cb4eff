/* SPDX-License-Identifier: BSD-3-Clause */
// tiering_kernel.h: the kernel's own tiering, set up and measured for
// bench_tiering (root, in the guest): NUMA balancing's tiering mode with
// demotion, DAMON's migrate_hot/migrate_cold schemes on physical
// addresses, a fast node's capacity cut down with hugetlb pages, and what
// the kernel spent (pages migrated, its threads' CPU time).
#ifndef SICM_BENCH_TIERING_KERNEL_H
#define SICM_BENCH_TIERING_KERNEL_H
#include <dirent.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sicm.h"

namespace tiering {

// CPU seconds of a rusage: user and system.
inline double CpuSeconds(const rusage &u) {
  return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// This process's CPU seconds so far.
inline double ProcessCpu() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return CpuSeconds(u);
}

inline std::string ReadText(const std::string &path) {
  FILE *f = fopen(path.c_str(), "r");
  if (f == nullptr) return "";
  char buf[256];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  std::string s(buf);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Writes a kernel setting; false (and a line on stderr) when refused.
inline bool WriteText(const std::string &path, const std::string &text) {
  FILE *f = fopen(path.c_str(), "w");
  bool ok = f != nullptr && fputs(text.c_str(), f) >= 0;
  if (f != nullptr && fclose(f) != 0) ok = false;
  if (!ok) fprintf(stderr, "bench_tiering: cannot write %s to %s\n", text.c_str(), path.c_str());
  return ok;
}

// A counter of /proc/vmstat (0 when absent).
inline long long Vmstat(const char *key) {
  FILE *f = fopen("/proc/vmstat", "r");
  char name[64];
  long long v, found = 0;
  while (f != nullptr && fscanf(f, "%63s %lld", name, &v) == 2)
    if (strcmp(name, key) == 0) found = v;
  if (f != nullptr) fclose(f);
  return found;
}

// CPU seconds of the kernel threads that tier memory: kdamond (DAMON) and
// kswapd (demotion, which reclaim does).
inline double KernelThreadsCpu() {
  DIR *d = opendir("/proc");
  double ticks = 0;
  for (dirent *e; d != nullptr && (e = readdir(d)) != nullptr;) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::string stat = "/proc/" + std::string(e->d_name) + "/stat";
    FILE *f = fopen(stat.c_str(), "r");
    char line[512];
    if (f == nullptr) continue;
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = '\0';
    const char *open = strchr(line, '('), *close = strrchr(line, ')');
    if (open == nullptr || close == nullptr) continue;
    std::string comm(open + 1, close);
    if (comm.rfind("kdamond", 0) != 0 && comm.rfind("kswapd", 0) != 0) continue;
    unsigned long long utime = 0, stime = 0;
    // After the name: state, then fields 4..13, then utime and stime.
    if (sscanf(close + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) == 2)
      ticks += (double)(utime + stime);
  }
  if (d != nullptr) closedir(d);
  return ticks / (double)sysconf(_SC_CLK_TCK);
}

// The physical address range of a node's memory blocks, [*start, *end).
inline bool NodeRange(int node, unsigned long long *start, unsigned long long *end) {
  unsigned long long block = strtoull(ReadText("/sys/devices/system/memory/block_size_bytes").c_str(),
                                      nullptr, 16);
  std::string dir = "/sys/devices/system/node/node" + std::to_string(node);
  DIR *d = opendir(dir.c_str());
  long long lo = -1, hi = -1;
  for (dirent *e; d != nullptr && (e = readdir(d)) != nullptr;) {
    char *rest;
    if (strncmp(e->d_name, "memory", 6) != 0 || e->d_name[6] < '0' || e->d_name[6] > '9') continue;
    long long id = strtoll(e->d_name + 6, &rest, 10);
    if (*rest != '\0') continue;
    lo = lo < 0 || id < lo ? id : lo;
    hi = id > hi ? id : hi;
  }
  if (d != nullptr) closedir(d);
  if (block == 0 || lo < 0) return false;
  *start = (unsigned long long)lo * block;
  *end = (unsigned long long)(hi + 1) * block;
  return true;
}

constexpr const char *kBalancingMode = "/proc/sys/kernel/numa_balancing";

// NUMA balancing in tiering mode, demotion on; balancing off after, not
// back to its normal mode: pages of lower tiers keep the access times
// tiering mode wrote where the normal mode reads a CPU, and the first
// hinting fault on one crashed Linux 6.12.117 (in task_numa_fault).
class Balancing {
 public:
  bool Start() {
    started_ = true;
    saved_demotion_ = ReadText(kDemotion);
    return WriteText(kBalancingMode, "2") && WriteText(kDemotion, "true");
  }
  ~Balancing() {
    if (!started_) return;
    WriteText(kBalancingMode, "0");
    if (!saved_demotion_.empty()) WriteText(kDemotion, saved_demotion_);
  }

 private:
  static constexpr const char *kDemotion = "/sys/kernel/mm/numa/demotion_enabled";
  bool started_ = false;
  std::string saved_demotion_;
};

// Two kdamonds on physical addresses, as the kernel's memory-tiering
// sample sets them up: one promotes regions of the slow node with any
// access to the fast node (migrate_hot), the other demotes regions of the
// fast node with none to the slow node (migrate_cold); 5 ms samples,
// 100 ms aggregation, 10 to 1000 regions, schemes applied every second,
// at most 200 MiB a second each, pages the young filter says were not
// accessed since left out of promotion and accessed ones out of demotion.
// The sample's aim of a fixed fill of the fast node (a quota goal) needs
// Linux 6.16; the capacity cut does that work here.
class Damon {
 public:
  bool Start(int fast, int slow) {
    made_ = true;
    if (!WriteText(kRoot + "nr_kdamonds", "2")) return false;
    for (int i = 0; i < 2; i++) {
      bool promote = i == 0;
      unsigned long long start, end;
      if (!NodeRange(promote ? slow : fast, &start, &end)) return false;
      std::string c = kRoot + std::to_string(i) + "/contexts/";
      std::string s = c + "0/schemes/0/";
      const std::vector<std::pair<std::string, std::string>> settings = {
          {c + "nr_contexts", "1"},
          {c + "0/operations", "paddr"},
          {c + "0/monitoring_attrs/intervals/sample_us", "5000"},
          {c + "0/monitoring_attrs/intervals/aggr_us", "100000"},
          {c + "0/monitoring_attrs/intervals/update_us", "60000000"},
          {c + "0/monitoring_attrs/nr_regions/min", "10"},
          {c + "0/monitoring_attrs/nr_regions/max", "1000"},
          {c + "0/targets/nr_targets", "1"},
          {c + "0/targets/0/regions/nr_regions", "1"},
          {c + "0/targets/0/regions/0/end", std::to_string(end)},
          {c + "0/targets/0/regions/0/start", std::to_string(start)},
          {c + "0/schemes/nr_schemes", "1"},
          {s + "action", promote ? "migrate_hot" : "migrate_cold"},
          {s + "target_nid", std::to_string(promote ? fast : slow)},
          {s + "apply_interval_us", "1000000"},
          {s + "access_pattern/sz/min", "4096"},
          {s + "access_pattern/sz/max", "18446744073709551615"},
          {s + "access_pattern/nr_accesses/min", promote ? "1" : "0"},
          {s + "access_pattern/nr_accesses/max", promote ? "4294967295" : "0"},
          {s + "access_pattern/age/min", "0"},
          {s + "access_pattern/age/max", "4294967295"},
          {s + "quotas/bytes", std::to_string(200 << 20)},
          {s + "quotas/reset_interval_ms", "1000"},
          {s + "quotas/weights/sz_permil", "0"},
          {s + "quotas/weights/nr_accesses_permil", "100"},
          {s + "quotas/weights/age_permil", "100"},
          {s + "filters/nr_filters", "1"},
          {s + "filters/0/type", "young"},
          {s + "filters/0/matching", promote ? "N" : "Y"},
      };
      for (const auto &kv : settings)
        if (!WriteText(kv.first, kv.second)) return false;
    }
    for (int i = 0; i < 2; i++)
      if (!WriteText(kRoot + std::to_string(i) + "/state", "on")) return false;
    on_ = true;
    return true;
  }
  // What the schemes tried and applied, in bytes: "tried:applied" for
  // the promoting kdamond, then for the demoting one.
  std::string Stats() const {
    std::string out;
    for (int i = 0; on_ && i < 2; i++) {
      WriteText(kRoot + std::to_string(i) + "/state", "update_schemes_stats");
      std::string st = kRoot + std::to_string(i) + "/contexts/0/schemes/0/stats/";
      out += (i ? " " : "") + ReadText(st + "sz_tried") + ":" + ReadText(st + "sz_applied");
    }
    return out;
  }
  ~Damon() {
    for (int i = 0; on_ && i < 2; i++) WriteText(kRoot + std::to_string(i) + "/state", "off");
    if (made_) WriteText(kRoot + "nr_kdamonds", "0");
  }

 private:
  const std::string kRoot = "/sys/kernel/mm/damon/admin/kdamonds/";
  bool made_ = false, on_ = false;
};

// Cuts the fast node's free memory down to `keep` bytes above a margin by
// reserving the rest as 2 MiB hugetlb pages: memory that no mechanism,
// ours or the kernel's, can fill or move, so that all of them meet the
// same capacity.  The margin: the node's watermarks, or, where that is
// more and `ours` is set, the margin libsicm keeps free on a move's
// target (`ours` false: the kernel's mechanisms alone, which stop at
// their watermarks).  The node is compacted and the cut retried while
// fragmentation left more than a huge page over.  Given back when it goes.
class Capacity {
 public:
  Capacity(int node, size_t keep, bool ours = true)
      : path_(NodePath(node) + "/hugepages/hugepages-2048kB/nr_hugepages") {
    WriteText(path_, "0");
    size_t margin = ours ? std::max(Watermarks(node), (size_t)33 << 20) : Watermarks(node);
    long long want = (long long)(keep + margin), reserved = 0;
    for (int tries = 0; tries < 4; tries++) {
      long long excess = NodeFree(node) - want;
      if (excess < (2 << 20)) break;
      if (tries > 0) WriteText(NodePath(node) + "/compact", "1");
      reserved += excess >> 21;
      WriteText(path_, std::to_string(reserved));
      reserved = atoll(ReadText(path_).c_str());
    }
    free_ = NodeFree(node) - (long long)Watermarks(node);
  }
  ~Capacity() { WriteText(path_, "0"); }
  long long FreeAboveWatermarks() const { return free_; }

 private:
  static std::string NodePath(int node) { return "/sys/devices/system/node/node" + std::to_string(node); }
  // The node's MemFree, as libsicm reads it for a move's room check.
  static long long NodeFree(int node) {
    size_t bytes = 0;
    return sicm_device_get_free_bytes(sicm_device_of_node(node, 0), &bytes) == 0 ? (long long)bytes : -1;
  }
  // The node's high (or, where higher, promotion) watermarks, in bytes:
  // free memory the kernel keeps, so not capacity.
  static size_t Watermarks(int node) {
    FILE *f = fopen("/proc/zoneinfo", "r");
    char line[256];
    int at = -1;
    unsigned long long pages = 0, zone = 0;
    while (f != nullptr && fgets(line, sizeof line, f)) {
      unsigned long long v;
      char key[32];
      if (sscanf(line, "Node %d, zone", &at) == 1) {
        pages += zone;
        zone = 0;
      } else if (at == node && sscanf(line, " %31s %llu", key, &v) == 2 &&
                 (strcmp(key, "high") == 0 || strcmp(key, "promo") == 0) && v > zone) {
        zone = v;
      }
    }
    if (f != nullptr) fclose(f);
    return (size_t)(pages + zone) * (size_t)sysconf(_SC_PAGESIZE);
  }
  std::string path_;
  long long free_;
};

}  // namespace tiering

#endif
