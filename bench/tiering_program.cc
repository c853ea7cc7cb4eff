/* SPDX-License-Identifier: BSD-3-Clause */
// tiering_program.cc: an unmodified program (hpcc) under the placer and
// under the kernel's own tiering, in the multi-NUMA guest as root on
// Linux 6.12 (`make bench-tiering`, after bench_tiering's traces).
//
//   tiering_program MODE PRELOAD STATS -- PROGRAM ARGS...
//
// (STATS: where the placer modes' SICM_STATS report goes, a .json file:
// the placer's own CPU seconds, its moves' apart.)
//
// The program runs on CPU 0 (node 0), its memory bound to the fast and
// the slow node (SICM_TIERING_FAST, SICM_TIERING_SLOW), which it fills in
// the kernel's order: node 0 first, as first touch would, then the other.
// The fast node's room is cut to the budget (SICM_TIERING_BUDGET_MIB,
// default 24) for every mode: above the kernel's watermarks for the
// kernel's modes, above libsicm's margin on a move's target for the
// placer's (Capacity), so that each may fill the same bytes.  The modes:
//   none       that binding alone;
//   placer     the preload (PRELOAD) puts blocks of 1 MiB or more in one
//              arena per allocation site on node 0, spilling to the other
//              node past the budget, and the placer (200 ms interval, the
//              fast budget) moves the hot sites' arenas;
//   placer-1%cpu  the same, measuring held to its default 1% of a core;
//   placer-1%cpu-thp  the same with the system's transparent huge pages
//              "always", so that the preload's arenas get them and the
//              placer measures them per 2 MiB;
//   placer-1%cpu-huge  the same with the preload's pages=huge instead:
//              its arenas advised huge, the system's setting untouched
//              (what a user without root can ask);
//   balancing  NUMA balancing in tiering mode, demotion on (the binding
//              has MPOL_F_NUMA_BALANCING, so that it may move pages
//              between the two nodes);
//   balancing-thp  the same with transparent huge pages "always";
//   damon      DAMON's migrate_hot/migrate_cold schemes as bench_tiering
//              sets them up.
//
// The measure is the traces' one, taken from outside the program: every
// 200 ms the pages the program wrote, each counted where it is.  This
// process (on CPU 1) reads each resident page's soft-dirty bit and frame
// from the program's pagemap (the frame's memory block gives the node),
// then clears the bits (/proc/PID/clear_refs).  Writes, not all accesses:
// Debian's kernel has no idle-page tracking, the one per-page accessed
// bit another process may read; the soft-dirty bit is one neither the
// placer (the accessed bits, MADV_COLD) nor the kernel's tiering (hinting
// faults, DAMON's accessed bits) uses, so measuring disturbs none of them.
// Every section of hpcc writes its working set (HPL's trailing matrix,
// STREAM's three vectors, RandomAccess's table, DGEMM's and FFT's
// results, PTRANS's matrix); the arrays it only reads in a step are not
// counted in that step.
// share: pages written on the fast node / all pages written, over the
// run, no look credited with more fast pages than the budget holds (the
// best use of the budget, as bench_tiering credits).  The kernel may hold
// more of the program on the fast node than the budget (the cut counts
// free memory, and first touch fills down to the low watermark), so also
// share_scaled: each look's written fast pages scaled down by budget /
// the program's pages on the fast node where those are more (an average
// use), and those pages' mean and peak.
//
// One line per run on stdout (JSON): mode, the shares, written
// page-intervals, the program's fast pages, MiB migrated
// (pgmigrate_success), the program's CPU seconds (its threads: the
// placer's, its hinting faults, the write faults measuring adds to every
// mode alike), the kernel's tiering threads' (kdamond, kswapd), this
// sampler's, and the wall time.
#include <fcntl.h>
#include <numaif.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sicm.h"
#include "tiering_kernel.h"
#include "trace_shapes.h"

// PAGEMAP_SCAN (Linux 6.7): the present pages of a range as a list of
// runs, so that arenas' mostly empty windows cost nothing to look at.
#ifndef PAGEMAP_SCAN
struct page_region {
  uint64_t start, end, categories;
};
struct pm_scan_arg {
  uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
  uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#define PAGE_IS_PRESENT (1 << 1)
#endif
#ifndef MPOL_F_NUMA_BALANCING
#define MPOL_F_NUMA_BALANCING (1 << 13)  // Linux 5.12, for MPOL_BIND
#endif

namespace {

constexpr uint64_t kPage = 4096;

enum Mode {
  NONE, PLACER, PLACER_FRUGAL, PLACER_FRUGAL_HUGE, PLACER_FRUGAL_PAGES, BALANCING, BALANCING_HUGE,
  DAMON, MODES
};
const char *const kModeNames[MODES] = {"none",          "placer",    "placer-1%cpu",
                                       "placer-1%cpu-thp", "placer-1%cpu-huge", "balancing",
                                       "balancing-thp", "damon"};

bool Placed(Mode m) {
  return m == PLACER || m == PLACER_FRUGAL || m == PLACER_FRUGAL_HUGE || m == PLACER_FRUGAL_PAGES;
}
bool Balanced(Mode m) { return m == BALANCING || m == BALANCING_HUGE; }
bool Huge(Mode m) { return m == PLACER_FRUGAL_HUGE || m == BALANCING_HUGE; }

// The system's transparent huge pages "always" for a run (an unmodified
// program's memory, and the preload's arenas, get them only so), and
// back to the setting before.
class HugeAlways {
 public:
  explicit HugeAlways(bool on) {
    if (!on) return;
    std::string now = tiering::ReadText(kEnabled);
    size_t open = now.find('['), close = now.find(']');
    if (open != std::string::npos && close > open) saved_ = now.substr(open + 1, close - open - 1);
    tiering::WriteText(kEnabled, "always");
  }
  ~HugeAlways() {
    if (!saved_.empty()) tiering::WriteText(kEnabled, saved_);
  }

 private:
  static constexpr const char *kEnabled = "/sys/kernel/mm/transparent_hugepage/enabled";
  std::string saved_;
};

// Which node a page frame is on: the nodes' physical ranges.
struct Frames {
  std::vector<int> nodes;
  std::vector<unsigned long long> starts, ends;
  bool Add(int node) {
    unsigned long long s, e;
    if (!tiering::NodeRange(node, &s, &e)) return false;
    nodes.push_back(node), starts.push_back(s / kPage), ends.push_back(e / kPage);
    return true;
  }
  int NodeOf(uint64_t pfn) const {
    for (size_t i = 0; i < nodes.size(); i++)
      if (pfn >= starts[i] && pfn < ends[i]) return nodes[i];
    return -1;
  }
};

// The program's pages written since the last look: for each present
// page of its writable private mappings whose soft-dirty bit is set, its
// frame; and every present page's frame (*resident).  Then clears the
// bits.
// (pagemap opened anew each time: a descriptor keeps the address space it
// was opened on, which an exec replaces.)
bool WrittenFrames(pid_t pid, std::vector<uint64_t> *pfns, std::vector<uint64_t> *resident) {
  pfns->clear();
  resident->clear();
  std::string proc = "/proc/" + std::to_string(pid);
  FILE *maps = fopen((proc + "/maps").c_str(), "r");
  int pagemap = open((proc + "/pagemap").c_str(), O_RDONLY);
  if (maps == nullptr || pagemap < 0) {
    if (maps != nullptr) fclose(maps);
    if (pagemap >= 0) close(pagemap);
    return false;
  }
  char line[512];
  std::vector<page_region> runs(1024);
  std::vector<uint64_t> entries;
  while (fgets(line, sizeof line, maps)) {
    unsigned long long lo, hi;
    char perms[8];
    if (sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) != 3 || perms[1] != 'w' || perms[3] != 'p') continue;
    for (uint64_t at = lo; at < hi;) {
      pm_scan_arg arg = {};
      arg.size = sizeof arg;
      arg.start = at, arg.end = hi;
      arg.vec = (uint64_t)(uintptr_t)runs.data(), arg.vec_len = runs.size();
      arg.category_mask = arg.return_mask = PAGE_IS_PRESENT;
      long n = ioctl(pagemap, PAGEMAP_SCAN, &arg);
      if (n < 0) break;  // the mapping went meanwhile
      for (long r = 0; r < n; r++) {
        entries.resize((runs[r].end - runs[r].start) / kPage);
        ssize_t got = pread(pagemap, entries.data(), entries.size() * 8, (off_t)(runs[r].start / kPage * 8));
        for (ssize_t i = 0; got > 0 && i < got / 8; i++) {
          if (!(entries[i] >> 63)) continue;
          resident->push_back(entries[i] & ((1ull << 55) - 1));
          if ((entries[i] >> 55) & 1) pfns->push_back(resident->back());
        }
      }
      if (arg.walk_end <= at) break;
      at = arg.walk_end;
    }
  }
  fclose(maps);
  close(pagemap);
  return tiering::WriteText(proc + "/clear_refs", "4");
}

int EnvInt(const char *name, int fallback) {
  const char *v = getenv(name);
  return v != nullptr && *v != '\0' ? atoi(v) : fallback;
}

void Pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof set, &set);
}

[[noreturn]] void RunProgram(Mode mode, const char *preload, const char *stats, int fast, int slow, size_t budget,
                             char **argv) {
  Pin(0);
  unsigned long nodes = (1ul << fast) | (1ul << slow);
  int flags = Balanced(mode) ? MPOL_F_NUMA_BALANCING : 0;
  if (set_mempolicy(MPOL_BIND | flags, &nodes, 64) != 0) {
    perror("tiering_program: set_mempolicy");
    _exit(127);
  }
  if (Placed(mode)) {
    // Node 0 first, as the binding fills it; past the budget (when node 0
    // is the fast node) the other one.
    int first = 0, other = fast == 0 ? slow : fast;
    std::string spill = fast == 0 ? ",budget=" + std::to_string(budget >> 20) + "M" : "";
    std::string place = "min=1M,sites=4,small=process,device=node:" + std::to_string(first) +
                        ",spill=node:" + std::to_string(other) + spill +
                        (mode == PLACER_FRUGAL_PAGES ? ",pages=huge" : "");
    std::string autoplace = "fast=" + std::to_string(fast) + ",budget=" + std::to_string(budget >> 20) +
                            "M,reserve=0,interval=" + std::to_string(traces::kIntervalMs) + "ms" +
                            (mode == PLACER ? ",cpu=100%" : "");
    setenv("LD_PRELOAD", preload, 1);
    setenv("SICM_PRELOAD", place.c_str(), 1);
    setenv("SICM_AUTOPLACE", autoplace.c_str(), 1);
    setenv("SICM_STATS", stats, 1);
  }
  execvp(argv[0], argv);
  perror("tiering_program: exec");
  _exit(127);
}

}  // namespace

int main(int argc, char **argv) {
  int mode = 0;
  while (argc > 5 && mode < MODES && strcmp(argv[1], kModeNames[mode]) != 0) mode++;
  if (argc < 6 || mode == MODES || strcmp(argv[4], "--") != 0) {
    fprintf(stderr,
            "usage: tiering_program MODE PRELOAD STATS -- PROGRAM...\n"
            "  MODE: none, placer, placer-1%%cpu, placer-1%%cpu-thp, placer-1%%cpu-huge, balancing,\n"
            "        balancing-thp, damon\n");
    return 2;
  }
  const int fast = EnvInt("SICM_TIERING_FAST", 2), slow = EnvInt("SICM_TIERING_SLOW", 0);
  const size_t budget = (size_t)EnvInt("SICM_TIERING_BUDGET_MIB", 24) << 20;
  Frames frames;
  if (sicm_init() != 0 || !frames.Add(fast) || !frames.Add(slow)) {
    fprintf(stderr, "tiering_program: needs the multi-NUMA guest (nodes %d and %d)\n", fast, slow);
    return 1;
  }
  Pin(1);
  tiering::WriteText(tiering::kBalancingMode, "0");
  {
    tiering::Capacity capacity(fast, budget, Placed((Mode)mode));
    HugeAlways huge(Huge((Mode)mode));
    tiering::Balancing balancing;
    tiering::Damon damon;
    if ((Balanced((Mode)mode) && !balancing.Start()) || (mode == DAMON && !damon.Start(fast, slow))) {
      fprintf(stderr, "tiering_program: %s did not start (root, Linux 6.12)\n", kModeNames[mode]);
      return 1;
    }
    long long migrated = tiering::Vmstat("pgmigrate_success");
    double kernel_cpu = tiering::KernelThreadsCpu(), sampler_cpu = tiering::ProcessCpu();
    timespec start, next;
    clock_gettime(CLOCK_MONOTONIC, &start);
    next = start;
    pid_t pid = fork();
    if (pid == 0) RunProgram((Mode)mode, argv[2], argv[3], fast, slow, budget, argv + 5);
    if (pid < 0) {
      perror("tiering_program: fork");
      return 1;
    }
    std::vector<uint64_t> pfns, resident;
    double scaled = 0, fast_resident_sum = 0, fast_resident_max = 0;
    unsigned long long on_fast = 0, all = 0, looks = 0;
    int status = 0;
    rusage usage = {};
    while (wait4(pid, &status, WNOHANG, &usage) == 0) {
      traces::SleepNextStep(&next);
      if (!WrittenFrames(pid, &pfns, &resident)) continue;
      unsigned long long fast_pages = 0, held = 0, budget_pages = budget / kPage;
      for (uint64_t pfn : pfns) fast_pages += frames.NodeOf(pfn) == fast;
      for (uint64_t pfn : resident) held += frames.NodeOf(pfn) == fast;
      on_fast += std::min(fast_pages, budget_pages);
      scaled += (double)fast_pages * std::min(1.0, (double)budget_pages / (double)std::max(held, 1ull));
      fast_resident_sum += (double)held * kPage / (1 << 20);
      fast_resident_max = std::max(fast_resident_max, (double)held * kPage / (1 << 20));
      all += pfns.size(), looks++;
    }
    timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    printf("{\"mode\": \"%s\", \"exit\": %d, \"share\": %.4f, \"share_scaled\": %.4f, \"written_pages\": %llu, "
           "\"fast_resident_mean_MiB\": %.1f, \"fast_resident_max_MiB\": %.1f, "
           "\"looks\": %llu, \"MiB_migrated\": %.1f, \"program_cpu_s\": %.2f, \"kernel_cpu_s\": %.2f, "
           "\"sampler_cpu_s\": %.2f, \"wall_s\": %.1f, \"fast_free_MiB\": %.1f}\n",
           kModeNames[mode], clean ? 0 : 1, all ? (double)on_fast / (double)all : 0.0,
           all ? scaled / (double)all : 0.0, all,
           looks ? fast_resident_sum / (double)looks : 0.0, fast_resident_max, looks,
           (double)(tiering::Vmstat("pgmigrate_success") - migrated) * 4096 / (1 << 20),
           tiering::CpuSeconds(usage), tiering::KernelThreadsCpu() - kernel_cpu,
           tiering::ProcessCpu() - sampler_cpu,
           (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) * 1e-9,
           (double)capacity.FreeAboveWatermarks() / (1 << 20));
    fflush(stdout);
    return clean ? 0 : 1;
  }
}
