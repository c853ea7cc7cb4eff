/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_model.h: the fuzzer's model (fuzz_ops.cc) — every arena and live
 * block of the run, and the checks — for the steps (fuzz_steps.cc). */
#ifndef SICM_FUZZ_MODEL_H
#define SICM_FUZZ_MODEL_H

#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "fuzz.h"
#include "sicm.h"

namespace fuzz {

enum ArenaKind { K_DEVICE, K_DEVICES, K_ANYWHERE, K_HUGETLB, K_FIXED, K_SHARED, K_FILE, K_KINDS };
extern const char *const kKindNames[];

struct ArenaM {
  sicm_arena h;
  ArenaKind kind;
  size_t maxsize;
  std::vector<sicm_device *> devs;
  bool strict;
  char *range = nullptr;  // a fixed arena's mapping
  size_t range_len = 0;
  size_t blocks = 0;
  std::string history;  // what made and moved it, for a failure's report
};

struct BlockM {
  char *p;
  size_t size;
  sicm_arena h;
  uint8_t tag;
};

extern std::vector<ArenaM> arenas;
extern std::vector<BlockM> blocks;
extern std::map<uintptr_t, size_t> by_address;  // block start -> size
extern std::vector<sicm_arena> stale;           // handles of destroyed arenas
extern std::vector<sicm_device *> base_devs, huge_devs;
extern size_t step_index, live_bytes, memory_max;
extern RunStats stats;
// A run in the checking mode: the steps make no misuse before its end.
extern bool checking;

[[noreturn]] void Fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void Fill(char *p, size_t size, uint8_t tag);
// Whether the first `size` bytes hold the pattern Fill wrote over `filled`
// bytes (0: size).
bool Intact(const char *p, size_t size, uint8_t tag, size_t filled = 0);
ArenaM *ArenaOf(sicm_arena h);
void CheckBlock(const BlockM &b);
// Adds a block the library handed out; fails if it meets a live one.
void AddBlock(char *p, size_t size, sicm_arena h, uint8_t tag);
void DropBlock(size_t i);
void CheckArena(const ArenaM &a);
void CheckAll();
void CheckEmptied(const ArenaM &a);
// A refused call (refused true) must have set one of `allowed`.
void ExpectErrno(bool refused, int err, std::initializer_list<int> allowed, const char *call);
sicm_device *BaseDev(uint32_t x);

// fuzz_steps.cc
void Step(const Op &op);
void Misuse(uint64_t seed);

}  // namespace fuzz

#endif
