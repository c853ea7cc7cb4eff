/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz.h: the operation fuzzer's shared declarations — an operation, the
 * sequence a seed makes, and the run that carries it out against the model
 * (fuzz_ops.cc) for the driver (fuzz_main.cc). */
#ifndef SICM_FUZZ_H
#define SICM_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

namespace fuzz {

enum Kind : uint8_t {
  CREATE, DESTROY, ALLOC, CALLOC, ALIGNED, REALLOC, FREE, MOVE, MOVE_ASYNC, DEFRAG, UPKEEP,
  MISUSE, FIXED_OVER, FORK, THREADS, CHECK, KINDS
};

// One operation; its numbers pick what it works on (an index modulo the
// arenas or blocks live when it runs) and how, so that any subsequence of
// a run is a run too: what shrinking needs.
struct Op {
  Kind kind;
  uint32_t a, b, c;
};

std::vector<Op> MakeOps(uint64_t seed, size_t n);
std::string OpText(const Op &op);

// What one run did; a failure ends the process (exit 1, one line on
// stderr naming the step), a hang is the watchdog's (exit 3).
struct RunStats {
  size_t ops = 0, arenas = 0, blocks = 0, refused = 0;
};

// Runs ops in this process against the model, checking after each.  With
// check_misuse (SICM_CHECK=1 set before), a final misuse must stop the
// process: returning is then the failure.
RunStats Run(const std::vector<Op> &ops, bool check_misuse, uint64_t misuse_seed);

}  // namespace fuzz

#endif
