/* SPDX-License-Identifier: BSD-3-Clause */
// fuzz_main.cc: the operation fuzzer's driver.  Each run is a sequence of
// operations made from a seed, carried out in a child process (a crash or
// a hang costs one run) against the model; a failing run is shrunk — its
// shortest failing prefix, then operations removed while it still fails —
// and printed with the command that replays it.
//
//   sicm-fuzz [--seed S] [--runs N | --seconds T] [--ops N] [--check-mode]
//             [--replay S --keep I,J,...]
// --check-mode: under SICM_CHECK=1 each run ends in a misuse that must stop
// the process with one line.  Prints progress every 10 s, then one line:
// runs, operations, operations per second; exit 0, or 1 on a failure.
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "fuzz.h"

namespace {

struct Options {
  uint64_t seed = 1;
  unsigned runs = 0;
  double seconds = 0;
  size_t ops = 2000;
  bool check_mode = false, replay = false;
  std::vector<size_t> keep;
};

struct Outcome {
  bool failed;
  std::string err;  // the child's stderr
  fuzz::RunStats stats;
  double seconds;
};

double Now() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

// Reads fd to its end into *out (the child's stderr or stats).
void Drain(int fd, std::string *out) {
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) out->append(buf, (size_t)n);
}

// Runs ops in a child; in the checking mode success is the child stopped
// by abort() with one SICM_CHECK line.
Outcome RunChild(const std::vector<fuzz::Op> &ops, bool check_mode, uint64_t seed) {
  int err_pipe[2], stats_pipe[2];
  if (pipe(err_pipe) != 0 || pipe(stats_pipe) != 0) {
    perror("sicm-fuzz: pipe");
    exit(2);
  }
  double start = Now();
  pid_t pid = fork();
  if (pid == 0) {
    dup2(err_pipe[1], 2);
    close(err_pipe[0]);
    close(stats_pipe[0]);
    if (check_mode) setenv("SICM_CHECK", "1", 1);
    fuzz::RunStats s = fuzz::Run(ops, check_mode, seed);
    if (write(stats_pipe[1], &s, sizeof s) != (ssize_t)sizeof s) _exit(2);
    _exit(0);
  }
  close(err_pipe[1]);
  close(stats_pipe[1]);
  Outcome o{};
  std::string raw;
  Drain(stats_pipe[0], &raw);  // ends when the child does
  Drain(err_pipe[0], &o.err);
  close(err_pipe[0]);
  close(stats_pipe[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  o.seconds = Now() - start;
  if (raw.size() == sizeof o.stats) memcpy(&o.stats, raw.data(), sizeof o.stats);
  if (check_mode) {
    size_t lines = 0, now = o.err.find("FUZZ MISUSE NOW");
    for (size_t at = 0; (at = o.err.find("SICM_CHECK", at)) != std::string::npos; at++) lines++;
    o.failed = !(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && lines == 1 &&
                 now != std::string::npos && o.err.find("SICM_CHECK") > now);
    if (o.failed && o.err.empty())
      o.err = "the checking mode ended with status " + std::to_string(status) + "\n";
  } else {
    o.failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (o.failed && o.err.find("FUZZ") == std::string::npos)
      o.err += "the run ended with status " + std::to_string(status) +
               (WIFSIGNALED(status) ? std::string(" (signal ") + strsignal(WTERMSIG(status)) + ")" : "") + "\n";
  }
  return o;
}

std::vector<fuzz::Op> Pick(const std::vector<fuzz::Op> &all, const std::vector<size_t> &keep) {
  std::vector<fuzz::Op> ops;
  for (size_t i : keep) ops.push_back(all[i]);
  return ops;
}

// The shortest failing prefix, then chunks removed while it still fails;
// at most `budget` runs.
// What a failure says, without its numbers (steps, addresses, sizes): a
// shrunk sequence must fail the same way, not another.
std::string Signature(const std::string &err) {
  size_t at = err.find("): ");
  std::string what = at == std::string::npos ? err : err.substr(at + 3);
  what = what.substr(0, what.find(" ["));
  std::string sig;
  for (char c : what)
    if (!isdigit((unsigned char)c) && !isxdigit((unsigned char)c)) sig += c;
  return sig;
}

std::vector<size_t> Shrink(const std::vector<fuzz::Op> &all, bool check_mode, uint64_t seed,
                           const std::string &signature, unsigned budget) {
  // Shrinking stops after FUZZ_SHRINK_SECONDS (default 5 minutes), or `budget` runs.
  const char *limit = getenv("FUZZ_SHRINK_SECONDS");
  double until = Now() + (limit ? atof(limit) : 300);
  auto fails = [&](const std::vector<size_t> &keep) {
    if (budget == 0 || Now() > until) return false;
    budget--;
    Outcome r = RunChild(Pick(all, keep), check_mode, seed);
    return r.failed && Signature(r.err) == signature;
  };
  std::vector<size_t> keep;
  size_t lo = 1, hi = all.size();
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    keep.resize(mid);
    for (size_t i = 0; i < mid; i++) keep[i] = i;
    if (fails(keep)) hi = mid; else lo = mid + 1;
  }
  keep.resize(hi);
  for (size_t i = 0; i < hi; i++) keep[i] = i;
  for (size_t chunk = keep.size() / 2; chunk >= 1; chunk /= 2) {
    for (size_t at = 0; at + chunk <= keep.size();) {
      std::vector<size_t> fewer(keep.begin(), keep.begin() + (long)at);
      fewer.insert(fewer.end(), keep.begin() + (long)(at + chunk), keep.end());
      if (!fewer.empty() && fails(fewer)) keep = fewer; else at += chunk;
    }
    fprintf(stderr, "sicm-fuzz: shrinking: %zu operations left\n", keep.size());
  }
  return keep;
}

void Report(const std::vector<fuzz::Op> &all, const std::vector<size_t> &keep, const Options &o,
            uint64_t seed) {
  fprintf(stderr, "sicm-fuzz: failing sequence shrunk to %zu of %zu operations:\n", keep.size(),
          all.size());
  std::string list;
  for (size_t i : keep) {
    fprintf(stderr, "  [%zu] %s\n", i, fuzz::OpText(all[i]).c_str());
    list += (list.empty() ? "" : ",") + std::to_string(i);
  }
  fprintf(stderr, "replay: sicm-fuzz --replay %llu --ops %zu%s --keep %s\n", (unsigned long long)seed, o.ops,
          o.check_mode ? " --check-mode" : "", list.c_str());
}

Options Parse(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--check-mode") { o.check_mode = true; continue; }
    if (v == nullptr) { fprintf(stderr, "sicm-fuzz: %s needs a value\n", a.c_str()); exit(2); }
    i++;
    if (a == "--seed") o.seed = strtoull(v, nullptr, 0);
    else if (a == "--runs") o.runs = (unsigned)strtoul(v, nullptr, 0);
    else if (a == "--seconds") o.seconds = strtod(v, nullptr);
    else if (a == "--ops") o.ops = strtoull(v, nullptr, 0);
    else if (a == "--replay") o.replay = true, o.seed = strtoull(v, nullptr, 0);
    else if (a == "--keep")
      for (char *s = argv[i]; *s;) o.keep.push_back(strtoull(s, &s, 10)), s += *s == ',';
    else { fprintf(stderr, "sicm-fuzz: unknown option %s\n", a.c_str()); exit(2); }
  }
  if (o.runs == 0 && o.seconds == 0) o.runs = 1;
  return o;
}

}  // namespace

int main(int argc, char **argv) {
  Options o = Parse(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  if (o.replay) {
    std::vector<fuzz::Op> all = fuzz::MakeOps(o.seed, o.ops);
    if (o.keep.empty())
      for (size_t i = 0; i < all.size(); i++) o.keep.push_back(i);
    for (size_t i : o.keep)
      if (i >= all.size()) fprintf(stderr, "sicm-fuzz: --keep %zu: only %zu operations\n", i, all.size()), exit(2);
    Outcome r = RunChild(Pick(all, o.keep), o.check_mode, o.seed);
    fputs(r.err.c_str(), stderr);
    printf("sicm-fuzz: replay of seed %llu: %s\n", (unsigned long long)o.seed, r.failed ? "fails" : "passes");
    return r.failed;
  }
  double start = Now(), last_progress = start, busy = 0;
  size_t total_ops = 0, arenas = 0, refused = 0;
  unsigned run = 0;
  for (; o.runs ? run < o.runs : Now() - start < o.seconds; run++) {
    uint64_t seed = o.seed + run;
    std::vector<fuzz::Op> all = fuzz::MakeOps(seed, o.ops);
    Outcome r = RunChild(all, o.check_mode, seed);
    busy += r.seconds;
    total_ops += o.check_mode ? o.ops : r.stats.ops;
    arenas += r.stats.arenas;
    refused += r.stats.refused;
    if (r.failed) {
      fprintf(stderr, "sicm-fuzz: seed %llu fails:\n%s", (unsigned long long)seed, r.err.c_str());
      Report(all, Shrink(all, o.check_mode, seed, Signature(r.err), 400), o, seed);
      return 1;
    }
    if (Now() - last_progress >= 10) {
      last_progress = Now();
      fprintf(stderr, "sicm-fuzz: %u runs, %zu operations, %.0f s\n", run + 1, total_ops,
              last_progress - start);
    }
  }
  printf("sicm-fuzz: %u runs from seed %llu%s, %zu operations (%zu arenas, %zu calls refused), "
         "%.0f operations/s, no failure\n",
         run, (unsigned long long)o.seed, o.check_mode ? " in the checking mode" : "", total_ops,
         arenas, refused, busy > 0 ? (double)total_ops / busy : 0.0);
  return 0;
}
