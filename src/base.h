/* SPDX-License-Identifier: BSD-3-Clause */
/* base.h: what every layer of libsicm shares — the internal error
 * convention, the machine's limits as named constants, node masks.
 *
 * Layers, each including only its own header and those below it:
 *   base.h      errors, constants, node masks          base.c
 *   devices.h   topology, configuration, devices,      device_*.c, state.c
 *               ranking, the one library state
 *   arena.h     arena records, operations table,       arena*.c
 *               handles, windows; the jemalloc kind
 *               in arena_je.h (arena_je*.c only)
 *   migrate.h   whole-arena migration                  migrate*.c
 *   shared.h    shared arenas (a kind of arena)        shared_*.c
 *   intent      allocators and devices by intent       intent_*.c
 *   autoplace.h automatic placement (beside intent)    autoplace*.c
 *   report.h    sicm_stats_print and SICM_STATS        report.c
 *   init.c      sicm_init / sicm_fini, above them all
 * Internal names start with sc_ (types, functions, globals) or SC_
 * (constants); everything public starts with sicm_ and is declared in
 * include/.  The library is built with hidden visibility: only SICM_API
 * functions leave libsicm.so.
 *
 * Process state.  The library state (sc_state: topology, configuration,
 * devices, options read once from the environment) lives in state.c and is
 * built and released only by init.c.  What must outlive any one arena —
 * because a stale handle or a pointer lookup may reach it at any time —
 * lives for the process's life beside the code that owns it: the arena
 * slots and default arenas (arena.c), the chunk -> arena table
 * (arena_window.c), jemalloc's size classes (arena_je_cache.c, read by
 * init.c).  The rest is per arena or per thread.
 *
 * Error convention.  An internal function that can fail returns -1 (or
 * NULL) after sc_fail()/sc_fail_null(), which set errno and the thread's
 * sicm_error_detail() in one step; the caller passes -1 up unchanged, or
 * replaces the detail only when it knows the cause better.  No function
 * returns an errno value, and none ignores a failure of a call it makes:
 * a failure it cannot report is a bug.  Code that runs where errno cannot
 * carry a failure (worker threads) records the errno value in a field and
 * the thread that joins it calls sc_fail(). */
#ifndef SC_BASE_H
#define SC_BASE_H

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* The library defines the functions the header's inline fast path calls. */
#define SICM_NO_INLINE
#include "sicm.h"

/* ---- errors (base.c) ---- */
/* Sets errno to err and the thread's description; returns -1 or NULL, so
 * that `return sc_fail(...)` reports and returns in one statement. */
int sc_fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void *sc_fail_null(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- environment variables (base.c) ----
 * Read strictly: a value that is not entirely valid gets one line on
 * stderr naming the variable, the value and what is accepted, and the
 * variable then counts as unset.  An empty value is unset. */
void sc_env_refuse(const char *name, const char *value, const char *accepted);
/* The value, or NULL when unset or empty. */
const char *sc_env_get(const char *name);
/* The index of the value in the NULL-terminated `choices`, or fallback. */
int sc_env_choice(const char *name, const char *const *choices, int fallback, const char *accepted);
/* A switch in the grammar of every setting (on, 1, off, 0), or fallback. */
int sc_env_switch(const char *name, int fallback);
/* A decimal integer in [min, max] (digits only), or fallback. */
long sc_env_integer(const char *name, long min, long max, long fallback, const char *accepted);
/* A path shorter than max bytes, or NULL. */
const char *sc_env_path(const char *name, size_t max);

/* ---- limits ---- */
/* Nodes libsicm can bind memory to: the kernel's usual MAX_NUMNODES. */
#define SC_NODES_MAX 1024
#define SC_NODEMASK_WORDS (SC_NODES_MAX / (8 * sizeof(unsigned long)))

/* The base page size, read from the kernel once. */
size_t sc_page_size(void);
/* A thread's table of pointers indexed by arena slot (its caches): `table`
 * of *cap entries grown, new entries NULL, to hold index `slot`, and made
 * the thread's value of `exit_key` (created by the caller, whose
 * destructor frees the table at the thread's exit).  Returns the table
 * (realloc's: the old one is gone) with *cap updated, or NULL when out of
 * memory (the old table and *cap unchanged). */
void *sc_slot_table_grow(void *table, unsigned *cap, unsigned slot, pthread_key_t exit_key);
/* A clock in nanoseconds; CLOCK_MONOTONIC is one clock for every process
 * of a host. */
uint64_t sc_clock_ns(clockid_t id);

/* User address space without 5-level paging. */
#define SC_ADDRESS_BITS 47

/* An address, aligned to `align` (a power of two), in the middle of the
 * largest range this process has not mapped, where `size` bytes fit; 0 if
 * none does.  Other processes of the same program almost always have that
 * range free too: shared arenas and the node-wide topology map there. */
uintptr_t sc_address_hole(size_t size, size_t align);
/* 1 when every page of [lo, hi) is mapped readable and writable in this
 * process (/proc/self/maps), else 0; *shared 1 when a mapping of the
 * range is shared (MAP_SHARED: other processes may map its pages). */
int sc_range_writable(uintptr_t lo, uintptr_t hi, int *shared);
/* 1 when this process may move pages other processes map too
 * (MPOL_MF_MOVE_ALL needs CAP_SYS_NICE), else 0. */
int sc_may_move_others_pages(void);
/* 1 when st is the null device (/dev/null, character device 1:3): the
 * conventional "no configuration" to read and "discard" to write. */
struct stat;
int sc_stat_is_null_device(const struct stat *st);

/* A node set in the layout mbind(2) and move_pages(2) take. */
typedef struct sc_nodemask {
  unsigned long bits[SC_NODEMASK_WORDS];
} sc_nodemask;

static inline int sc_nodemask_has(const sc_nodemask *m, int node) {
  const unsigned w = 8 * sizeof(unsigned long);
  return node >= 0 && node < SC_NODES_MAX && (m->bits[node / w] >> (node % w)) & 1;
}

static inline void sc_nodemask_add(sc_nodemask *m, int node) {
  const unsigned w = 8 * sizeof(unsigned long);
  m->bits[node / w] |= 1ul << (node % w);
}

/* Tells the CPU we are spinning (another hyperthread may use the core). */
static inline void sc_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Thread-locals of the library.  Not initial-exec: a library with
 * initial-exec TLS cannot be loaded with dlopen once glibc's small surplus
 * is taken.  Built with TLS descriptors (TLS_CFLAGS), an access costs an
 * indirect call that returns the static offset when the library was loaded
 * at start-up. */
#define SC_TLS __thread

/* A statistics snapshot on this thread: a kind whose statistics refresh
 * covers all its arenas at once (jemalloc's epoch) refreshes them once
 * for a report of every arena, not once per arena.  Outside a snapshot
 * sc_stats_refresh_due() is always 1; inside one, 1 the first time. */
void sc_stats_snapshot_begin(void);
void sc_stats_snapshot_end(void);
int sc_stats_refresh_due(void);

static inline size_t sc_round_up(size_t v, size_t to) { return (v + to - 1) & ~(to - 1); }

#endif /* SC_BASE_H */
