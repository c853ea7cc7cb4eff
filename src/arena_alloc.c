/* arena_alloc.c: the allocation entry points.  Each resolves the arena —
 * from the handle, or from the pointer through the window table — and
 * calls its kind's operation.  sicm_arena_alloc and sicm_free first try
 * the private kind's thread caches (arena_je_fast.c) and come here when
 * those cannot serve. */
#include <errno.h>

#include "arena.h"

void *sc_arena_alloc_any(sicm_arena sa, size_t sz) {
  sc_arena *a = sc_arena_resolve(sa);
  return a ? a->ops->alloc(a, sc_handle_generation(sa), sz, 0, 0) : NULL;
}

void *sicm_arena_alloc_aligned(sicm_arena sa, size_t sz, size_t align) {
  if (align == 0 || (align & (align - 1)) != 0)
    return sc_fail_null(EINVAL, "alignment %zu is not a power of two", align);
  sc_arena *a = sc_arena_resolve(sa);
  return a ? a->ops->alloc(a, sc_handle_generation(sa), sz, align, 0) : NULL;
}

void *sicm_arena_calloc(sicm_arena sa, size_t n, size_t sz) {
  size_t total;
  if (__builtin_mul_overflow(n, sz, &total))
    return sc_fail_null(ENOMEM, "calloc of %zu x %zu bytes overflows", n, sz);
  sc_arena *a = sc_arena_resolve(sa);
  return a ? a->ops->alloc(a, sc_handle_generation(sa), total, 0, 1) : NULL;
}

/* The live arena owning ptr and its generation; NULL with EINVAL if none. */
static sc_arena *owner_of(const void *ptr, uint64_t *generation) {
  sc_arena *a = sc_arena_of_ptr(ptr, generation);
  return a ? a : sc_fail_null(EINVAL, "%p belongs to no arena", ptr);
}

void *sicm_realloc(void *ptr, size_t sz) {
  if (ptr == NULL)
    return sicm_alloc(sz);
  uint64_t generation;
  sc_arena *a = owner_of(ptr, &generation);
  return a ? a->ops->realloc(a, generation, ptr, sz) : NULL;
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
  return a->ops->realloc(a, generation, ptr, sz);
}

void sc_free_any(void *ptr) {
  if (ptr == NULL)
    return;
  uint64_t generation;
  sc_arena *a = owner_of(ptr, &generation);
  if (a != NULL)
    a->ops->free(a, generation, ptr);
}

size_t sicm_usable_size(const void *ptr) {
  uint64_t generation;
  sc_arena *a = owner_of(ptr, &generation);
  return a ? a->ops->usable_size(a, ptr) : 0;
}

size_t sc_arena_usable_for(sicm_arena sa, size_t size, size_t align) {
  sc_arena *a = sc_arena_resolve(sa);
  return a ? a->ops->usable_for(a, size, align) : 0;
}

void *sicm_alloc(size_t sz) {
  sicm_arena sa = sicm_arena_get_default();
  return sa ? sicm_arena_alloc(sa, sz) : NULL;
}
