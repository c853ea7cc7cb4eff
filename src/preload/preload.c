/* SPDX-License-Identifier: BSD-3-Clause */
/* preload.c: the interposed allocation functions of libsicm-preload.so.
 *
 * Allocations of at least SICM_PRELOAD's `min` bytes go to libsicm arenas
 * (preload_place.c); smaller ones to the small arenas (preload_small.c)
 * through the header's inline front, or with small=process to the process
 * allocator: the next definitions of malloc & co. after this library,
 * found with dlsym(RTLD_NEXT).  Everything before the library is ready or
 * while libsicm itself is running goes to the process allocator.  free,
 * realloc and malloc_usable_size route a pointer to its owner: a small
 * block of the thread's front is binned at once; otherwise
 * sicm_arena_lookup() decides, and with small=process only for pointers in
 * [pl_fast.range_lo, pl_fast.range_hi), where the placed blocks lie.
 *
 * dlsym may allocate before the process allocator is known: those few
 * blocks come from a static buffer and are never freed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base_settings.h"
#include "preload.h"

#define PL_EXPORT __attribute__((visibility("default")))

pl_next pl_next_fns;
static void free_unresolved(void *p);
pl_hot pl_fast = {0, NULL, free_unresolved, UINTPTR_MAX, 0, 0};
static int pl_active;

/* Nonzero while this thread runs libsicm or dlsym on the preload's behalf:
 * its allocations go to the process allocator (or the static buffer). */
enum { PL_INSIDE = 1, PL_RESOLVING = 2 };
static __thread int pl_inside __attribute__((tls_model("initial-exec")));
/* The small arena this thread allocates from; NULL until its first small
 * block (the front then serves no arena of it: a miss). */
static __thread sicm_arena pl_small_mine __attribute__((tls_model("initial-exec")));

/* ---------------------------------------------------------------- bootstrap */

static _Alignas(64) char boot_buf[64 << 10];
static size_t boot_used;

static int boot_owns(const void *p) {
  return (uintptr_t)p - (uintptr_t)boot_buf < sizeof boot_buf;
}

/* A block of the static buffer: its size is stored just before it. */
static void *boot_alloc(size_t size, size_t align) {
  if (align < 16)
    align = 16;
  size_t need = (size + 15) & ~(size_t)15;
  size_t old = __atomic_load_n(&boot_used, __ATOMIC_RELAXED), start;
  do {
    start = ((old + 16 + align - 1) & ~(align - 1));
    if (need > sizeof boot_buf || start + need > sizeof boot_buf)
      return NULL;
  } while (!__atomic_compare_exchange_n(&boot_used, &old, start + need, 1, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED));
  ((size_t *)(boot_buf + start))[-1] = size;
  return boot_buf + start;
}

static size_t boot_size(const void *p) {
  return ((const size_t *)p)[-1];
}

static void *next_sym(const char *name) {
  return dlsym(RTLD_NEXT, name);
}

/* Find the process allocator.  Idempotent; concurrent callers find the
 * same functions. */
static void next_resolve(void) {
  if (__atomic_load_n(&pl_fast.malloc, __ATOMIC_ACQUIRE) != NULL)
    return;
  pl_inside |= PL_RESOLVING;
  pl_next fns;
  void *(*next_malloc)(size_t) = next_sym("malloc");
  void (*next_free)(void *) = next_sym("free");
  fns.calloc = next_sym("calloc");
  fns.realloc = next_sym("realloc");
  fns.posix_memalign = next_sym("posix_memalign");
  fns.aligned_alloc = next_sym("aligned_alloc");
  fns.memalign = next_sym("memalign");
  fns.valloc = next_sym("valloc");
  fns.pvalloc = next_sym("pvalloc");
  fns.malloc_usable_size = next_sym("malloc_usable_size");
  pl_inside &= ~PL_RESOLVING;
  if (next_malloc == NULL || next_free == NULL || fns.calloc == NULL || fns.realloc == NULL) {
    pl_warn("no process allocator after this library (dlsym found no malloc)", "");
    abort();
  }
  pl_next_fns = fns;
  __atomic_store_n(&pl_fast.free, next_free, __ATOMIC_RELAXED);
  /* Last: a thread that sees malloc sees every other function. */
  __atomic_store_n(&pl_fast.malloc, next_malloc, __ATOMIC_RELEASE);
}

static void free_unresolved(void *p) {
  next_resolve();
  pl_fast.free(p);
}

/* Whether `a` lies where the tiers' arenas have returned memory: only
 * there can a pointer be the preload's. */
static inline int in_arena_range(uintptr_t a) {
  uintptr_t lo = __atomic_load_n(&pl_fast.range_lo, __ATOMIC_RELAXED);
  return a - lo < __atomic_load_n(&pl_fast.range_hi, __ATOMIC_RELAXED) - lo;
}

/* Whether a large request may be placed: the library is active and this
 * thread is not inside libsicm.  Resolves the process allocator first. */
static int may_place(size_t size) {
  next_resolve();
  return pl_active && pl_inside == 0 && size >= pl_conf.min;
}

static void *place(size_t size, size_t align, int zero) {
  pl_inside |= PL_INSIDE;
  void *p = pl_place(size, align, zero);
  pl_inside &= ~PL_INSIDE;
  return p;
}

/* Who owns `p`: a block placed here (its usable size in *size), a small
 * block, memory of an arena the program made itself, or the process
 * allocator. */
typedef enum owner { OWNER_PROCESS, OWNER_PLACED, OWNER_SMALL, OWNER_ARENA } owner;

static owner owner_of(const void *p, size_t *size, const char *caller) {
  if (!pl_fast.small && !in_arena_range((uintptr_t)p))
    return OWNER_PROCESS;
  sicm_arena arena = sicm_arena_lookup(p);
  if (arena == NULL)
    return OWNER_PROCESS;
  if (pl_small_owns(arena))
    return OWNER_SMALL;
  pl_inside |= PL_INSIDE;
  *size = pl_block_size(p, arena, caller);
  pl_inside &= ~PL_INSIDE;
  return *size ? OWNER_PLACED : OWNER_ARENA;
}

static void release(void *p) {
  pl_inside |= PL_INSIDE;
  pl_release(p);
  pl_inside &= ~PL_INSIDE;
}

/* ---------------------------------------------------------------- small blocks */

/* Whether this thread's blocks below min come from the small arenas. */
static inline int small_here(void) {
  return pl_fast.small && pl_inside == 0;
}

/* A small block past the front: from this thread's small arena (aligned to
 * `align`, 0: default; zeroed if `zero`); NULL when the arena refused, and
 * the caller asks the process allocator. */
static __attribute__((noinline)) void *small_alloc(size_t size, size_t align, int zero) {
  sicm_arena arena = pl_small_mine;
  if (arena == NULL)
    arena = pl_small_mine = pl_small_arena();
  size_t n = size ? size : 1; /* malloc(0) is a block of its own */
  pl_inside |= PL_INSIDE;
  void *p = align ? sicm_arena_aligned_alloc(arena, align, n)
            : zero ? sicm_arena_calloc(arena, 1, n)
                   : sicm_arena_alloc(arena, n);
  pl_inside &= ~PL_INSIDE;
  return p;
}

static inline void *small_front(size_t size) {
  return sicm_front_alloc_v2(&sicm_front_v2, (uintptr_t)pl_small_mine, size);
}

static void small_free(void *p) {
  pl_inside |= PL_INSIDE;
  sicm_free(p);
  pl_inside &= ~PL_INSIDE;
}

/* A block below min from this thread's small arena (zeroed if `zero`), or
 * NULL: the process allocator serves this thread, or the arena refused. */
static inline void *small_block(size_t size, int zero) {
  if (!small_here())
    return NULL;
  void *p = small_front(size);
  if (__builtin_expect(p != NULL, 1))
    return zero ? memset(p, 0, size) : p;
  return small_alloc(size, 0, zero);
}

/* A block below min, wherever this thread's small blocks come from. */
static inline void *malloc_below_min(size_t size) {
  void *p = small_block(size, 0);
  return __builtin_expect(p != NULL, 1) ? p : pl_fast.malloc(size);
}

/* ---------------------------------------------------------------- malloc, calloc */

static __attribute__((noinline)) void *malloc_slow(size_t size) {
  if (pl_inside & PL_RESOLVING)
    return boot_alloc(size, 16);
  if (may_place(size)) {
    void *p = place(size, 0, 0);
    if (p != NULL)
      return p;
  }
  return pl_fast.malloc(size);
}

PL_EXPORT void *malloc(size_t size) {
  if (__builtin_expect(size < pl_fast.min_fast, 1))
    return malloc_below_min(size);
  return malloc_slow(size);
}

PL_EXPORT void *calloc(size_t n, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  if (__builtin_expect(total < pl_fast.min_fast, 1)) {
    void *p = small_block(total, 1);
    return p != NULL ? p : pl_next_fns.calloc(n, size);
  }
  if (pl_inside & PL_RESOLVING)
    return boot_alloc(total, 16); /* the buffer is never reused: still zero */
  if (may_place(total)) {
    void *p = place(total, 0, 1);
    if (p != NULL)
      return p;
  }
  return pl_next_fns.calloc(n, size);
}

/* ---------------------------------------------------------------- free, realloc */

static __attribute__((noinline)) void free_slow(void *p) {
  if (p == NULL || boot_owns(p))
    return;
  next_resolve();
  size_t size = 0;
  switch (owner_of(p, &size, "free")) {
  case OWNER_PLACED:
    release(p);
    return;
  case OWNER_SMALL:
    small_free(p);
    return;
  case OWNER_ARENA:
    sicm_free_named(p, "free");
    return;
  case OWNER_PROCESS:
    pl_fast.free(p);
    return;
  }
}

PL_EXPORT void free(void *p) {
  if (pl_fast.small) {
    /* Only a front that serves this thread's small arena may take the
     * block: a placed block must leave through its table. */
    if (!(__atomic_load_n(&sicm_front_v2.arena, __ATOMIC_RELAXED) == (uintptr_t)pl_small_mine &&
          pl_inside == 0 &&
          sicm_front_free_v2(&sicm_front_v2, p)))
      free_slow(p);
    return;
  }
  if (__builtin_expect(!in_arena_range((uintptr_t)p) && !boot_owns(p), 1)) {
    __atomic_load_n(&pl_fast.free, __ATOMIC_RELAXED)(p);
    return;
  }
  free_slow(p);
}

/* Move a block to a new owner: copy `keep` bytes, free the old one. */
static void *move_block(void *q, void *p, size_t keep, owner old) {
  if (q == NULL)
    return NULL;
  memcpy(q, p, keep);
  if (old == OWNER_PLACED)
    release(p);
  else if (old == OWNER_SMALL)
    small_free(p);
  else
    pl_fast.free(p);
  return q;
}

PL_EXPORT void *realloc(void *p, size_t size) {
  if (p == NULL)
    return malloc(size);
  if (boot_owns(p)) {
    void *q = size ? malloc(size) : NULL;
    if (q != NULL)
      memcpy(q, p, size < boot_size(p) ? size : boot_size(p));
    return q;
  }
  next_resolve();
  size_t old_size = 0;
  owner who = owner_of(p, &old_size, "realloc");
  if (who == OWNER_ARENA)
    return sicm_realloc_named(p, size, "realloc");
  if (who == OWNER_SMALL) {
    if (size == 0) { /* as glibc: frees, returns NULL */
      small_free(p);
      return NULL;
    }
    void *q = size >= pl_fast.min_fast && may_place(size) ? place(size, 0, 0) : NULL;
    if (q != NULL) {
      old_size = sicm_usable_size(p);
      return move_block(q, p, old_size < size ? old_size : size, who);
    }
    pl_inside |= PL_INSIDE;
    q = sicm_realloc(p, size);
    pl_inside &= ~PL_INSIDE;
    return q;
  }
  if (who == OWNER_PROCESS) {
    if (size < pl_fast.min_fast || !may_place(size))
      return pl_next_fns.realloc(p, size);
    old_size = pl_next_fns.malloc_usable_size ? pl_next_fns.malloc_usable_size(p) : 0;
    void *q = old_size ? place(size, 0, 0) : NULL;
    if (q == NULL)
      return pl_next_fns.realloc(p, size);
    return move_block(q, p, old_size < size ? old_size : size, who);
  }
  if (size == 0) { /* as glibc: frees, returns NULL */
    release(p);
    return NULL;
  }
  void *q = NULL;
  if (size >= pl_conf.min) {
    pl_inside |= PL_INSIDE;
    q = pl_resize(p, size);
    pl_inside &= ~PL_INSIDE;
    if (q != NULL)
      return q;
    q = place(size, 0, 0); /* its tier is full: another may have room */
  }
  if (q == NULL)
    q = size < pl_fast.min_fast ? malloc_below_min(size) : pl_fast.malloc(size);
  return move_block(q, p, old_size < size ? old_size : size, who);
}

PL_EXPORT size_t malloc_usable_size(void *p) {
  if (p == NULL)
    return 0;
  if (boot_owns(p))
    return boot_size(p);
  next_resolve();
  size_t size = 0;
  switch (owner_of(p, &size, "malloc_usable_size")) {
  case OWNER_PLACED:
    return size;
  case OWNER_SMALL:
  case OWNER_ARENA:
    return sicm_usable_size(p);
  case OWNER_PROCESS:
    break;
  }
  return pl_next_fns.malloc_usable_size ? pl_next_fns.malloc_usable_size(p) : 0;
}

/* ---------------------------------------------------------------- aligned */

static int power_of_two(size_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

/* The large path of the aligned functions; NULL: use the process allocator. */
static void *aligned_place(size_t align, size_t size) {
  if (pl_inside & PL_RESOLVING)
    return power_of_two(align) ? boot_alloc(size, align) : NULL;
  if (size < pl_fast.min_fast && small_here() && power_of_two(align))
    return small_alloc(size, align, 0);
  if (size < pl_fast.min_fast || !power_of_two(align) || !may_place(size))
    return NULL;
  return place(size, align, 0);
}

PL_EXPORT int posix_memalign(void **out, size_t align, size_t size) {
  if (!power_of_two(align) || align % sizeof(void *) != 0)
    return EINVAL;
  void *p = aligned_place(align, size);
  if (p != NULL) {
    *out = p;
    return 0;
  }
  next_resolve();
  return pl_next_fns.posix_memalign(out, align, size);
}

PL_EXPORT void *aligned_alloc(size_t align, size_t size) {
  void *p = aligned_place(align, size);
  if (p != NULL)
    return p;
  next_resolve();
  return pl_next_fns.aligned_alloc ? pl_next_fns.aligned_alloc(align, size)
                                   : pl_next_fns.memalign(align, size);
}

PL_EXPORT void *memalign(size_t align, size_t size) {
  void *p = aligned_place(align, size);
  if (p != NULL)
    return p;
  next_resolve();
  return pl_next_fns.memalign(align, size);
}

PL_EXPORT void *valloc(size_t size) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  void *p = aligned_place(page, size);
  if (p != NULL)
    return p;
  next_resolve();
  return pl_next_fns.valloc ? pl_next_fns.valloc(size) : pl_next_fns.memalign(page, size);
}

PL_EXPORT void *pvalloc(size_t size) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t rounded = size ? (size + page - 1) & ~(page - 1) : page;
  if (rounded < size) {
    errno = ENOMEM;
    return NULL;
  }
  void *p = aligned_place(page, rounded);
  if (p != NULL)
    return p;
  next_resolve();
  return pl_next_fns.pvalloc ? pl_next_fns.pvalloc(size) : pl_next_fns.memalign(page, rounded);
}

/* ---------------------------------------------------------------- life cycle */

static void fork_prepare(void) {
  pthread_mutex_lock(&pl_lock);
}

static void fork_release(void) {
  pthread_mutex_unlock(&pl_lock);
}

static void on_stats_signal(int sig) {
  (void)sig;
  int saved = errno;
  pl_stats_write(0);
  errno = saved;
}

__attribute__((constructor)) static void pl_init(void) {
  next_resolve();
  const char *text = getenv("SICM_PRELOAD"), *shm_text = getenv("SICM_PRELOAD_SHM");
  int on;
  int blocks_off = text != NULL && sc_setting_bool(text, &on) == 0 && !on;
  int shm_off = shm_text == NULL || (sc_setting_bool(shm_text, &on) == 0 && !on);
  if (blocks_off && shm_off) {
    pl_fast.min_fast = SIZE_MAX;
    return;
  }
  pl_inside |= PL_INSIDE;
  int ok = 0;
  if (sicm_init() != 0) {
    pl_warn("libsicm did not start: ", sicm_error_detail());
  } else {
    if (!shm_off && pl_shm_start(shm_text) != 0)
      pl_warn("shared-memory segments stay where the kernel puts them", "");
    ok = !blocks_off && pl_config_load(text) == 0;
  }
  if (ok)
    pl_sites_warm();
  if (ok && !pl_conf.small_process)
    pl_fast.small = pl_small_start() == 0;
  pl_inside &= ~PL_INSIDE;
  if (!ok) {
    if (!blocks_off)
      pl_warn("inactive: every allocation goes to the process allocator", "");
    pl_fast.min_fast = SIZE_MAX;
    return;
  }
  pthread_atfork(fork_prepare, fork_release, fork_release);
  if (pl_conf.stats_signal > 0) {
    pl_conf.stats = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stats_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(pl_conf.stats_signal, &sa, NULL);
  }
  pl_active = 1;
  __atomic_store_n(&pl_fast.min_fast, pl_conf.min, __ATOMIC_RELEASE);
}

__attribute__((destructor)) static void pl_exit(void) {
  if (pl_active && pl_conf.stats) {
    pl_inside |= PL_INSIDE;
    pl_stats_write(1);
    pl_inside &= ~PL_INSIDE;
  }
}
