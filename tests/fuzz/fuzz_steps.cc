/* SPDX-License-Identifier: BSD-3-Clause */
// fuzz_steps.cc: what each operation of the fuzzer does to the library and
// to the model (fuzz_model.h), and the sequence a seed makes.  Every call
// the library refuses is checked against the errnos its header documents,
// and the model is checked to be unchanged.
#include <errno.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <random>
#include <string>
#include <thread>

#include "fuzz_model.h"
#include "sicm_fixed.h"
#include "sicm_migration.h"
#include "sicm_shared.h"
#include "sicm_upkeep.h"

namespace fuzz {
namespace {

const char *const kOpNames[] = {"create", "destroy", "alloc", "calloc", "aligned", "realloc",
                                "free", "move", "move_async", "defrag", "upkeep", "misuse",
                                "fixed_over", "fork", "threads", "check"};
// Relative weights of the operations (KINDS entries).
const unsigned kWeights[KINDS] = {6, 3, 24, 5, 5, 10, 18, 4, 2, 4, 1, 4, 1, 1, 1, 5};
constexpr size_t kArenasMax = 24;
unsigned shm_count;

// Half the interleaved arenas, and some moves, are WEIGHTED, drawn from a
// field the operation already has, so that a seed's operations stay what
// they were before WEIGHTED.

// ---- arenas ----
void Create(const Op &op) {
  if (arenas.size() >= kArenasMax) return;
  ArenaM m{};
  m.kind = (ArenaKind)(op.a % K_KINDS);
  if (m.kind == K_HUGETLB && huge_devs.empty()) m.kind = K_DEVICE;
  sicm_device *dev = BaseDev(op.b);
  m.devs = {dev};
  m.strict = true;
  size_t size = ((size_t)1 + op.c % 16) << 20;
  switch (m.kind) {
    case K_DEVICE:
    case K_HUGETLB:
      if (m.kind == K_HUGETLB) m.devs = {huge_devs[op.b % huge_devs.size()]};
      m.maxsize = op.c % 3 == 0 ? size : 0;
      m.h = sicm_arena_create(m.maxsize, m.devs[0]);
      break;
    case K_DEVICES: {
      unsigned n = 1 + op.c % (base_devs.size() < 3 ? base_devs.size() : 3);
      m.devs.clear();
      for (unsigned i = 0; i < n; i++) m.devs.push_back(BaseDev(op.b + i));
      static const unsigned placements[] = {0, SICM_ARENA_PREFERRED, SICM_ARENA_INTERLEAVE,
                                            SICM_ARENA_FIRST_TOUCH};
      unsigned flags = placements[op.c % 4];
      if (flags == SICM_ARENA_INTERLEAVE && op.b % 2) flags = SICM_ARENA_WEIGHTED;
      m.strict = flags == 0 || flags == SICM_ARENA_INTERLEAVE || flags == SICM_ARENA_WEIGHTED;
      m.h = sicm_arena_create_devices(0, m.devs.data(), n, flags);
      m.history = " flags " + std::to_string(flags);
      break;
    }
    case K_ANYWHERE:
      m.h = sicm_arena_create_devices(0, &dev, 1, SICM_ARENA_ANYWHERE);
      break;
    case K_FIXED:
      m.range_len = (1 + op.c % 2048) * (size_t)sysconf(_SC_PAGESIZE);
      m.range = (char *)mmap(nullptr, m.range_len, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m.range == MAP_FAILED) Fail("mmap for a fixed arena");
      if (op.b % 2) m.devs.clear(), m.strict = false;
      m.h = sicm_arena_create_fixed(m.range, m.range_len, op.b % 2 ? nullptr : dev);
      m.maxsize = m.range_len;
      break;
    case K_SHARED: {
      std::string name = "/sicm-fuzz-" + std::to_string(getpid()) + "-" + std::to_string(shm_count++);
      m.h = sicm_arena_create_shared(name.c_str(), size, dev, 0600);
      sicm_arena_unlink(name.c_str());  // the mapping stays while attached
      m.maxsize = size;
      break;
    }
    default:
      m.h = sicm_arena_create_file("/dev/shm", size, dev);
      m.maxsize = size;
      break;
  }
  int err = errno;
  ExpectErrno(m.h == nullptr, err, {ENOMEM, EAGAIN, ENOSPC}, kKindNames[m.kind]);
  if (m.h == nullptr) {
    if (m.range) munmap(m.range, m.range_len);
    return;
  }
  m.history = "made at step " + std::to_string(step_index) + m.history;
  arenas.push_back(m);
  stats.arenas++;
}

void Destroy(const Op &op) {
  if (arenas.empty()) return;
  size_t i = op.a % arenas.size();
  ArenaM a = arenas[i];
  std::vector<char *> gone;
  for (size_t k = blocks.size(); k-- > 0;)
    if (blocks[k].h == a.h) gone.push_back(blocks[k].p), DropBlock(k);
  int rc = a.kind == K_SHARED ? sicm_arena_detach(a.h) : sicm_arena_destroy(a.h);
  if (rc != 0) Fail("destroying a live %s arena failed", kKindNames[a.kind]);
  arenas.erase(arenas.begin() + (long)i);
  for (char *p : gone)
    if (sicm_arena_lookup(p) == a.h) Fail("a block of a destroyed arena still finds it");
  if (a.range) munmap(a.range, a.range_len);
  stale.push_back(a.h);
}

// Moves an arena to other devices of its page size, in one call or in the
// background (cancelled or not); on refusal nothing changes.
void Move(const Op &op, bool async) {
  if (arenas.empty()) return;
  ArenaM &a = arenas[op.a % arenas.size()];
  std::vector<sicm_device *> to;
  if (a.kind == K_HUGETLB) {
    to = {huge_devs[op.b % huge_devs.size()]};
  } else {
    unsigned n = 1 + op.c % (base_devs.size() < 2 ? base_devs.size() : 2);
    for (unsigned i = 0; i < n; i++) to.push_back(BaseDev(op.b + i));
  }
  unsigned flags = op.c % 4 == 3               ? SICM_ARENA_PREFERRED
                   : op.c % 4 == 1 && op.b % 2 ? SICM_ARENA_WEIGHTED
                                               : 0;
  int rc, err;
  if (async) {
    sicm_migration *m = sicm_arena_set_devices_async(a.h, to.data(), (unsigned)to.size(), flags);
    if (m != nullptr && op.c % 2) sicm_migration_cancel(m);
    rc = m ? sicm_migration_wait(m, nullptr) : -1;
    err = errno;
    ExpectErrno(rc != 0, err, {ENOMEM, EIO, EPERM, ECANCELED, EINVAL}, "an asynchronous move");
  } else {
    rc = sicm_arena_set_devices(a.h, to.data(), (unsigned)to.size(), flags);
    err = errno;
    ExpectErrno(rc != 0, err, {ENOMEM, EIO, EPERM, EINVAL}, "a move");
  }
  bool fixed_alone = a.kind == K_FIXED && a.devs.empty();
  if (rc != 0 && err == EINVAL && !fixed_alone) Fail("a move to devices of its page size: EINVAL");
  if (rc == 0 && fixed_alone) Fail("a fixed arena made without a device moved");
  a.history += "; step " + std::to_string(step_index) + (async ? " move_async" : " move") + " to";
  for (sicm_device *d : to) a.history += " " + std::to_string(d->node);
  a.history += " flags " + std::to_string(flags) + ": " + (rc == 0 ? "done" : strerror(err));
  // The kernel interleaves a page whose node has no free huge page onto
  // another node: a hugetlb arena interleaved is not strictly bound.
  if (rc == 0) a.devs = to, a.strict = flags == 0 || (flags == SICM_ARENA_WEIGHTED && a.kind != K_HUGETLB);
  CheckArena(a);
  for (const BlockM &b : blocks)
    if (b.h == a.h) CheckBlock(b);
}

// The regression of a refused sicm_arena_create_fixed() that bound another
// arena's block: the block's policy must not change.
void FixedOver(const Op &op) {
  if (blocks.empty()) return;
  const BlockM &b = blocks[op.a % blocks.size()];
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  char *lo = (char *)(((uintptr_t)b.p + page - 1) & ~(page - 1));
  if (lo + page > b.p + b.size) return;
  int before = -1, after = -1;
  if (get_mempolicy(&before, nullptr, 0, lo, MPOL_F_ADDR) != 0) Fail("get_mempolicy");
  sicm_arena f = sicm_arena_create_fixed(lo, page, BaseDev(op.b));
  if (f != nullptr) Fail("a fixed arena over another arena's block was made");
  ExpectErrno(true, errno, {EINVAL}, "a fixed arena over another arena's block");
  if (get_mempolicy(&after, nullptr, 0, lo, MPOL_F_ADDR) != 0 || after != before)
    Fail("the refused fixed arena changed the block's policy (%d -> %d)", before, after);
  CheckBlock(b);
}

}  // namespace

void StepBlocks(const Op &op);  // fuzz_blocks.cc

void Step(const Op &op) {
  switch (op.kind) {
    case CREATE: Create(op); break;
    case DESTROY: Destroy(op); break;
    case MOVE: Move(op, false); break;
    case MOVE_ASYNC: Move(op, true); break;
    case FIXED_OVER: FixedOver(op); break;
    case UPKEEP:
      if (sicm_background_threads((int)(op.b % 2)) != 0) Fail("the upkeep switch refused");
      break;
    case CHECK: CheckAll(); break;
    default: StepBlocks(op); break;
  }
}

std::vector<Op> MakeOps(uint64_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  unsigned total = 0;
  for (unsigned w : kWeights) total += w;
  std::vector<Op> ops(n);
  for (Op &op : ops) {
    unsigned pick = (unsigned)(rng() % total), k = 0;
    while (pick >= kWeights[k]) pick -= kWeights[k++];
    op = {(Kind)k, (uint32_t)rng(), (uint32_t)rng(), (uint32_t)rng()};
  }
  return ops;
}

std::string OpText(const Op &op) {
  char text[96];
  snprintf(text, sizeof text, "%s %u %u %u", kOpNames[op.kind], op.a, op.b, op.c);
  return text;
}

}  // namespace fuzz
