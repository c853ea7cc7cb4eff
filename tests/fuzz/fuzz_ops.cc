/* SPDX-License-Identifier: BSD-3-Clause */
// fuzz_ops.cc: the operations of the fuzzer and the model they are checked
// against.  The model holds every arena (its kind, devices, strictness,
// maxsize) and every live block (its bytes are a pattern of its tag); after
// each operation: no two live blocks meet, each keeps its bytes, its
// usable size and its arena, no arena holds more than its maxsize, every
// resident page of a strictly bound arena is on one of its devices, an
// emptied arena with a maxsize serves 80% of it, refused calls set the
// documented errno and change nothing.  Each step has a time limit (the
// watchdog); forks and threads are steps too.
#include <errno.h>
#include <numaif.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <string>
#include <thread>

#include "fuzz_model.h"
#include "sicm_upkeep.h"

namespace fuzz {

std::vector<ArenaM> arenas;
std::vector<BlockM> blocks;
std::map<uintptr_t, size_t> by_address;
std::vector<sicm_arena> stale;
std::vector<sicm_device *> base_devs, huge_devs;
size_t step_index, live_bytes, memory_max = 256u << 20;
RunStats stats;
bool checking;
const char *const kKindNames[] = {"device", "devices", "anywhere", "hugetlb",
                                  "fixed",  "shared",  "file"};
namespace {
const Op *current;
std::atomic<uint64_t> step_started_ns{0};
unsigned step_limit_s = 60;

uint64_t NowNs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}
}  // namespace

void Fail(const char *fmt, ...) {
  char what[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  fprintf(stderr, "FUZZ FAILURE at step %zu (%s): %s [%s]\n", step_index,
          current ? OpText(*current).c_str() : "-", what, sicm_error_detail());
  _exit(1);
}

// ---- block bytes: a pattern of the tag at probe offsets ----
template <typename F>
void Probes(size_t size, F f) {
  for (size_t i = 0; i < size && i < 128; i++) f(i);
  for (size_t i = 128; i < size; i += 4093) f(i);
  for (size_t i = size > 16 ? size - 16 : 0; i < size; i++) f(i);
}
uint8_t Byte(size_t i, uint8_t tag) { return (uint8_t)(tag + i + (i >> 9)); }
void Fill(char *p, size_t size, uint8_t tag) {
  Probes(size, [&](size_t i) { p[i] = (char)Byte(i, tag); });
}
bool Intact(const char *p, size_t size, uint8_t tag, size_t filled) {
  bool ok = true;
  Probes(filled ? filled : size, [&](size_t i) { ok &= i >= size || (uint8_t)p[i] == Byte(i, tag); });
  return ok;
}

ArenaM *ArenaOf(sicm_arena h) {
  for (ArenaM &a : arenas)
    if (a.h == h) return &a;
  return nullptr;
}

// ---- the model's checks ----
void CheckBlock(const BlockM &b) {
  if (!Intact(b.p, b.size, b.tag)) Fail("block %p of %zu bytes lost its bytes", (void *)b.p, b.size);
  if (sicm_arena_lookup(b.p) != b.h) Fail("block %p: lookup names another arena", (void *)b.p);
  if (sicm_usable_size(b.p) < b.size) Fail("block %p: usable size below %zu", (void *)b.p, b.size);
}

void AddBlock(char *p, size_t size, sicm_arena h, uint8_t tag) {
  size_t need = 16;  // any object of that size: the largest power of two in it, up to 16
  while (need > size) need /= 2;
  if (((uintptr_t)p & (need - 1)) != 0) Fail("block %p of %zu bytes not aligned for its objects", (void *)p, size);
  auto next = by_address.lower_bound((uintptr_t)p);
  if (next != by_address.end() && next->first < (uintptr_t)p + size)
    Fail("block %p (%zu bytes) meets the live block at %#lx: handed out twice", (void *)p, size,
         next->first);
  if (next != by_address.begin() && std::prev(next)->first + std::prev(next)->second > (uintptr_t)p)
    Fail("block %p meets the live block at %#lx: handed out twice", (void *)p, std::prev(next)->first);
  by_address[(uintptr_t)p] = size;
  blocks.push_back({p, size, h, tag});
  ArenaOf(h)->blocks++;
  live_bytes += size;
  CheckBlock(blocks.back());
}

void DropBlock(size_t i) {
  by_address.erase((uintptr_t)blocks[i].p);
  ArenaOf(blocks[i].h)->blocks--;
  live_bytes -= blocks[i].size;
  blocks[i] = blocks.back();
  blocks.pop_back();
}

// The first node off a strictly bound arena's devices that holds its
// pages, or -1; *bytes its bytes there.
int NodeOffItsDevices(const ArenaM &a, size_t *off) {
  if (!a.strict) return -1;
  size_t bytes[64] = {0};
  if (sicm_arena_residency(a.h, bytes, 64) != 0) Fail("residency of a live arena refused");
  for (int node = 0; node < 64; node++) {
    bool bound = false;
    for (sicm_device *d : a.devs) bound |= d->node == node;
    if (!bound && bytes[node] != 0) return *off = bytes[node], node;
  }
  return -1;
}

// Where the first of a's pages off its devices is: in which live block,
// and under which policy, for a failure's report.
std::string FirstPageOff(const ArenaM &a) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  for (const BlockM &b : blocks) {
    if (b.h != a.h) continue;
    for (uintptr_t p = (uintptr_t)b.p & ~(page - 1); p < (uintptr_t)b.p + b.size; p += page) {
      void *addr = (void *)p;
      int node = -1, mode = -1;
      if (move_pages(0, 1, &addr, nullptr, &node, 0) != 0 || node < 0) continue;
      bool bound = false;
      for (sicm_device *d : a.devs) bound |= d->node == node;
      if (bound) continue;
      unsigned long mask[16] = {0};
      get_mempolicy(&mode, mask, 1024, addr, MPOL_F_ADDR);
      unsigned char in_core = 0;
      mincore(addr, page, &in_core);
      size_t seen[64] = {0};
      sicm_arena_residency(a.h, seen, 64);
      char text[256];
      snprintf(text, sizeof text,
               "page %p on node %d, %zu bytes into a block of %zu, policy %d nodes %#lx, mincore %d, "
               "the library counts %zu bytes there",
               addr, node, (size_t)(p - (uintptr_t)b.p), b.size, mode, mask[0], in_core & 1,
               seen[node]);
      return text;
    }
  }
  return "";
}

void CheckArena(const ArenaM &a) {
  if (a.maxsize != 0 && sicm_arena_size(a.h) > a.maxsize)
    Fail("%s arena holds %zu bytes, above its maxsize %zu", kKindNames[a.kind], sicm_arena_size(a.h),
         a.maxsize);
  size_t off = 0;
  int node = NodeOffItsDevices(a, &off);
  if (node >= 0) {
    std::string devs;
    for (sicm_device *d : a.devs) devs += " " + std::to_string(d->node);
    Fail("%zu bytes of a strictly bound %s arena (nodes%s) on node %d [%s; %s]", off,
         kKindNames[a.kind], devs.c_str(), node, FirstPageOff(a).c_str(), a.history.c_str());
  }
  // The model's own look, page by page over the live blocks: the library's
  // count must not miss a page it never moved.
  std::string missed = a.strict ? FirstPageOff(a) : "";
  if (!missed.empty())
    Fail("a strictly bound %s arena's residency misses a block's page off its devices [%s; %s]",
         kKindNames[a.kind], missed.c_str(), a.history.c_str());
}

void CheckAll() {
  for (const BlockM &b : blocks) CheckBlock(b);
  for (const ArenaM &a : arenas) CheckArena(a);
}

// sicm_arena_create: once every block is freed, a block of 80% of maxsize
// less a page of the arena's page size always fits.
void CheckEmptied(const ArenaM &a) {
  if (a.blocks != 0 || a.maxsize == 0 || a.kind > K_HUGETLB) return;
  if (a.maxsize / 10 * 8 <= a.devs[0]->page_size) return;
  size_t size = a.maxsize / 10 * 8 - a.devs[0]->page_size;
  void *p = sicm_arena_alloc(a.h, size);
  size_t room = 0;  // a device without that much free memory is no maxsize failure
  if (p == nullptr && sicm_device_get_free_bytes(a.devs[0], &room) == 0 && room >= a.maxsize)
    Fail("emptied %s arena of maxsize %zu refuses %zu bytes", kKindNames[a.kind], a.maxsize, size);
  sicm_free(p);
}

// A refused call: NULL or -1 with one of the errnos documented for it.
void ExpectErrno(bool refused, int err, std::initializer_list<int> allowed, const char *call) {
  if (!refused) return;
  stats.refused++;
  for (int e : allowed)
    if (err == e) return;
  Fail("%s refused with errno %d (%s), not one it documents", call, err, strerror(err));
}

sicm_device *BaseDev(uint32_t x) { return base_devs[x % base_devs.size()]; }



namespace {
void Watchdog() {
  for (;;) {
    sleep(1);
    uint64_t started = step_started_ns.load();
    if (started != 0 && NowNs() - started > (uint64_t)step_limit_s * 1000000000ull) {
      fprintf(stderr, "FUZZ HANG at step %zu (%s): no return within %u s\n", step_index,
              current ? OpText(*current).c_str() : "-", step_limit_s);
      _exit(3);
    }
  }
}

}  // namespace

RunStats Run(const std::vector<Op> &ops, bool check_misuse, uint64_t misuse_seed) {
  checking = check_misuse;
  if (sicm_init() != 0) Fail("sicm_init failed");
  const sicm_device_list *all = sicm_devices();
  for (unsigned i = 0; i < all->count; i++)
    (all->devices[i].huge ? huge_devs : base_devs).push_back(&all->devices[i]);
  if (const char *m = getenv("FUZZ_MEMORY_MAX")) memory_max = strtoull(m, nullptr, 0) << 20;
  if (const char *l = getenv("FUZZ_STEP_LIMIT")) step_limit_s = (unsigned)atoi(l);
  // Exploring: the model's page-by-page look after every step, which
  // names the step that put a page off its arena's devices (slow).
  bool pages_every_step = getenv("FUZZ_PAGES_EVERY_STEP") != nullptr;
  std::thread(Watchdog).detach();
  for (const Op &op : ops) {
    current = &op;
    step_started_ns = NowNs();
    Step(op);
    if (pages_every_step)
      for (const ArenaM &a : arenas) {
        std::string off = a.strict ? FirstPageOff(a) : "";
        if (!off.empty())
          Fail("after this step a block's page is off its arena's devices [%s; %s]", off.c_str(),
               a.history.c_str());
      }
    step_started_ns = 0;
    step_index++;
    stats.ops++;
  }
  current = nullptr;
  CheckAll();
  if (check_misuse) {
    fprintf(stderr, "FUZZ MISUSE NOW\n");  // the driver wants the stop after this line
    Misuse(misuse_seed);  // does not return
  }
  stats.blocks = blocks.size();
  return stats;
}

}  // namespace fuzz
