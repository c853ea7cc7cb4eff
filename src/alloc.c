/* alloc.c: the allocation entry points and the default arenas.  The fast
 * path is a handle check and a pop from (or push to) this thread's bin for
 * the arena; a miss is one jemalloc call.  No lock either way.  A shared
 * arena (rec->shm) has its own heap in its segment: shm_heap.c. */
#include <errno.h>
#include <stdint.h>

#include "shm.h"

/* Handle generation (see arena.c); valid once sicm_arena_resolve succeeded. */
static uint64_t handle_generation(sicm_arena sa) { return (uintptr_t)sa >> 12; }

static int arena_flags(sicm_arena_rec *rec, uint64_t generation) {
  return (int)MALLOCX_ARENA(rec->je_index) | sicm_cache_flag(sicm_thread_cache_get(rec, generation));
}

static int size_check(size_t sz) {
  if (sz == 0)
    return sicm_fail(EINVAL, "size 0");
  if (sz > PTRDIFF_MAX)
    return sicm_fail(ENOMEM, "size %zu is too large", sz);
  return 0;
}

static void *alloc_result(void *p, const sicm_arena_rec *rec, size_t sz) {
  if (p == NULL)
    return sicm_fail_null(ENOMEM, "arena out of memory for %zu bytes (held %zu, maxsize %zu)",
                          sz, __atomic_load_n(&rec->held, __ATOMIC_RELAXED), rec->maxsize);
  return p;
}

/* lg_align 0: no alignment beyond the natural one. */
static void *arena_mallocx(sicm_arena sa, size_t sz, unsigned lg_align, int zero) {
  sicm_arena_rec *rec = sicm_arena_resolve(sa);
  if (rec == NULL)
    return NULL;
  if (rec->shm != NULL)
    return shm_heap_alloc(rec, sz, (size_t)1 << lg_align, zero);
  if (size_check(sz) != 0)
    return NULL;
  int flags = arena_flags(rec, handle_generation(sa)) | (lg_align ? MALLOCX_LG_ALIGN(lg_align) : 0) |
              (zero ? MALLOCX_ZERO : 0);
  return alloc_result(mallocx(sz, flags), rec, sz);
}

void *sicm_arena_alloc(sicm_arena sa, size_t sz) {
  sicm_arena_rec *rec = sicm_arena_resolve(sa);
  if (rec == NULL)
    return NULL;
  if (__builtin_expect(rec->shm != NULL, 0))
    return shm_heap_alloc(rec, sz, 0, 0);
  if (sz - 1 < SICM_BIN_MAXSIZE) {
    sicm_thread_cache *cache = sicm_thread_cache_get(rec, handle_generation(sa));
    if (cache != NULL) {
      sicm_bin *bin = &cache->bins[sicm_size_class(sz)];
      if (bin->count > 0)
        return bin->slots[--bin->count];
      return alloc_result(mallocx(sz, (int)MALLOCX_ARENA(rec->je_index) | cache->flag), rec, sz);
    }
  }
  return arena_mallocx(sa, sz, 0, 0);
}

void *sicm_arena_alloc_aligned(sicm_arena sa, size_t sz, size_t align) {
  if (align == 0 || (align & (align - 1)) != 0)
    return sicm_fail_null(EINVAL, "alignment %zu is not a power of two", align);
  return arena_mallocx(sa, sz, (unsigned)__builtin_ctzl(align), 0);
}

void *sicm_arena_calloc(sicm_arena sa, size_t n, size_t sz) {
  size_t total;
  if (__builtin_mul_overflow(n, sz, &total))
    return sicm_fail_null(ENOMEM, "calloc of %zu x %zu bytes overflows", n, sz);
  return arena_mallocx(sa, total, 0, 1);
}

/* The live arena owning ptr and its generation; NULL with EINVAL if none. */
static sicm_arena_rec *owner_of(const void *ptr, uint64_t *generation) {
  sicm_arena_rec *rec = sicm_window_owner(ptr);
  *generation = rec ? __atomic_load_n(&rec->live_generation, __ATOMIC_ACQUIRE) : 0;
  if (*generation == 0)
    return sicm_fail_null(EINVAL, "%p belongs to no arena", ptr);
  return rec;
}

static void *owner_rallocx(sicm_arena_rec *rec, uint64_t generation, void *ptr, size_t sz) {
  if (rec->shm != NULL)
    return shm_heap_realloc(rec, ptr, sz);
  if (size_check(sz) != 0)
    return NULL;
  return alloc_result(rallocx(ptr, sz, arena_flags(rec, generation)), rec, sz);
}

void *sicm_realloc(void *ptr, size_t sz) {
  if (ptr == NULL)
    return sicm_alloc(sz);
  uint64_t generation;
  sicm_arena_rec *rec = owner_of(ptr, &generation);
  return rec ? owner_rallocx(rec, generation, ptr, sz) : NULL;
}

void *sicm_arena_realloc(sicm_arena sa, void *ptr, size_t sz) {
  if (ptr == NULL)
    return sicm_arena_alloc(sa, sz);
  sicm_arena_rec *rec = sicm_arena_resolve(sa);
  if (rec == NULL)
    return NULL;
  uint64_t generation;
  if (owner_of(ptr, &generation) != rec)
    return sicm_fail_null(EINVAL, "%p does not belong to this arena", ptr);
  return owner_rallocx(rec, generation, ptr, sz);
}

void sicm_free(void *ptr) {
  if (ptr == NULL)
    return;
  uint64_t generation;
  sicm_arena_rec *rec = owner_of(ptr, &generation);
  if (rec == NULL)
    return;
  if (__builtin_expect(rec->shm != NULL, 0)) {
    shm_heap_free(rec, ptr);
    return;
  }
  sicm_thread_cache *cache = sicm_thread_cache_get(rec, generation);
  if (cache == NULL) {
    dallocx(ptr, MALLOCX_TCACHE_NONE);
    return;
  }
  size_t usable = sallocx(ptr, 0);
  if (usable > SICM_BIN_MAXSIZE) {
    dallocx(ptr, cache->flag);
    return;
  }
  sicm_bin *bin = &cache->bins[sicm_size_class(usable)];
  if (bin->count == SICM_BIN_CAP)
    sicm_bin_flush(bin, cache->flag, SICM_BIN_CAP / 2);
  bin->slots[bin->count++] = ptr;
}

size_t sicm_usable_size(const void *ptr) {
  uint64_t generation;
  sicm_arena_rec *rec = owner_of(ptr, &generation);
  if (rec == NULL)
    return 0;
  return rec->shm ? shm_heap_usable_size(rec, ptr) : sallocx((void *)ptr, 0);
}

/* ---- default arenas ---- */

static SICM_TLS sicm_arena thread_default;
/* The library's default arena of each node, created on first use. */
static sicm_arena library_defaults[1024];
static pthread_mutex_t library_defaults_lock = PTHREAD_MUTEX_INITIALIZER;

int sicm_arena_set_default(sicm_arena sa) {
  if (sa != NULL && sicm_arena_resolve(sa) == NULL)
    return -1;
  thread_default = sa;
  return 0;
}

static sicm_arena library_default_of_node(int node) {
  if (node < 0 || node >= 1024)
    return sicm_fail_null(EINVAL, "node %d has no default arena", node);
  sicm_arena sa = __atomic_load_n(&library_defaults[node], __ATOMIC_ACQUIRE);
  int saved = errno;
  if (sa != NULL && sicm_arena_resolve(sa) != NULL)
    return sa;
  errno = saved;
  pthread_mutex_lock(&library_defaults_lock);
  sa = library_defaults[node];
  if (sa == NULL || sicm_arena_resolve(sa) == NULL) {
    sicm_device *dev = sicm_device_of_node(node, 0);
    sa = dev ? sicm_arena_create_internal(0, &dev, 1, SICM_ARENA_PREFERRED, 1) : NULL;
    if (sa != NULL)
      __atomic_store_n(&library_defaults[node], sa, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&library_defaults_lock);
  return sa;
}

sicm_arena sicm_arena_get_default(void) {
  if (thread_default != NULL)
    return thread_default;
  int node = sicm_node_self();
  return node < 0 ? NULL : library_default_of_node(node);
}

void *sicm_alloc(size_t sz) {
  sicm_arena sa = sicm_arena_get_default();
  return sa ? sicm_arena_alloc(sa, sz) : NULL;
}
