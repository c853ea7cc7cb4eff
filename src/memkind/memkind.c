/* SPDX-License-Identifier: BSD-3-Clause */
/* memkind.c: memkind's kinds on libsicm arenas — the memkind-compatible
 * library (libmemkind.so.0 in $libdir/sicm/memkind).  A kind (the table of
 * memkind_kinds.c) names a memory type, a scope and a placement.  Each kind
 * gets one libsicm arena per initiator node, created on first use, bound
 * to the devices the kind selects from that node: this file holds those
 * arenas, cached per CPU, and memkind.h's allocation calls.
 * MEMKIND_DEFAULT is the process's malloc where the process's memory
 * policy is not the default (memkind_init.c).
 * Only libsicm's public API is used, with its header's inline paths: a
 * kind's allocation is a load of the calling CPU's arena for the kind
 * from mk_fast and an inline sicm_arena_alloc, its free the header's
 * inline check of the thread's front. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "../base_settings.h"
#include "memkind_internal.h"

#define NKINDS MK_NKINDS /* the static kinds; file-backed ones follow, made at run time */

struct mk_fast mk_fast;

/* ---- the calling thread's CPU ----
 * Read from the thread's rseq area, which the kernel rewrites whenever the
 * thread changes CPU, so a thread that moves gets its new node's memory
 * from its next allocation; without rseq (glibc before 2.35, or
 * glibc.pthread.rseq=0) sched_getcpu() gives the same answer at the cost
 * of a call. */

/* The CPU from the rseq area, or -1 where there is none.  Where the
 * area's CPU field lies from the thread pointer is found at start-up: one
 * load here instead of glibc's two variables. */
static inline int cpu_rseq(void) {
  long offset = __atomic_load_n(&mk_fast.rseq_cpu_offset, __ATOMIC_RELAXED);
  if (__builtin_expect(offset == 0, 0))
    return -1;
  return __atomic_load_n((const int *)(void *)((char *)__builtin_thread_pointer() + offset),
                         __ATOMIC_RELAXED);
}

static inline int cpu_now(void) {
  int cpu = cpu_rseq();
  return cpu >= 0 ? cpu : sched_getcpu();
}

/* A static kind, or a file-backed one that exists (its slot has a name). */
static int kind_valid(memkind_t kind) {
  if (kind >= &mk_kinds[0] && kind < &mk_kinds[NKINDS])
    return 1;
  return kind >= &mk_kinds[NKINDS] && kind < &mk_kinds[MK_KINDS_MAX] &&
         __atomic_load_n(&kind->name, __ATOMIC_ACQUIRE) != NULL;
}
int mk_kind_valid(memkind_t kind) { return kind_valid(kind); }

/* Whether the heap serves the kind whenever its arenas do not:
 * MEMKIND_DEFAULT, under another memory policy or on a node without memory
 * of its own. */
static int kind_of_heap(memkind_t kind) { return kind->memory == MEM_LOCAL; }

/* Whether the kind's memory is the process heap's (decided at start-up). */
static int kind_in_heap(memkind_t kind) {
  return kind->memory == MEM_LOCAL && !(mk_ready() && mk_machine.local_in_arenas);
}

int mk_kind_in_heap(memkind_t kind) { return kind_in_heap(kind); }

/* ---- the arenas of kinds, by handle ----
 * An open-addressed table from arena handle to kind, filled as arenas are
 * published and never emptied (a kind's arenas live as long as the
 * process), so that freeing and detecting find a pointer's kind in a few
 * loads.  An arena it has no room for is found by kind_of_arena's scan. */
#define KNOWN_SLOTS 1024
#define KNOWN_PROBES 8
static struct { sicm_arena arena; memkind_t kind; } known[KNOWN_SLOTS];

static unsigned known_hash(sicm_arena arena) {
  return (unsigned)(((uintptr_t)arena * 0x9e3779b97f4a7c15ull) >> 54) & (KNOWN_SLOTS - 1);
}

static void known_add(sicm_arena arena, memkind_t kind) {
  for (unsigned i = 0, h = known_hash(arena); i < KNOWN_PROBES; i++) {
    unsigned slot = (h + i) & (KNOWN_SLOTS - 1);
    sicm_arena empty = NULL;
    if (__atomic_compare_exchange_n(&known[slot].arena, &empty, arena, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
      __atomic_store_n(&known[slot].kind, kind, __ATOMIC_RELEASE);
      return;
    }
  }
}

void mk_kind_publish(memkind_t kind, sicm_arena arena) { known_add(arena, kind); }

/* The kind of an arena the table holds; NULL when it does not (yet). */
static inline memkind_t known_kind(sicm_arena arena) {
  for (unsigned i = 0, h = known_hash(arena); i < KNOWN_PROBES; i++) {
    unsigned slot = (h + i) & (KNOWN_SLOTS - 1);
    sicm_arena a = __atomic_load_n(&known[slot].arena, __ATOMIC_ACQUIRE);
    if (a == arena)
      return __atomic_load_n(&known[slot].kind, __ATOMIC_ACQUIRE);
    if (a == NULL)
      return NULL;
  }
  return NULL;
}

/* The kind's arena for the calling thread's node, made on first use, or
 * NULL with errno ENOMEM when the kind has no device and cannot fall back. */
static sicm_arena kind_arena_make(memkind_t k, int node);

/* A kind's first allocation makes its arena; what that leaves in errno
 * (files it looked for, and the like) is not the caller's: memkind leaves
 * errno alone when an allocation succeeds. */
static sicm_arena kind_arena_slow(memkind_t k, int cpu) {
  int saved_errno = errno;
  if (!mk_ready()) {
    errno = ENOMEM;
    return NULL;
  }
  if (mk_kind_single(k)) { /* one arena, whatever the node */
    if ((unsigned)cpu < MK_FAST_CPUS)
      __atomic_store_n(&mk_fast.arena[cpu][k - mk_kinds], k->single_arena, __ATOMIC_RELEASE);
    return k->single_arena;
  }
  int node = cpu >= 0 && cpu < mk_machine.ncpus ? mk_machine.cpu_node[cpu] : -1;
  int by_cpu = node >= 0; /* else the thread's own node: not the CPU's to keep */
  if (node < 0) {
    node = sicm_node_self();
    if (node < 0 || node >= mk_machine.node_slots)
      node = 0;
  }
  sicm_arena *table = __atomic_load_n(&k->arenas, __ATOMIC_ACQUIRE);
  sicm_arena arena = table ? __atomic_load_n(&table[node], __ATOMIC_ACQUIRE) : NULL;
  if (arena == NULL)
    arena = kind_arena_make(k, node);
  if (arena != NULL && by_cpu && cpu < MK_FAST_CPUS)
    __atomic_store_n(&mk_fast.arena[cpu][k - mk_kinds], arena, __ATOMIC_RELEASE);
  if (arena != NULL)
    errno = saved_errno;
  return arena;
}

/* The kind's arena for `cpu` from mk_fast, or NULL. */
static inline sicm_arena kind_arena_cached(memkind_t k, int cpu) {
  return (unsigned)cpu < MK_FAST_CPUS ? __atomic_load_n(&mk_fast.arena[cpu][k - mk_kinds],
                                                        __ATOMIC_ACQUIRE)
                                      : NULL;
}

static inline sicm_arena kind_arena(memkind_t k) {
  int cpu = cpu_now();
  sicm_arena arena = kind_arena_cached(k, cpu);
  return __builtin_expect(arena != NULL, 1) ? arena : kind_arena_slow(k, cpu);
}

static sicm_arena kind_arena_make(memkind_t k, int node) {
  /* Looked at again: another thread may have made it since (creating an
   * arena to destroy it costs far more than this read). */
  sicm_arena *table = __atomic_load_n(&k->arenas, __ATOMIC_ACQUIRE);
  sicm_arena arena = table ? __atomic_load_n(&table[node], __ATOMIC_ACQUIRE) : NULL;
  if (arena != NULL)
    return arena;
  if (table == NULL) {
    sicm_arena *made = calloc((size_t)mk_machine.node_slots, sizeof *made);
    if (made == NULL || !__atomic_compare_exchange_n(&k->arenas, &table, made, 0,
                                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      free(made);
    else
      table = made;
    if (table == NULL) {
      errno = ENOMEM;
      return NULL;
    }
  }
  sicm_device *devs[SICM_ARENA_DEVICES_MAX];
  unsigned n = mk_kind_devices(k, node, devs);
  unsigned flags = 0;
  if (k->place == PLACE_INTERLEAVE) /* even over one node, as memkind's policy is */
    flags |= SICM_ARENA_INTERLEAVE;
  else if (k->place == PLACE_PREFERRED)
    flags |= SICM_ARENA_PREFERRED;
  else if (k->place == PLACE_DEFAULT)
    flags |= SICM_ARENA_FIRST_TOUCH;
  if (n == 0 && k->place != PLACE_BIND && k->place != PLACE_INTERLEAVE &&
      (devs[0] = sicm_device_of_node(node, k->huge_page)))
    n = 1; /* no memory of the kind's type: the local node, as memkind documents */
  sicm_arena made = n > 0 ? sicm_arena_create_devices(0, devs, n, flags) : NULL;
  if (made == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  if (__atomic_compare_exchange_n(&table[node], &arena, made, 0, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE)) {
    known_add(made, k);
    return made;
  }
  sicm_arena_destroy(made); /* another thread's is in place: use it */
  return arena;
}

/* The kind whose arena is `arena`, or NULL. */
static inline memkind_t kind_of_arena(sicm_arena arena) {
  if (arena == NULL)
    return NULL;
  memkind_t kind = known_kind(arena);
  if (__builtin_expect(kind != NULL, 1))
    return kind;
  for (unsigned k = 0; k < NKINDS; k++) {
    sicm_arena *table = __atomic_load_n(&mk_kinds[k].arenas, __ATOMIC_ACQUIRE);
    for (int node = 0; table != NULL && node < mk_machine.node_slots; node++)
      if (__atomic_load_n(&table[node], __ATOMIC_ACQUIRE) == arena)
        return &mk_kinds[k];
  }
  return NULL;
}

/* The checking mode of libsicm (SICM_CHECK=1, or a build that always
 * checks): a pointer given to the wrong free stops the process. */
static int checking(void) {
#ifdef SICM_ALWAYS_CHECK
  return 1;
#else
  const char *v = getenv("SICM_CHECK");
  int on;
  return v != NULL && sc_setting_bool(v, &on) == 0 && on;
#endif
}

void mk_report_foreign(const char *call, const void *ptr) {
  if (checking()) {
    fprintf(stderr, "libsicm: SICM_CHECK: %s(%p): not memory of that kind, nor of any kind\n",
            call, ptr);
    abort();
  }
  static int reported;
  if (!__atomic_exchange_n(&reported, 1, __ATOMIC_RELAXED))
    fprintf(stderr, "libmemkind (libsicm): %s(%p): not memory of that kind; ignored "
                    "(reported once)\n", call, ptr);
  errno = EINVAL;
}

int mk_is_hbw_pointer(const void *ptr) {
  memkind_t k = kind_of_arena(sicm_arena_lookup(ptr));
  return k != NULL && k->memory == MEM_HBW;
}

/* The arena of an HBW kind this thread's front served last, so that
 * hbw_free need not look up the kind of the front's arena each time.
 * Initial-exec, as libsicm's front: one word of the static TLS that
 * dlopen takes it from. */
static __thread __attribute__((tls_model("initial-exec"))) sicm_arena hbw_front;

/* hbw_free's and memkind_free's usual case: a block of the arena this
 * thread used last, which the header's front check serves; 1 if done.
 * That check takes only the front's own blocks, so of the front's arena
 * only the kind is looked at here. */
static inline int free_in_front(void *ptr, int hbw_only) {
  sicm_front_v2_t *f = &sicm_front_v2;
  sicm_arena arena = (sicm_arena)__atomic_load_n(&f->arena, __ATOMIC_RELAXED);
  if (hbw_only && arena != hbw_front) {
    memkind_t k = arena != NULL ? known_kind(arena) : NULL;
    if (k == NULL || k->memory != MEM_HBW)
      return 0;
    hbw_front = arena;
  }
  return sicm_front_free_v2(f, ptr);
}

static __attribute__((noinline)) void hbw_free_slow(void *ptr) {
  if (ptr == NULL)
    return;
  if (mk_is_hbw_pointer(ptr))
    sicm_free_named(ptr, "hbw_free");
  else
    mk_report_foreign("hbw_free", ptr);
}

MK_HOT void mk_hbw_free(void *ptr) {
  if (__builtin_expect(ptr != NULL && free_in_front(ptr, 1), 1))
    return;
  hbw_free_slow(ptr);
}

/* ---- memkind.h ---- */

/* Sizes that calloc and posix_memalign serve as plain allocations, which
 * the thread's front can hand out: the small ones, where clearing or
 * rounding costs less than the general path. */
#define SMALL_MAX 4096

/* Clears n bytes at p.  Up to 64 bytes, two fixed-size clears that may
 * overlap: each is a store or two inline, where the C library's memset is
 * a call that under emulation costs more than the allocation itself. */
static inline void *clear_small(void *p, size_t n) {
  char *c = p;
  if (n > 64)
    return memset(p, 0, n);
  if (n >= 32) {
    memset(c, 0, 32);
    memset(c + n - 32, 0, 32);
  } else if (n >= 16) {
    memset(c, 0, 16);
    memset(c + n - 16, 0, 16);
  } else if (n >= 8) {
    memset(c, 0, 8);
    memset(c + n - 8, 0, 8);
  } else {
    for (size_t i = 0; i < n; i++)
      c[i] = 0;
  }
  return p;
}

static __attribute__((noinline)) void *kind_malloc_slow(memkind_t kind, size_t size) {
  if (size == 0)
    return NULL;
  if (kind_in_heap(kind))
    return malloc(size);
  sicm_arena arena = kind_arena_slow(kind, cpu_now());
  if (arena == NULL && kind_of_heap(kind))
    return malloc(size); /* a node without memory of its own */
  return arena != NULL ? sicm_arena_alloc(arena, size) : NULL;
}

/* Written so that its usual case needs no stack frame: every call in it
 * is a tail call. */
MK_HOT void *mk_kind_malloc(memkind_t kind, size_t size) {
  /* Without rseq, the CPU costs a call: the slow path makes it. */
  sicm_arena arena = kind_arena_cached(kind, cpu_rseq());
  if (__builtin_expect(arena == NULL || size == 0, 0))
    return kind_malloc_slow(kind, size);
  void *p = sicm_front_alloc_v2(&sicm_front_v2, (uintptr_t)arena, size);
  return __builtin_expect(p != NULL, 1) ? p : (sicm_arena_alloc)(arena, size);
}

static __attribute__((noinline)) void *kind_calloc_slow(memkind_t kind, size_t total) {
  void *p = kind_malloc_slow(kind, total);
  return p ? clear_small(p, total) : NULL;
}

/* calloc of 1 .. SMALL_MAX bytes: mk_kind_malloc's path, cleared here,
 * with no call but the clear's when the front serves it. */
MK_HOT static __attribute__((noinline)) void *kind_calloc_small(memkind_t kind, size_t total) {
  sicm_arena arena = kind_arena_cached(kind, cpu_rseq());
  void *p = arena != NULL ? sicm_front_alloc_v2(&sicm_front_v2, (uintptr_t)arena, total) : NULL;
  if (__builtin_expect(p == NULL, 0))
    return kind_calloc_slow(kind, total);
  return clear_small(p, total);
}

MK_HOT void *memkind_malloc(memkind_t kind, size_t size) {
  if (!kind_valid(kind)) {
    errno = EINVAL;
    return NULL;
  }
  if (size == 0)
    return NULL;
  return mk_kind_malloc(kind, size);
}

static __attribute__((noinline)) void *kind_calloc_large(memkind_t kind, size_t num, size_t size) {
  sicm_arena arena = kind_in_heap(kind) ? NULL : kind_arena(kind);
  if (arena == NULL)
    return kind_of_heap(kind) ? calloc(num, size) : NULL;
  return sicm_arena_calloc(arena, num, size);
}

/* Every path ends in a tail call: a small block (cleared here, so that it
 * comes by the front, which gives the heap's kinds malloc's) needs no
 * stack frame here. */
MK_HOT void *memkind_calloc(memkind_t kind, size_t num, size_t size) {
  if (!kind_valid(kind)) {
    errno = EINVAL;
    return NULL;
  }
  if (num == 0 || size == 0)
    return NULL;
  size_t total;
  if (!__builtin_mul_overflow(num, size, &total) && total <= SMALL_MAX)
    return kind_calloc_small(kind, total);
  return kind_calloc_large(kind, num, size);
}

MK_HOT int memkind_posix_memalign(memkind_t kind, void **memptr, size_t alignment, size_t size) {
  if (!kind_valid(kind) || memptr == NULL || alignment < sizeof(void *) ||
      (alignment & (alignment - 1)) != 0)
    return EINVAL;
  if (size == 0) { /* as memkind documents: success, and no memory */
    *memptr = NULL;
    return 0;
  }
  sicm_arena arena = kind_in_heap(kind) ? NULL : kind_arena(kind);
  if (arena == NULL)
    return kind_of_heap(kind) ? posix_memalign(memptr, alignment, size) : ENOMEM;
  void *p = NULL;
  if (alignment <= 4096 && size <= SMALL_MAX) {
    /* jemalloc's small classes that are multiples of the alignment start
     * at multiples of it (its own aligned path relies on that); the check
     * keeps that an optimisation, not an assumption. */
    p = sicm_arena_alloc(arena, (size + alignment - 1) & ~(alignment - 1));
    if (p != NULL && ((uintptr_t)p & (alignment - 1)) != 0) {
      sicm_free(p);
      p = NULL;
    }
  }
  if (p == NULL)
    p = sicm_arena_aligned_alloc(arena, alignment, size);
  if (p == NULL)
    return ENOMEM;
  *memptr = p;
  return 0;
}

/* A block of no arena is MEMKIND_DEFAULT's, as memkind says of a block
 * its kinds' arenas do not hold (and DEFAULT's free and realloc take the
 * heap's blocks). */
memkind_t memkind_detect_kind(void *ptr) {
  if (ptr == NULL)
    return NULL;
  sicm_arena arena = sicm_arena_lookup(ptr);
  if (arena == NULL)
    return MEMKIND_DEFAULT;
  return kind_of_arena(arena);
}

MK_HOT void memkind_free(memkind_t kind, void *ptr) {
  if (ptr == NULL || free_in_front(ptr, 0))
    return;
  if ((sicm_arena_lookup)(ptr) != NULL) { /* called: the front missed already */
    sicm_free_named(ptr, "memkind_free");
  } else if (kind == NULL ? mk_heap_may_own(ptr) : kind_valid(kind) && kind_of_heap(kind)) {
    free(ptr);
  } else {
    mk_report_foreign("memkind_free", ptr);
  }
}

size_t memkind_malloc_usable_size(memkind_t kind, void *ptr) {
  if (ptr == NULL)
    return 0;
  if (sicm_arena_lookup(ptr) != NULL)
    return sicm_usable_size(ptr);
  return malloc_usable_size(ptr);
}

void *memkind_realloc(memkind_t kind, void *ptr, size_t size) {
  if (kind == NULL && ptr != NULL && sicm_arena_lookup(ptr) == NULL && !mk_heap_may_own(ptr)) {
    mk_report_foreign("memkind_realloc", ptr);
    return NULL;
  }
  if (kind == NULL)
    kind = memkind_detect_kind(ptr);
  if (!kind_valid(kind)) {
    errno = EINVAL;
    return NULL;
  }
  if (ptr == NULL)
    return memkind_malloc(kind, size);
  if (size == 0) {
    memkind_free(kind, ptr);
    return NULL;
  }
  sicm_arena from = sicm_arena_lookup(ptr);
  if (kind_of_heap(kind) && from == NULL)
    return realloc(ptr, size); /* the heap's block stays the heap's */
  if (from != NULL && kind_of_arena(from) == kind)
    return sicm_realloc_named(ptr, size, "memkind_realloc");
  /* Another kind's memory moves into this kind. */
  void *moved = memkind_malloc(kind, size);
  if (moved == NULL)
    return NULL;
  size_t old = memkind_malloc_usable_size(NULL, ptr);
  memcpy(moved, ptr, old < size ? old : size);
  memkind_free(NULL, ptr);
  return moved;
}

int memkind_check_available(memkind_t kind) {
  if (!kind_valid(kind))
    return MEMKIND_ERROR_INVALID;
  if (kind_of_heap(kind) || mk_kind_single(kind))
    return 0;
  if (!mk_ready())
    return MEMKIND_ERROR_UNAVAILABLE;
  sicm_device *devs[SICM_ARENA_DEVICES_MAX];
  int node = sicm_node_self();
  if (mk_kind_devices(kind, node < 0 ? 0 : node, devs) > 0)
    return 0;
  if (kind->huge_page && (kind->memory != MEM_HBW || mk_hbw_available()))
    return MEMKIND_ERROR_HUGETLB; /* the memory exists; no pool of that page size */
  return kind->memory == MEM_CAPACITY ? MEMKIND_ERROR_UNAVAILABLE
                                      : MEMKIND_ERROR_MEMTYPE_NOT_AVAILABLE;
}
