/* SPDX-License-Identifier: BSD-3-Clause */
// bench_topology.cc: sicm_init() in N processes started together on one
// node (N "ranks": 1, 2, 4, 8, 16), each running hwloc's discovery, against
// the same N sharing the node's topology (sicm_init_with
// SICM_INIT_SHARE_TOPOLOGY): "cold" starts with no topology file, so one
// rank discovers and publishes while the others wait and adopt; "warm"
// finds the file a previous job left.  Time is the mean wall time of
// sicm_init per rank; counters give the resident memory per rank after
// sicm_init and what sicm_init added to it.  Ranks are this binary run
// again with --rank; topology_plot.py turns the JSON into the table and
// plot of BENCHMARKS.md.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "sicm.h"

extern char **environ;

namespace {

enum Mode { kDiscover, kAdoptCold, kAdoptWarm };

long RssKib() {
  FILE *f = fopen("/proc/self/status", "re");
  char line[256];
  long kib = -1;
  while (f != nullptr && fgets(line, sizeof line, f) != nullptr)
    if (sscanf(line, "VmRSS: %ld kB", &kib) == 1) break;
  if (f != nullptr) fclose(f);
  return kib;
}

// A rank: waits for stdin to close (every rank starts at once), then
// prints "<init ns> <rss before KiB> <rss after KiB> <topology source>".
int RankMain(unsigned flags) {
  char c;
  while (read(0, &c, 1) > 0) {
  }
  long before = RssKib();
  timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  int rc = sicm_init_with(flags);
  clock_gettime(CLOCK_MONOTONIC, &b);
  if (rc != 0) {
    fprintf(stderr, "rank: sicm_init_with: %s\n", sicm_error_detail());
    return 1;
  }
  long ns = (b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec);
  printf("%ld %ld %ld %d\n", ns, before, RssKib(), sicm_init_topology_source());
  return sicm_fini();
}

std::string g_dir;   // SICM_TOPOLOGY_DIR of every rank

void RemoveTopologyFiles() {
  std::string cmd = "rm -f " + g_dir + "/sicm-topology-*";
  if (system(cmd.c_str()) != 0) abort();
}

struct RankResult {
  long ns = 0, before = 0, after = 0;
  int source = -1;
};

// Starts n ranks together; false if one failed.
bool RunRanks(int n, unsigned flags, std::vector<RankResult> *out) {
  int start[2];
  if (pipe(start) != 0) return false;
  std::vector<pid_t> pids(n);
  std::vector<int> outs(n);
  std::string flag = std::to_string(flags);
  char *argv[] = {(char *)"/proc/self/exe", (char *)"--rank", (char *)flag.c_str(), nullptr};
  for (int i = 0; i < n; i++) {
    int result[2];
    if (pipe(result) != 0) return false;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, start[0], 0);
    posix_spawn_file_actions_adddup2(&fa, result[1], 1);
    posix_spawn_file_actions_addclose(&fa, start[1]);
    posix_spawn_file_actions_addclose(&fa, result[0]);
    int rc = posix_spawn(&pids[i], "/proc/self/exe", &fa, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(result[1]);
    outs[i] = result[0];
    if (rc != 0) return false;
  }
  close(start[0]);
  close(start[1]);
  bool ok = true;
  out->assign(n, RankResult());
  for (int i = 0; i < n; i++) {
    char buf[256] = "";
    ssize_t len = read(outs[i], buf, sizeof buf - 1);
    buf[len > 0 ? len : 0] = '\0';
    close(outs[i]);
    RankResult &r = (*out)[i];
    ok &= sscanf(buf, "%ld %ld %ld %d", &r.ns, &r.before, &r.after, &r.source) == 4;
    int status;
    ok &= waitpid(pids[i], &status, 0) == pids[i] && WIFEXITED(status) &&
          WEXITSTATUS(status) == 0;
  }
  return ok;
}

void BM_init(benchmark::State &state) {
  const Mode mode = (Mode)state.range(0);
  const int ranks = (int)state.range(1);
  const unsigned flags = mode == kDiscover ? 0 : SICM_INIT_SHARE_TOPOLOGY;
  std::vector<RankResult> r;
  double rss = 0, added = 0, adopted = 0, rounds = 0;
  if (mode == kAdoptWarm && !RunRanks(1, flags, &r)) state.SkipWithError("warm-up failed");
  for (auto _ : state) {
    if (mode == kAdoptCold) RemoveTopologyFiles();
    if (!RunRanks(ranks, flags, &r)) {
      state.SkipWithError("a rank failed");
      break;
    }
    double ns = 0;
    for (const RankResult &x : r) {
      ns += (double)x.ns;
      rss += (double)x.after;
      added += (double)(x.after - x.before);
      adopted += x.source == SICM_TOPOLOGY_ADOPTED;
    }
    rounds += ranks;
    state.SetIterationTime(ns / ranks / 1e9);
  }
  if (rounds > 0) {
    state.counters["rss_kib"] = rss / rounds;
    state.counters["init_rss_kib"] = added / rounds;
    state.counters["adopted"] = adopted / rounds;
  }
  state.SetLabel(mode == kDiscover ? "discover" : mode == kAdoptCold ? "adopt_cold" : "adopt_warm");
}

BENCHMARK(BM_init)
    ->ArgNames({"mode", "ranks"})
    ->ArgsProduct({{kDiscover, kAdoptCold, kAdoptWarm}, {1, 2, 4, 8, 16}})
    ->UseManualTime()
    ->Iterations(10)
    ->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--rank") == 0) return RankMain((unsigned)atoi(argv[2]));
  char tmpl[] = "/tmp/sicm-bench-topology-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 1;
  g_dir = tmpl;
  setenv("SICM_TOPOLOGY_DIR", tmpl, 1);
  unsetenv("SICM_SHARE_TOPOLOGY");
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  RemoveTopologyFiles();
  rmdir(tmpl);
  return 0;
}
