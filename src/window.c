/* window.c: address windows.  Each arena owns large PROT_NONE, NORESERVE
 * reservations, bound once to the arena's nodes; jemalloc's extents are
 * carved from their bottom and opened with mprotect, so every piece
 * inherits the binding, and the pages of the arena are always a few known
 * ranges (what migration moves).  A table indexed by 16 GiB chunk maps any
 * address to its arena without a lock. */
#include <errno.h>
#include <stdbool.h>
#include <numaif.h>
#include <stdint.h>
#include <sys/mman.h>

#include "internal.h"

#define CHUNK_COUNT ((size_t)1 << (SICM_ADDRESS_BITS - SICM_CHUNK_SHIFT))

/* slot + 1 of the arena owning each chunk; 0 when none. */
static uint16_t chunk_owner[CHUNK_COUNT];

sicm_arena_rec *sicm_window_owner(const void *p) {
  uintptr_t a = (uintptr_t)p;
  if (a >> SICM_ADDRESS_BITS)
    return NULL;
  unsigned owner = __atomic_load_n(&chunk_owner[a >> SICM_CHUNK_SHIFT], __ATOMIC_ACQUIRE);
  sicm_arena_rec *rec = owner ? __atomic_load_n(&sicm_arena_slots[owner - 1], __ATOMIC_ACQUIRE)
                              : NULL;
  /* A shared segment need not fill its last chunk: the rest is not its. */
  if (rec != NULL && rec->shm != NULL && a - (uintptr_t)rec->shm >= rec->held)
    return NULL;
  return rec;
}

static void window_set_owner(const sicm_window *w, unsigned value) {
  uintptr_t first = (uintptr_t)w->base >> SICM_CHUNK_SHIFT;
  uintptr_t end = ((uintptr_t)w->base + w->size + SICM_CHUNK_SIZE - 1) >> SICM_CHUNK_SHIFT;
  for (uintptr_t c = first; c < end; c++)
    __atomic_store_n(&chunk_owner[c], (uint16_t)value, __ATOMIC_RELEASE);
}

static size_t round_up(size_t v, size_t to) { return (v + to - 1) & ~(to - 1); }

/* Reserves a new window of at least min_size bytes; 0 or -1. */
static int window_reserve(sicm_arena_rec *rec, size_t min_size) {
  if (rec->nwindows == SICM_WINDOWS_MAX || min_size > ((size_t)1 << 46))
    return -1;
  size_t size = round_up(min_size > SICM_CHUNK_SIZE ? min_size : SICM_CHUNK_SIZE, SICM_CHUNK_SIZE);
  size_t span = size + SICM_CHUNK_SIZE;
  char *raw = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED)
    return -1;
  char *base = (char *)round_up((uintptr_t)raw, SICM_CHUNK_SIZE);
  if (base > raw)
    munmap(raw, (size_t)(base - raw));
  if (raw + span > base + size)
    munmap(base + size, (size_t)(raw + span - (base + size)));
  if (((uintptr_t)base + size - 1) >> SICM_ADDRESS_BITS ||
      mbind(base, size, rec->binding.policy, rec->binding.nodemask,
            sizeof rec->binding.nodemask * 8, 0) != 0) {
    munmap(base, size);
    return -1;
  }
  if ((rec->flags & SICM_ARENA_HUGEPAGES) || __atomic_load_n(&rec->thp_advised, __ATOMIC_RELAXED))
    madvise(base, size, MADV_HUGEPAGE);
  else if (rec->flags & SICM_ARENA_NOHUGEPAGES)
    madvise(base, size, MADV_NOHUGEPAGE);
  sicm_window *w = &rec->windows[rec->nwindows];
  *w = (sicm_window){base, size, 0};
  window_set_owner(w, rec->slot + 1);
  /* Readers (residency, migration) see nwindows only after the window is set. */
  __atomic_store_n(&rec->nwindows, rec->nwindows + 1, __ATOMIC_RELEASE);
  return 0;
}

void sicm_window_adopt(sicm_arena_rec *rec, void *base, size_t size) {
  sicm_window *w = &rec->windows[0];
  *w = (sicm_window){base, size, size};
  window_set_owner(w, rec->slot + 1);
  __atomic_store_n(&rec->nwindows, 1, __ATOMIC_RELEASE);
}

static void *window_bump(sicm_window *w, size_t size, size_t alignment) {
  uintptr_t start = round_up((uintptr_t)w->base + w->used, alignment);
  if (start + size > (uintptr_t)w->base + w->size)
    return NULL;
  w->used = start + size - (uintptr_t)w->base;
  return (void *)start;
}

void *sicm_window_take(sicm_arena_rec *rec, void *new_addr, size_t size, size_t alignment) {
  if (alignment < 4096)
    alignment = 4096;
  if (new_addr != NULL) {
    /* jemalloc asks for the bytes right after an extent to grow it in place. */
    for (unsigned i = 0; i < rec->nwindows; i++) {
      sicm_window *w = &rec->windows[i];
      if (w->base + w->used == (char *)new_addr && w->size - w->used >= size) {
        w->used += size;
        return new_addr;
      }
    }
    return NULL;
  }
  void *p = rec->nwindows ? window_bump(&rec->windows[rec->nwindows - 1], size, alignment) : NULL;
  if (p == NULL && window_reserve(rec, size + alignment) == 0)
    p = window_bump(&rec->windows[rec->nwindows - 1], size, alignment);
  return p;
}

/* A large arena moves faster (and TLB-misses less) in 2 MiB pages: once it
 * holds SICM_THP_THRESHOLD bytes, its windows ask for transparent huge
 * pages, unless created with SICM_ARENA_NOHUGEPAGES. */
void sicm_window_advise_huge(sicm_arena_rec *rec) {
  int expected = 0;
  if ((rec->flags & SICM_ARENA_NOHUGEPAGES) ||
      !__atomic_compare_exchange_n(&rec->thp_advised, &expected, 1, false, __ATOMIC_RELAXED,
                                   __ATOMIC_RELAXED))
    return;
  pthread_mutex_lock(&rec->window_lock);
  for (unsigned i = 0; i < rec->nwindows; i++)
    madvise(rec->windows[i].base, rec->windows[i].size, MADV_HUGEPAGE);
  pthread_mutex_unlock(&rec->window_lock);
}

void sicm_window_release_all(sicm_arena_rec *rec) {
  for (unsigned i = 0; i < rec->nwindows; i++) {
    window_set_owner(&rec->windows[i], 0);
    munmap(rec->windows[i].base, rec->windows[i].size);
  }
  __atomic_store_n(&rec->nwindows, 0, __ATOMIC_RELEASE);
}
