/* SPDX-License-Identifier: BSD-3-Clause */
// shared_test.h: what the shared-arena suites share — unique object names,
// checkable block contents, and the random multi-process traffic.
#ifndef SHARED_TEST_H
#define SHARED_TEST_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <random>
#include <string>
#include <vector>

#include "sicm_test.h"

namespace shared_test {

inline std::string UniqueName(const char *what) {
  static int counter;
  return "/sicm-test-" + std::string(what) + "-" + std::to_string(getpid()) + "-" +
         std::to_string(counter++);
}

// Fills a block with a pattern derived from seed; Verify checks it.
inline void Fill(void *p, size_t n, uint32_t seed) {
  auto *b = static_cast<unsigned char *>(p);
  for (size_t i = 0; i < n; i++) b[i] = (unsigned char)(seed * 2654435761u + i * 7);
}
inline bool Verify(const void *p, size_t n, uint32_t seed) {
  auto *b = static_cast<const unsigned char *>(p);
  for (size_t i = 0; i < n; i++)
    if (b[i] != (unsigned char)(seed * 2654435761u + i * 7)) return false;
  return true;
}

inline int WaitExit(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A process's random traffic: allocations it verifies and frees itself,
// plus blocks handed through `mailbox` to be checked and freed by others.
struct Mailbox {
  void *slot[64];   // a handed block starts with its seed and length
  int stop;
  int ready;
  long victim_live; // blocks the victim holds, kept current by it
};

inline int Traffic(sicm_arena a, Mailbox *box, unsigned id, long ops, long *live_count = nullptr) {
  std::mt19937 rng(id * 7919u + 1);
  struct Live { void *p; size_t n; uint32_t seed; };
  std::vector<Live> live;
  for (long i = 0; ops < 0 ? !__atomic_load_n(&box->stop, __ATOMIC_ACQUIRE) : i < ops; i++) {
    unsigned op = rng() % 8;
    if (op < 4 || live.empty()) {
      size_t n = rng() % 4 == 0 ? 1 + rng() % 40000 : 1 + rng() % 512;
      void *p = sicm_arena_alloc(a, n);
      if (p == nullptr) {
        if (errno != ENOMEM) return 10;
        continue;
      }
      uint32_t seed = rng();
      Fill(p, n, seed);
      live.push_back({p, n, seed});
    } else if (op < 6) {
      size_t k = rng() % live.size();
      if (!Verify(live[k].p, live[k].n, live[k].seed)) return 11;
      sicm_free(live[k].p);
      live[k] = live.back();
      live.pop_back();
    } else if (op == 6) {  // hand a block to whoever takes it
      size_t k = rng() % live.size();
      unsigned s = rng() % 64;
      if (live[k].n >= 16 && __atomic_load_n(&box->slot[s], __ATOMIC_ACQUIRE) == nullptr) {
        uint64_t tag[2] = {live[k].seed, live[k].n};
        memcpy(live[k].p, tag, sizeof tag);
        Fill(static_cast<char *>(live[k].p) + 16, live[k].n - 16, live[k].seed);
        void *expected = nullptr;
        if (__atomic_compare_exchange_n(&box->slot[s], &expected, live[k].p, false,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
          live[k] = live.back();
          live.pop_back();
        } else {
          Fill(live[k].p, live[k].n, live[k].seed);  // still ours: its own pattern again
        }
      }
    } else {  // take one and free it: blocks of other processes
      unsigned s = rng() % 64;
      void *p = __atomic_exchange_n(&box->slot[s], nullptr, __ATOMIC_ACQ_REL);
      if (p != nullptr) {
        uint64_t tag[2];
        memcpy(tag, p, sizeof tag);
        if (!Verify(static_cast<char *>(p) + 16, tag[1] - 16, (uint32_t)tag[0])) return 13;
        sicm_free(p);
      }
    }
    if (live_count) __atomic_store_n(live_count, (long)live.size(), __ATOMIC_RELEASE);
  }
  for (const Live &l : live) {
    if (!Verify(l.p, l.n, l.seed)) return 12;
    sicm_free(l.p);
  }
  return 0;
}

}  // namespace shared_test

#endif
