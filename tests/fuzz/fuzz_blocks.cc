/* SPDX-License-Identifier: BSD-3-Clause */
// fuzz_blocks.cc: the fuzzer's operations on blocks — allocation of every
// kind and size class, resize, free, defragmentation, deliberate misuse
// (refused with EINVAL and changing nothing; in the checking mode, stopping
// the process), and the steps that run elsewhere: a child of fork() and
// threads of this process.
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <thread>

#include "fuzz_model.h"
#include "sicm_upkeep.h"

namespace fuzz {
namespace {

constexpr size_t kBlocksMax = 3000;
uint8_t next_tag = 1;

// A block the library just handed out: filled with a new tag's pattern and
// added to the model.
void Keep(char *p, size_t size, sicm_arena h) {
  uint8_t tag = next_tag++;
  Fill(p, size, tag);
  AddBlock(p, size, h, tag);
}

size_t SizeOf(uint32_t b, uint32_t c) {
  static const size_t tops[] = {128, 16384, 1u << 20, 8u << 20};
  return 1 + c % tops[b % 4];
}

void Alloc(const Op &op) {
  if (arenas.empty() || blocks.size() >= kBlocksMax) return;
  ArenaM &a = arenas[op.a % arenas.size()];
  size_t size = SizeOf(op.b, op.c);
  if (live_bytes + size > memory_max) return;
  char *p = nullptr;
  size_t align = (size_t)1 << (4 + op.c % 13);
  if (op.kind == CALLOC) {
    size_t n = 1 + op.b % 7;
    size = (size + n - 1) / n * n;
    p = (char *)sicm_arena_calloc(a.h, n, size / n);
  } else if (op.kind == ALIGNED) {
    p = (char *)sicm_arena_aligned_alloc(a.h, align, size);
  } else {
    p = (char *)sicm_arena_alloc(a.h, size);
  }
  ExpectErrno(p == nullptr, errno, {ENOMEM}, "an allocation");
  if (p == nullptr) return;
  if (op.kind == CALLOC) {
    for (size_t i = 0; i < size; i += (i < 4096 ? 1 : 509))
      if (p[i] != 0) Fail("calloc of %zu bytes: byte %zu is not zero", size, i);
  }
  if (op.kind == ALIGNED && ((uintptr_t)p & (align - 1)) != 0)
    Fail("aligned_alloc(%zu) gave %p", align, (void *)p);
  Keep(p, size, a.h);
}

void Realloc(const Op &op) {
  if (blocks.empty()) return;
  size_t i = op.a % blocks.size();
  BlockM b = blocks[i];
  size_t size = SizeOf(op.b, op.c);
  if (size > b.size && live_bytes + size - b.size > memory_max) return;
  char *q = (char *)(op.c % 2 ? sicm_realloc(b.p, size) : sicm_arena_realloc(b.h, b.p, size));
  int err = errno;
  if (q == nullptr) {  // refused: the block stays as it was
    ExpectErrno(true, err, {ENOMEM}, "a resize");
    CheckBlock(blocks[i]);
    return;
  }
  DropBlock(i);
  if (!Intact(q, size < b.size ? size : b.size, b.tag, b.size)) Fail("a resize lost the block's bytes");
  Keep(q, size, b.h);
}

void Free(const Op &op) {
  if (blocks.empty()) return;
  size_t i = op.a % blocks.size();
  BlockM b = blocks[i];
  CheckBlock(b);
  DropBlock(i);
  if (op.b % 2)
    sicm_free(b.p);
  else
    (sicm_free)(b.p);
  if (ArenaM *a = ArenaOf(b.h)) CheckEmptied(*a);
}

void Defrag(const Op &op) {
  if (blocks.empty()) return;
  size_t i = op.a % blocks.size();
  BlockM b = blocks[i];
  int saved = errno = 12345;
  bool inside = op.c % 4 == 0 && !checking;  // the checking mode stops on it
  char *q = (char *)sicm_defrag_reallocate(inside ? b.p + 8 : b.p);
  if (errno != saved) Fail("defrag changed errno");
  if (inside && q != nullptr) Fail("defrag of an address inside a block moved it");
  if (q == nullptr) {
    CheckBlock(blocks[i]);
    return;
  }
  DropBlock(i);
  if (!Intact(q, b.size, b.tag)) Fail("defrag lost the block's bytes");
  AddBlock(q, b.size, b.h, b.tag);
}

// Misuse outside the checking mode: refused with EINVAL, nothing freed.
void MisuseRefused(const Op &op) {
  char on_stack[64] __attribute__((aligned(16)));
  errno = 0;
  switch (op.b % 5) {
    case 0:
      sicm_free(on_stack);
      ExpectErrno(true, errno, {EINVAL}, "a free of the stack");
      break;
    case 1:
      if (!stale.empty()) {
        void *p = sicm_arena_alloc(stale[op.c % stale.size()], 64);
        if (p != nullptr) Fail("a destroyed arena allocated");
        ExpectErrno(true, errno, {ESTALE}, "an allocation in a destroyed arena");
      }
      break;
    case 2:
      if (!arenas.empty()) {
        sicm_arena h = arenas[op.c % arenas.size()].h;
        if (sicm_arena_alloc(h, 0) != nullptr) Fail("an allocation of 0 bytes");
        ExpectErrno(true, errno, {EINVAL}, "an allocation of 0 bytes");
        if (sicm_arena_aligned_alloc(h, 24, 64) != nullptr) Fail("alignment 24 accepted");
        ExpectErrno(true, errno, {EINVAL}, "an alignment not a power of two");
      }
      break;
    default:  // inside a large block of a private arena: no allocation starts in its later pages
      for (size_t k = 0; k < blocks.size(); k++) {
        BlockM &b = blocks[(op.c + k) % blocks.size()];
        ArenaKind kind = ArenaOf(b.h)->kind;
        if (b.size < (64u << 10) || kind == K_SHARED || kind == K_FILE) continue;
        sicm_free(b.p + 8192);
        if (errno != EINVAL)
          Fail("a free inside a large block (%zu bytes of a %s arena) was not refused", b.size,
               kKindNames[ArenaOf(b.h)->kind]);
        break;
      }
      break;
  }
  for (const BlockM &b : blocks) CheckBlock(b);
}

// A child of fork() reads every block, frees the blocks of private arenas
// (a shared arena's are the parent's too), allocates anew, in arenas of its
// own too, never where the parent's hugetlb blocks were, and exits; the
// parent's blocks stay as they were.  The parent waits, within the limit.
void Fork(const Op &op) {
  pid_t pid = fork();
  if (pid < 0) Fail("fork");
  if (pid == 0) {
    auto on_lost = [](const char *q, size_t n) {
      for (const BlockM &b : blocks)
        if (ArenaOf(b.h)->kind == K_HUGETLB && q < b.p + b.size && b.p < q + n)
          Fail("child: a new block at %p lies where a parent's hugetlb block was", (void *)q);
    };
    for (const BlockM &b : blocks) {
      ArenaM *a = ArenaOf(b.h);
      if (a->kind == K_HUGETLB) {  // not inherited: gone in the child
        if (sicm_arena_lookup(b.p) != nullptr) Fail("child: a parent's hugetlb block found");
        continue;
      }
      CheckBlock(b);
    }
    for (size_t k = blocks.size(); k-- > 0;) {
      ArenaM *a = ArenaOf(blocks[k].h);
      if (a->kind != K_SHARED && a->kind != K_FILE && a->kind != K_HUGETLB && (op.b + k) % 2)
        sicm_free(blocks[k].p);
    }
    for (unsigned k = 0; k < 16 && !arenas.empty(); k++) {
      ArenaM &a = arenas[(op.c + k) % arenas.size()];
      char *p = (char *)sicm_arena_alloc(a.h, 100 + k * 1000);
      if (a.kind == K_HUGETLB ? p != nullptr : p == nullptr && errno != ENOMEM)
        Fail("child: an allocation in a %s arena", kKindNames[a.kind]);
      if (p) on_lost(p, 100 + k * 1000), Fill(p, 100 + k * 1000, 7), sicm_free(p);
    }
    // Arenas of its own, of base and of huge pages: blocks it can write.
    sicm_device *devs[2] = {BaseDev(op.c), huge_devs.empty() ? nullptr : huge_devs[op.c % huge_devs.size()]};
    for (sicm_device *dev : devs) {
      sicm_arena mine = dev ? sicm_arena_create(0, dev) : nullptr;
      char *q = mine ? (char *)sicm_arena_alloc(mine, 5000) : nullptr;
      if (dev != nullptr && (mine == nullptr || (q == nullptr && errno != ENOMEM)))
        Fail("child: a new arena of its own failed");
      if (q) on_lost(q, 5000), Fill(q, 5000, 9), sicm_free(q);
      if (mine) sicm_arena_destroy(mine);
    }
    _exit(0);
  }
  int status = 0;
  for (int waited = 0; waitpid(pid, &status, WNOHANG) == 0; waited++) {
    if (waited > 3000) {  // 30 s
      kill(pid, SIGKILL);
      Fail("a child of fork() did not end within 30 s");
    }
    usleep(10000);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) Fail("the child of fork() failed (%d)", status);
  for (const BlockM &b : blocks) CheckBlock(b);
}

// Threads allocate, resize and free their own blocks in the model's arenas
// at once; the model's blocks stay as they were.
void Threads(const Op &op) {
  if (arenas.empty()) return;
  std::vector<sicm_arena> hs;
  for (const ArenaM &a : arenas) hs.push_back(a.h);
  auto work = [&hs](unsigned seed) {
    struct Mine { char *p; size_t size; uint8_t fill; };
    std::vector<Mine> mine;
    for (unsigned i = 0; i < 400; i++) {
      unsigned r = rand_r(&seed);
      if (mine.size() < 32 && r % 3 != 0) {
        size_t size = 1 + r % 20000;
        char *p = (char *)sicm_arena_alloc(hs[r % hs.size()], size);
        if (p) memset(p, (int)(r >> 24), size), mine.push_back({p, size, (uint8_t)(r >> 24)});
      } else if (!mine.empty()) {
        Mine &m = mine[r % mine.size()];
        for (size_t k = 0; k < m.size; k += 997)
          if ((uint8_t)m.p[k] != m.fill) Fail("a thread's block lost its bytes");
        sicm_free(m.p);
        m = mine.back();
        mine.pop_back();
      }
    }
    for (Mine &m : mine) sicm_free(m.p);
  };
  std::thread t1(work, op.b | 1), t2(work, op.c | 1);
  t1.join();
  t2.join();
  for (const BlockM &b : blocks) CheckBlock(b);
}

}  // namespace

void StepBlocks(const Op &op) {
  switch (op.kind) {
    case ALLOC: case CALLOC: case ALIGNED: Alloc(op); break;
    case REALLOC: Realloc(op); break;
    case FREE: Free(op); break;
    case DEFRAG: Defrag(op); break;
    case MISUSE:
      if (!checking) MisuseRefused(op);  // the checking mode's misuse is the run's end
      break;
    case FORK: Fork(op); break;
    case THREADS: Threads(op); break;
    default: break;
  }
}

// In the checking mode: a double free, an address inside a block, a
// foreign pointer or a block of a destroyed arena must stop the process;
// returning from the misuse is the failure.
void Misuse(uint64_t seed) {
  char on_stack[64] __attribute__((aligned(16)));
  unsigned which = (unsigned)(seed % 4);
  for (size_t k = 0; which < 3 && k < blocks.size(); k++) {
    const BlockM &b = blocks[(seed / 4 + k) % blocks.size()];
    ArenaM *a = ArenaOf(b.h);
    if (which == 0) {
      sicm_free(b.p);
      sicm_free(b.p);
      Fail("the checking mode let a double free through");
    } else if (which == 1 && b.size >= 64) {
      sicm_free(b.p + 8);
      Fail("the checking mode let a free inside a block through");
    } else if (which == 2 && a->kind != K_SHARED && a->kind != K_FIXED) {
      sicm_arena_destroy(a->h);
      sicm_free(b.p);
      Fail("the checking mode let a free into a destroyed arena through");
    }
  }
  sicm_free(on_stack);
  Fail("the checking mode let a free of the stack through");
}

}  // namespace fuzz
