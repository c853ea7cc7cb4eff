/* SPDX-License-Identifier: BSD-3-Clause */
/* shared_cache.c: the threads' caches in front of a shared arena's heap.
 *
 * A thread keeps the small blocks it frees into a shared arena (below
 * CACHE_BLOCK_MAX bytes, at most the arena's cache_bytes_max in all) for
 * its next allocations of their size class: a hit takes no lock and writes
 * no journal.  To the heap such a block stays used.  Its header says
 * SC_SHM_CACHED and its next_free word (unused by a block that is not free)
 * names the process, so that
 *   - freeing a cached block is refused (EINVAL) as a double free is;
 *   - the blocks of a process that died at any point go back to the heap at
 *     the next reclaim (sc_shm_cache_reclaim): the repair after a dead lock
 *     holder, sicm_arena_check, an attach, and an allocation that finds the
 *     heap full.  The header's cachers list every process that caches; a
 *     cached block naming one that is gone, or none listed, is freed.
 * A thread's blocks go back to the heap, for every process, when its bin or
 * its byte budget overflows, when it exits, when one of its allocations
 * finds the heap full, when it calls sicm_arena_check, and when the process
 * detaches.
 *
 * Only the thread that owns a cache touches it, except at thread exit and
 * detach, which take the record's kind_lock; a cache is registered in its
 * arena's list (under kind_lock) exactly while its generation is not 0. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shared.h"

/* Blocks below 8 KiB (first levels 0 to 4) are cached. */
#define CACHE_BLOCK_MAX ((uint64_t)1 << 13)
#define CACHE_BINS (5 * SC_SHM_SL_COUNT)
#define CACHE_SLOTS 16u
/* What one thread may keep of an arena: a share of it, and a ceiling. */
#define CACHE_SHARE 1024u
#define CACHE_BYTES_CEILING ((uint64_t)256 << 10)

typedef struct sc_shm_tcache {
  uint64_t generation;          /* of the arena it caches for; 0: not registered */
  sc_arena *arena;
  struct sc_shm_tcache *next, *prev; /* the arena's caches */
  uint64_t owner;               /* this process, as its blocks name it */
  uint64_t bytes, bytes_max;
  /* The block it handed out last, and its header then: freed unchanged,
   * its boundary tags need no second check.  The check reads the
   * neighbours' headers, which other processes write: each such read
   * costs a transfer of a cache line between CPUs. */
  sc_shm_block *last;
  uint64_t last_size;
  uint8_t count[CACHE_BINS];
  sc_shm_block *slot[CACHE_BINS][CACHE_SLOTS];
} sc_shm_tcache;

/* This thread's caches, by arena slot. */
static SC_TLS struct {
  sc_shm_tcache **caches;
  unsigned cap;
} table;

static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;

static inline unsigned bin_of(uint64_t block_size) {
  unsigned fl, sl;
  sc_shm_class_of(block_size, &fl, &sl);
  return fl * SC_SHM_SL_COUNT + sl;
}

static inline sc_shm_tcache *cache_of(const sc_arena *a, uint64_t generation) {
  if (a->slot < table.cap) {
    sc_shm_tcache *c = table.caches[a->slot];
    if (c != NULL && c->generation == generation)
      return c;
  }
  return NULL;
}

/* Whether b is still one of c's cached blocks: a header that says
 * otherwise was damaged, and the block is not c's to give. */
static inline int cached_by(const sc_shm_tcache *c, const sc_shm_block *b) {
  return (__atomic_load_n(&b->size_flags, __ATOMIC_ACQUIRE) & 15) == SC_SHM_CACHED &&
         sc_shm_cached_owner(b) == c->owner;
}

/* ---- giving blocks back (each under one lock) ---- */

/* Frees c's blocks slot[bin][0 .. n); the caller holds the lock.  A block
 * whose header no longer says it is c's is left alone (the checker reports
 * the damage).  0, or -1 when a neighbour or a list is damaged. */
static int blocks_release(sc_shared_arena *s, sc_shm_tcache *c, unsigned bin, unsigned n) {
  int rc = 0;
  for (unsigned i = 0; i < n; i++) {
    sc_shm_block *b = c->slot[bin][i];
    if (!cached_by(c, b))
      continue;
    c->bytes -= sc_shm_block_size(b);
    if (rc == 0 && sc_shm_release(s, b) != 0)
      rc = -1;
  }
  return rc;
}

/* Gives back every block of c; 0 or -1.  The cache is empty after, even on
 * failure: what could not be freed stays cached in the segment, and goes
 * back when this process is gone. */
static int cache_flush(sc_shm_tcache *c) {
  sc_shared_arena *s = sc_shared_of(c->arena);
  if (c->bytes == 0)
    return 0;
  if (sc_shm_lock(s) != 0)
    return -1;
  int rc = 0;
  for (unsigned bin = 0; bin < CACHE_BINS; bin++) {
    if (c->count[bin] != 0 && blocks_release(s, c, bin, c->count[bin]) != 0)
      rc = -1;
    c->count[bin] = 0;
  }
  c->bytes = 0;
  int err = errno;
  sc_shm_unlock(s);
  errno = err;
  return rc;
}

/* Makes room for a block of `size` in bin: the older half of a full bin
 * goes back, or everything when the byte budget would overflow.  0, or -1
 * when the block cannot be cached (the caller frees it to the heap). */
static int cache_make_room(sc_shm_tcache *c, unsigned bin, uint64_t size) {
  if (size > c->bytes_max)
    return -1;
  if (c->bytes + size > c->bytes_max)
    return cache_flush(c);
  sc_shared_arena *s = sc_shared_of(c->arena);
  unsigned half = CACHE_SLOTS / 2;
  if (sc_shm_lock(s) != 0)
    return -1;
  int rc = blocks_release(s, c, bin, half);
  int err = errno;
  sc_shm_unlock(s);
  memmove(&c->slot[bin][0], &c->slot[bin][half], (CACHE_SLOTS - half) * sizeof c->slot[bin][0]);
  c->count[bin] = CACHE_SLOTS - half;
  errno = err;
  return rc;
}

/* ---- registration ---- */

static int cacher_find(const sc_shm_header *h, uint64_t self) {
  for (unsigned i = 0; i < SC_SHM_CACHERS; i++)
    if (h->cachers[i].owner == self || h->cachers[i].owner == 0)
      return (int)i;
  return -1;
}

/* Enters this process in the segment's cachers (kind_lock held); 0, or -1
 * when every entry belongs to a live process. */
static int cacher_join(sc_arena *a) {
  sc_shared_arena *s = sc_shared_of(a);
  if (s->cacher != 0)
    return s->cacher > 0 ? 0 : -1;
  int err = errno; /* a cache is an optimization: its failure is not the caller's */
  if (sc_shm_lock(s) != 0) {
    errno = err;
    return -1;
  }
  sc_shm_header *h = s->header;
  uint64_t self = sc_shm_self_id();
  int entry = cacher_find(h, self);
  if (entry < 0 && sc_shm_cache_reclaim(s) >= 0)
    entry = cacher_find(h, self);
  if (entry >= 0) {
    h->cachers[entry].ns = sc_shm_self_ns();
    __atomic_store_n(&h->cachers[entry].owner, self, __ATOMIC_RELEASE);
  }
  sc_shm_unlock(s);
  errno = err;
  s->cacher = entry >= 0 ? entry + 1 : -1;
  if (s->cache_bytes_max == 0) {
    uint64_t share = s->size / CACHE_SHARE;
    s->cache_bytes_max = share < CACHE_BYTES_CEILING ? share : CACHE_BYTES_CEILING;
  }
  return entry >= 0 ? 0 : -1;
}

static void thread_caches_exit(void *unused);
static void exit_key_create(void) { pthread_key_create(&exit_key, thread_caches_exit); }

/* Grows this thread's table to hold slot; 0 or -1. */
static int table_reserve(unsigned slot) {
  if (slot < table.cap)
    return 0;
  pthread_once(&exit_key_once, exit_key_create);
  sc_shm_tcache **grown = sc_slot_table_grow(table.caches, &table.cap, slot, exit_key);
  if (grown != NULL)
    table.caches = grown;
  return grown != NULL ? 0 : -1;
}

/* This thread's cache for the arena, made and registered now, or NULL:
 * the arena counts its blocks in a pool (each until it is freed), this
 * process found no cachers entry, or memory ran out.  Not an error. */
static sc_shm_tcache *cache_create(sc_arena *a, uint64_t generation) {
  sc_shared_arena *s = sc_shared_of(a);
  if (__atomic_load_n(&s->cacher, __ATOMIC_RELAXED) < 0 ||
      __atomic_load_n(&a->pool, __ATOMIC_ACQUIRE) != NULL)
    return NULL;
  int err = errno;
  if (table_reserve(a->slot) != 0) {
    errno = err;
    return NULL;
  }
  sc_shm_tcache *c = table.caches[a->slot];
  if (c == NULL && (c = table.caches[a->slot] = calloc(1, sizeof *c)) == NULL) {
    errno = err;
    return NULL;
  }
  if (c->generation != 0) /* registered with another arena of this slot: impossible */
    return NULL;
  pthread_mutex_lock(&a->kind_lock);
  int ok = __atomic_load_n(&a->live_generation, __ATOMIC_ACQUIRE) == generation &&
           cacher_join(a) == 0;
  if (ok) {
    memset(c->count, 0, sizeof c->count);
    c->arena = a;
    c->owner = sc_shm_self_id();
    c->bytes = 0;
    c->bytes_max = s->cache_bytes_max;
    c->prev = NULL;
    c->next = s->caches;
    if (s->caches != NULL)
      s->caches->prev = c;
    s->caches = c;
    c->generation = generation;
  }
  pthread_mutex_unlock(&a->kind_lock);
  return ok ? c : NULL;
}

/* Flushes c and takes it out of its arena's list; kind_lock held.  0, or
 * -1 when some of its blocks stayed cached in the segment. */
static int cache_retire(sc_shm_tcache *c) {
  sc_shared_arena *s = sc_shared_of(c->arena);
  int rc = cache_flush(c);
  if (c->prev != NULL)
    c->prev->next = c->next;
  else
    s->caches = c->next;
  if (c->next != NULL)
    c->next->prev = c->prev;
  c->generation = 0;
  return rc;
}

static void thread_caches_exit(void *unused) {
  (void)unused;
  for (unsigned slot = 0; slot < table.cap; slot++) {
    sc_shm_tcache *c = table.caches[slot];
    if (c == NULL)
      continue;
    sc_arena *a = __atomic_load_n(&sc_arena_slots[slot], __ATOMIC_ACQUIRE);
    if (a != NULL) {
      pthread_mutex_lock(&a->kind_lock);
      /* Not 0: registered, so detach has not run and the segment is mapped. */
      if (c->generation != 0)
        (void)cache_retire(c);
      pthread_mutex_unlock(&a->kind_lock);
    }
    free(c);
  }
  free(table.caches);
  table.caches = NULL;
  table.cap = 0;
}

void sc_shm_cache_close(sc_arena *a) {
  sc_shared_arena *s = sc_shared_of(a);
  int err = errno, clean = 1;
  pthread_mutex_lock(&a->kind_lock);
  while (s->caches != NULL)
    clean &= cache_retire(s->caches) == 0;
  /* What a failed flush left cached goes back once this process is gone:
   * its entry stays until then. */
  if (clean && s->cacher > 0 && sc_shm_lock(s) == 0) {
    sc_shm_cacher *entry = &s->header->cachers[s->cacher - 1];
    if (entry->owner == sc_shm_self_id())
      __atomic_store_n(&entry->owner, 0, __ATOMIC_RELEASE);
    sc_shm_unlock(s);
  }
  s->cacher = 0;
  pthread_mutex_unlock(&a->kind_lock);
  errno = err;
}

void sc_shm_cache_fork_child(sc_arena *a) {
  sc_shared_arena *s = sc_shared_of(a);
  s->caches = NULL;
  s->cacher = 0;
  s->cache_bytes_max = 0;
  if (a->slot < table.cap && table.caches[a->slot] != NULL) /* the forking thread's */
    table.caches[a->slot]->generation = 0;
}

/* ---- reclaim ---- */

static int owner_listed(const uint64_t *live, unsigned nlive, uint64_t owner) {
  for (unsigned i = 0; i < nlive; i++)
    if (live[i] == owner)
      return 1;
  return 0;
}

long sc_shm_cache_reclaim(sc_shared_arena *s) {
  sc_shm_header *h = s->header;
  uint64_t live[SC_SHM_CACHERS], gone = 0; /* gone: a bit per entry */
  unsigned nlive = 0;
  for (unsigned i = 0; i < SC_SHM_CACHERS; i++) {
    uint64_t owner = h->cachers[i].owner;
    if (owner == 0)
      continue;
    if (sc_shm_owner_gone(owner, h->cachers[i].ns))
      gone |= 1ull << i;
    else
      live[nlive++] = owner;
  }
  if (gone == 0)
    return 0;
  long given = 0;
  uint64_t offset = s->heap_begin, below = 0;
  while (offset < s->heap_end) {
    sc_shm_block *b = sc_shm_block_at(h, offset);
    if (!sc_shm_size_ok(s, b))
      return sc_shm_damaged("block size", b->size_flags);
    uint64_t flags = __atomic_load_n(&b->size_flags, __ATOMIC_ACQUIRE) & 15;
    if (flags == SC_SHM_CACHED && !owner_listed(live, nlive, sc_shm_cached_owner(b))) {
      given += (long)sc_shm_block_size(b);
      if (sc_shm_release(s, b) != 0)
        return -1;
      /* b is now part of a free block: the one below it, or its own. */
      if (offset != s->heap_begin && sc_shm_block_is_free(sc_shm_block_at(h, below)))
        offset = below;
    }
    below = offset;
    offset += sc_shm_block_size(sc_shm_block_at(h, offset));
  }
  for (unsigned i = 0; i < SC_SHM_CACHERS; i++)
    if (gone >> i & 1)
      __atomic_store_n(&h->cachers[i].owner, 0, __ATOMIC_RELEASE);
  return given;
}

/* ---- the operations ---- */

int sc_shm_cache_flush_mine(sc_arena *a) {
  sc_shm_tcache *c = cache_of(a, __atomic_load_n(&a->live_generation, __ATOMIC_ACQUIRE));
  return c != NULL ? cache_flush(c) : 0;
}

/* After an allocation found the heap full: this thread's blocks and those
 * of processes that are gone go back.  Whether any did. */
static int give_back(sc_arena *a, uint64_t generation) {
  sc_shared_arena *s = sc_shared_of(a);
  int err = errno; /* the allocation's ENOMEM, unless a retry says otherwise */
  sc_shm_tcache *c = cache_of(a, generation);
  int given = c != NULL && c->bytes != 0;
  if (c != NULL)
    (void)cache_flush(c);
  if (sc_shm_lock(s) == 0) {
    given |= sc_shm_cache_reclaim(s) > 0;
    sc_shm_unlock(s);
  }
  errno = err;
  return given;
}

void *sc_shm_cache_alloc(sc_arena *a, uint64_t generation, size_t size, size_t align, int zero) {
  sc_shm_tcache *c = cache_of(a, generation);
  uint64_t need = sc_shm_block_need(size);
  if (c != NULL && size != 0 && need - 1 < CACHE_BLOCK_MAX - 1 && align <= SC_SHM_ALIGN) {
    unsigned bin = bin_of(need), n = c->count[bin];
    if (n != 0) {
      sc_shm_block *b = c->slot[bin][n - 1];
      uint64_t block_size = sc_shm_block_size(b);
      if (block_size >= need) {
        c->count[bin] = (uint8_t)(n - 1);
        if (__builtin_expect(cached_by(c, b), 1)) {
          c->bytes -= block_size;
          c->last = b;
          c->last_size = block_size;
          __atomic_store_n(&b->size_flags, block_size, __ATOMIC_RELAXED);
          void *p = (char *)b + SC_SHM_BLOCK_HEADER;
          return zero ? memset(p, 0, size) : p;
        }
      }
    }
  }
  void *p = sc_shm_heap_alloc(a, generation, size, align, zero);
  if (p == NULL && errno == ENOMEM && need != 0 && give_back(a, generation))
    p = sc_shm_heap_alloc(a, generation, size, align, zero);
  return p;
}

void *sc_shm_cache_realloc(sc_arena *a, uint64_t generation, void *ptr, size_t size) {
  void *p = sc_shm_heap_realloc(a, generation, ptr, size);
  if (p == NULL && errno == ENOMEM && sc_shm_block_need(size) != 0 && give_back(a, generation))
    p = sc_shm_heap_realloc(a, generation, ptr, size);
  return p;
}

void sc_shm_cache_free(sc_arena *a, uint64_t generation, void *ptr) {
  sc_shm_tcache *c = cache_of(a, generation);
  if (c == NULL)
    c = cache_create(a, generation);
  sc_shm_block *b = NULL;
  if (c != NULL) {
    b = (sc_shm_block *)((char *)ptr - SC_SHM_BLOCK_HEADER);
    if (b != c->last || __atomic_load_n(&b->size_flags, __ATOMIC_RELAXED) != c->last_size)
      b = sc_shm_block_of(sc_shared_of(a), ptr);
    c->last = NULL;
  }
  if (b != NULL) {
    uint64_t size = sc_shm_block_size(b);
    unsigned bin = bin_of(size);
    if (size < CACHE_BLOCK_MAX &&
        ((c->count[bin] < CACHE_SLOTS && c->bytes + size <= c->bytes_max) ||
         cache_make_room(c, bin, size) == 0)) {
      __atomic_store_n(&b->next_free, c->owner, __ATOMIC_RELAXED);
      __atomic_store_n(&b->size_flags, size | SC_SHM_CACHED, __ATOMIC_RELEASE);
      c->slot[bin][c->count[bin]++] = b;
      c->bytes += size;
      return;
    }
  }
  sc_shm_heap_free(a, generation, ptr);
}
