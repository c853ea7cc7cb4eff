/* SPDX-License-Identifier: BSD-3-Clause */
/* sicm_inline.h: the inline fast path of sicm_arena_alloc() and
 * sicm_free(), and the layout (an ABI, versioned) it reads.  Included by
 * sicm.h; including it alone includes sicm.h first.
 *
 * sicm_arena_alloc(), sicm_free() and sicm_arena_lookup() calls compile, in
 * a program built with GCC or Clang, to an inline check of this thread's
 * front: the bins of the private arena the thread used last, and the
 * addresses of its first window, which the library keeps up to date.  A
 * hit takes a region from a bin, puts one back or names the arena, with no
 * call; anything else calls the functions of sicm.h, so behaviour and
 * errors are theirs.
 * Define SICM_NO_INLINE before including this header to always call them
 * (taking their address, e.g. `&sicm_free`, always gives the function).
 *
 * The layout below is version 2 and is not for direct use.  The library
 * exports its objects as sicm_front_v2 and sicm_epoch_v2; a library with
 * another layout exports other names, so that a program built against
 * this one fails to start rather than misreads it. */
#ifndef SICM_INLINE_H
#define SICM_INLINE_H

#include "sicm.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SICM_BIN_CAP_V2 32

typedef struct sicm_bin_v2 {
  unsigned count, limit;      /* limit <= SICM_BIN_CAP_V2 */
  void *slots[SICM_BIN_CAP_V2];
} sicm_bin_v2;
typedef struct sicm_front_v2_t {
  uintptr_t arena;            /* the handle served; 0: none */
  uint64_t epoch;             /* sicm_epoch_v2 when it was set */
  uintptr_t base, size;       /* addresses whose pages `tags` describes */
  const uint8_t *tags;        /* per 4 KiB page: binned class + 1, or other */
  size_t max;                 /* largest size the bins serve */
  const uint8_t *class_of;    /* (size - 1) / 8 -> bin */
  unsigned nbins;
  sicm_bin_v2 *bins;
  const uint16_t *start_mask; /* per bin: address bits 0 where a block starts */
} sicm_front_v2_t;
/* The library may close another thread's front, storing 0 to arena and
 * size (atomically): the readers below load those two atomically too. */
#if defined(__GNUC__)
/* Initial-exec: the library's thread-locals are in static TLS (it is
 * built so, and keeps them small enough for dlopen), so any program or
 * library reaches the front with one load from the thread pointer. */
SICM_API extern __thread __attribute__((tls_model("initial-exec"))) sicm_front_v2_t sicm_front_v2;
/* Advances whenever an arena is destroyed: a front set before is stale. */
SICM_API extern uint64_t sicm_epoch_v2;
#endif
#if defined(__GNUC__)
/* The front's three checks, on a front the caller fetched once.  The
 * inline paths below, and the library's own functions, are made of these. */

/* A region of this size from the front's bins if the front serves arena
 * `arena`; NULL otherwise (a bin never holds NULL). */
static inline void *sicm_front_alloc_v2(sicm_front_v2_t *f, uintptr_t arena, size_t sz) {
  if (arena == __atomic_load_n(&f->arena, __ATOMIC_RELAXED) && sz - 1 < f->max &&
      f->epoch == __atomic_load_n(&sicm_epoch_v2, __ATOMIC_RELAXED)) {
    sicm_bin_v2 *bin = &f->bins[f->class_of[(sz - 1) >> 3]];
    if (bin->count > 0)
      return bin->slots[--bin->count];
  }
  return NULL;
}

/* The front's arena if ptr lies in the front's addresses, else 0.  They
 * belong to that arena alone: private windows are whole chunks of address
 * space, never shared with another arena. */
static inline uintptr_t sicm_front_owner_v2(const sicm_front_v2_t *f, const void *ptr) {
  return (uintptr_t)ptr - f->base < __atomic_load_n(&f->size, __ATOMIC_RELAXED) &&
                 f->epoch == __atomic_load_n(&sicm_epoch_v2, __ATOMIC_RELAXED)
             ? f->arena
             : 0;
}

/* Puts ptr in the front's bin of its class and returns 1, or returns 0
 * when it is not a binned block of the front's arena, the bin is full, or
 * ptr is the block freed last into it (the library refuses that). */
static inline int sicm_front_free_v2(sicm_front_v2_t *f, void *ptr) {
  uintptr_t offset = (uintptr_t)ptr - f->base;
  if (offset < __atomic_load_n(&f->size, __ATOMIC_RELAXED) &&
      f->epoch == __atomic_load_n(&sicm_epoch_v2, __ATOMIC_RELAXED)) {
    /* Atomic: another thread may be tagging a neighbouring page's block (the
     * same byte codegen as a plain load on x86-64 and arm64). */
    unsigned bin_index = __atomic_load_n(&f->tags[offset >> 12], __ATOMIC_RELAXED) - 1u;
    if (bin_index < f->nbins && ((uintptr_t)ptr & f->start_mask[bin_index]) == 0) {
      sicm_bin_v2 *bin = &f->bins[bin_index];
      unsigned count = bin->count;
      if (count < bin->limit && (count == 0 || bin->slots[count - 1] != ptr)) {
        bin->slots[count] = ptr;
        bin->count = count + 1;
        return 1;
      }
    }
  }
  return 0;
}
#endif

#if defined(__GNUC__) && !defined(SICM_NO_INLINE)

static inline void *sicm_arena_alloc_inline_v2(sicm_arena sa, size_t sz) {
  void *p = sicm_front_alloc_v2(&sicm_front_v2, (uintptr_t)sa, sz);
  return p != NULL ? p : (sicm_arena_alloc)(sa, sz);
}

static inline void sicm_free_inline_v2(void *ptr) {
  if (!sicm_front_free_v2(&sicm_front_v2, ptr))
    (sicm_free)(ptr);
}

static inline sicm_arena sicm_arena_lookup_inline_v2(const void *ptr) {
  uintptr_t arena = sicm_front_owner_v2(&sicm_front_v2, ptr);
  return arena != 0 ? (sicm_arena)arena : (sicm_arena_lookup)(ptr);
}

#define sicm_arena_alloc(sa, sz) sicm_arena_alloc_inline_v2((sa), (sz))
#define sicm_arena_lookup(ptr) sicm_arena_lookup_inline_v2(ptr)
#define sicm_free(ptr) sicm_free_inline_v2(ptr)
#endif

#ifdef __cplusplus
}
#endif

#endif /* SICM_INLINE_H */
