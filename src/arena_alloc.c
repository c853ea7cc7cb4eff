/* SPDX-License-Identifier: BSD-3-Clause */
/* arena_alloc.c: the allocation entry points.  Each resolves the arena —
 * from the handle, or from the pointer through the window table — and
 * calls its kind's operation, counting the block in the arena's pool when
 * it has one.  sicm_arena_alloc and sicm_free first try the private kind's
 * thread caches (arena_je_fast.c) and come here when those cannot serve. */
#include <errno.h>

#include "arena.h"

/* ---- pools ---- */

static int pool_take(sc_pool *pool, size_t bytes) {
  size_t used = __atomic_load_n(&pool->used, __ATOMIC_RELAXED);
  do {
    if (pool->size != 0 && (used + bytes > pool->size || used + bytes < used))
      return sc_fail(ENOMEM, "the allocator's pool of %zu bytes has %zu in use: %zu more do "
                             "not fit", pool->size, used, bytes);
  } while (!__atomic_compare_exchange_n(&pool->used, &used, used + bytes, 1, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED));
  return 0;
}

static void pool_give(sc_pool *pool, size_t bytes) {
  __atomic_fetch_sub(&pool->used, bytes, __ATOMIC_RELAXED);
}

static void *alloc_pooled(sc_arena *a, uint64_t generation, size_t sz, size_t align, int zero) {
  sc_pool *pool = __atomic_load_n(&a->pool, __ATOMIC_ACQUIRE);
  if (pool == NULL)
    return a->ops->alloc(a, generation, sz, align, zero);
  size_t usable = a->ops->usable_for(a, sz, align);
  if (usable == 0) /* no class holds sz: the kind says why */
    return a->ops->alloc(a, generation, sz, align, zero);
  if (pool_take(pool, usable) != 0)
    return NULL;
  void *p = a->ops->alloc(a, generation, sz, align, zero);
  if (p == NULL)
    pool_give(pool, usable);
  return p;
}

static void *alloc_counted(sc_arena *a, uint64_t generation, size_t sz, size_t align, int zero) {
  void *p = alloc_pooled(a, generation, sz, align, zero);
  if (__builtin_expect(sc_check_on, 0) && p != NULL)
    sc_check_born(p, generation);
  return p;
}

/* A resize takes the growth from the pool first, and settles on the
 * block's usable size after. */
static void *realloc_pooled(sc_arena *a, uint64_t generation, void *ptr, size_t sz) {
  sc_pool *pool = __atomic_load_n(&a->pool, __ATOMIC_ACQUIRE);
  if (pool == NULL)
    return a->ops->realloc(a, generation, ptr, sz);
  size_t old = a->ops->usable_size(a, ptr);
  if (old == 0)
    return NULL; /* EINVAL: not a block */
  size_t want = a->ops->usable_for(a, sz, 0);
  size_t grow = want > old ? want - old : 0;
  if (grow != 0 && pool_take(pool, grow) != 0)
    return NULL;
  void *p = a->ops->realloc(a, generation, ptr, sz);
  if (p == NULL) {
    if (grow != 0)
      pool_give(pool, grow);
    return NULL;
  }
  size_t counted = old + grow, now = a->ops->usable_size(a, p);
  if (now < counted)
    pool_give(pool, counted - now);
  else if (now > counted)
    __atomic_fetch_add(&pool->used, now - counted, __ATOMIC_RELAXED);
  return p;
}

static void *realloc_counted(sc_arena *a, uint64_t generation, void *ptr, size_t sz,
                             const char *call) {
  if (__builtin_expect(sc_check_on, 0))
    sc_check_dies(ptr, call);
  void *p = realloc_pooled(a, generation, ptr, sz);
  if (__builtin_expect(sc_check_on, 0))
    sc_check_born(p != NULL ? p : ptr, generation); /* failed: the block stays live */
  return p;
}

/* ---- entry points ---- */

void *sc_arena_alloc_any(sicm_arena sa, size_t sz) {
  sc_arena *a = sc_arena_resolve(sa);
  return a ? alloc_counted(a, sc_handle_generation(sa), sz, 0, 0) : NULL;
}

void *sicm_arena_aligned_alloc(sicm_arena sa, size_t align, size_t sz) {
  if (align == 0 || (align & (align - 1)) != 0)
    return sc_fail_null(EINVAL, "alignment %zu is not a power of two", align);
  sc_arena *a = sc_arena_resolve(sa);
  return a ? alloc_counted(a, sc_handle_generation(sa), sz, align, 0) : NULL;
}

void *sicm_arena_calloc(sicm_arena sa, size_t n, size_t sz) {
  size_t total;
  if (__builtin_mul_overflow(n, sz, &total))
    return sc_fail_null(ENOMEM, "calloc of %zu x %zu bytes overflows", n, sz);
  sc_arena *a = sc_arena_resolve(sa);
  return a ? alloc_counted(a, sc_handle_generation(sa), total, 0, 1) : NULL;
}

/* The live arena owning ptr and its generation; NULL with EINVAL if none. */
static sc_arena *owner_of(const void *ptr, uint64_t *generation) {
  sc_arena *a = sc_arena_of_ptr(ptr, generation);
  return a ? a : sc_fail_null(EINVAL, "%p belongs to no arena", ptr);
}

void *sicm_realloc_named(void *ptr, size_t sz, const char *call) {
  if (ptr == NULL)
    return sicm_alloc(sz);
  uint64_t generation;
  sc_arena *a = owner_of(ptr, &generation);
  return a ? realloc_counted(a, generation, ptr, sz, call ? call : "sicm_realloc") : NULL;
}

void *sicm_realloc(void *ptr, size_t sz) {
  return sicm_realloc_named(ptr, sz, NULL);
}

void *sicm_arena_realloc(sicm_arena sa, void *ptr, size_t sz) {
  if (ptr == NULL)
    return sicm_arena_alloc(sa, sz);
  sc_arena *a = sc_arena_resolve(sa);
  if (a == NULL)
    return NULL;
  uint64_t generation;
  if (owner_of(ptr, &generation) != a)
    return sc_fail_null(EINVAL, "%p does not belong to this arena", ptr);
  return realloc_counted(a, generation, ptr, sz, "sicm_arena_realloc");
}

void sicm_free_named(void *ptr, const char *call) {
  if (ptr == NULL)
    return;
  if (__builtin_expect(sc_check_on, 0))
    sc_check_dies(ptr, call ? call : "sicm_free");
  uint64_t generation;
  sc_arena *a = owner_of(ptr, &generation);
  if (a == NULL)
    return;
  sc_pool *pool = __atomic_load_n(&a->pool, __ATOMIC_ACQUIRE);
  if (pool != NULL) {
    size_t usable = a->ops->usable_size(a, ptr);
    if (usable == 0)
      return; /* EINVAL: not a block */
    pool_give(pool, usable);
  }
  a->ops->free(a, generation, ptr);
}

void sc_free_any(void *ptr) {
  sicm_free_named(ptr, NULL);
}

size_t sicm_usable_size(const void *ptr) {
  uint64_t generation;
  sc_arena *a = owner_of(ptr, &generation);
  return a ? a->ops->usable_size(a, ptr) : 0;
}

void *sicm_alloc(size_t sz) {
  sicm_arena sa = sicm_arena_get_default();
  return sa ? sicm_arena_alloc(sa, sz) : NULL;
}
