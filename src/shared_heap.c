/* shared_heap.c: the heap of a shared arena — allocation and free in O(1)
 * under one process-shared robust mutex, and the journal that makes every
 * update of the block headers undoable.
 *
 * Algorithm: two-level segregated fit (TLSF, Masmano et al., 2004) with
 * boundary tags and immediate coalescing.  Free blocks sit in one list per
 * size class: below 512 B one class per 16 B; above, 32 classes per power
 * of two.  A request is rounded up to the next class boundary, so the first
 * block of any non-empty class at or above it fits; finding that class is
 * two bit scans over the bitmaps, and a free merges with at most its two
 * neighbours.  Both are O(1), whatever the number of blocks.
 *
 * Worst-case fragmentation.  Internal: a 16 B header per block, plus the
 * rounding to 16 B; a block found above 512 B may exceed the request by up
 * to 1/32 of it plus 31 B, which is split off only when at least 32 B.
 * External: good fit never splits a block when an exact class has one; but
 * like any allocator that does not move blocks it is bounded only by
 * Robson's worst case (about M * log2(n) / 2 bytes to serve M live bytes in
 * blocks of 1..n units).
 *
 * Crash safety.  Block headers are the truth.  Every change to them goes
 * through update_apply(): the words and their old values are written to
 * the journal, the count is published, the words change, the count is
 * cleared.  Lists, bitmaps and counters change outside the journal; after a
 * crash sc_shm_repair() undoes the journal and rebuilds them from the
 * headers, so any state a dead process can leave is repairable. */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "shared.h"

uint32_t sc_shm_layout_signature(void) {
  const uint64_t parts[] = {
      sizeof(sc_shm_header),      sizeof(sc_shm_block),         sizeof(pthread_mutex_t),
      SC_SHM_ALIGN,               SC_SHM_SL_LOG,                SC_SHM_FL_COUNT,
      SC_SHM_JOURNAL_MAX,         SICM_ARENA_DEVICES_MAX,    offsetof(sc_shm_header, lock),
      offsetof(sc_shm_header, journal), offsetof(sc_shm_header, free_head),
      offsetof(sc_shm_header, migrate_lock)};
  uint32_t hash = 2166136261u; /* FNV-1a */
  const unsigned char *bytes = (const unsigned char *)parts;
  for (size_t i = 0; i < sizeof parts; i++)
    hash = (hash ^ bytes[i]) * 16777619u;
  return hash;
}

void sc_shm_class_of(uint64_t size, unsigned *fl, unsigned *sl) {
  if (size < SC_SHM_SMALL_LIMIT) {
    *fl = 0;
    *sl = (unsigned)(size / SC_SHM_ALIGN);
    return;
  }
  unsigned msb = 63u - (unsigned)__builtin_clzll(size);
  *fl = msb - (SC_SHM_SL_LOG + 4) + 1;
  *sl = (unsigned)(size >> (msb - SC_SHM_SL_LOG)) ^ SC_SHM_SL_COUNT;
}

static sc_shm_block *block_after(sc_shm_block *b) {
  return (sc_shm_block *)((char *)b + sc_shm_block_size(b));
}

/* ---- free lists (derived state) ---- */

static void list_remove(sc_shm_header *h, sc_shm_block *b) {
  unsigned fl, sl;
  sc_shm_class_of(sc_shm_block_size(b), &fl, &sl);
  if (b->prev_free)
    sc_shm_block_at(h, b->prev_free)->next_free = b->next_free;
  else
    h->free_head[fl][sl] = b->next_free;
  if (b->next_free)
    sc_shm_block_at(h, b->next_free)->prev_free = b->prev_free;
  if (h->free_head[fl][sl] == 0) {
    h->sl_bitmap[fl] &= ~(1u << sl);
    if (h->sl_bitmap[fl] == 0)
      h->fl_bitmap &= ~(1ull << fl);
  }
  h->blocks_free--;
  h->bytes_free -= sc_shm_block_size(b);
}

void sc_shm_list_insert(sc_shm_header *h, sc_shm_block *b) {
  unsigned fl, sl;
  sc_shm_class_of(sc_shm_block_size(b), &fl, &sl);
  uint64_t offset = sc_shm_offset_of(h, b), head = h->free_head[fl][sl];
  b->prev_free = 0;
  b->next_free = head;
  if (head)
    sc_shm_block_at(h, head)->prev_free = offset;
  h->free_head[fl][sl] = offset;
  h->sl_bitmap[fl] |= 1u << sl;
  h->fl_bitmap |= 1ull << fl;
  h->blocks_free++;
  h->bytes_free += sc_shm_block_size(b);
}

/* The first free block of the smallest non-empty class whose every block
 * holds `need` bytes, or NULL. */
static sc_shm_block *find_fit(sc_shm_header *h, uint64_t need) {
  uint64_t search = need;
  if (need >= SC_SHM_SMALL_LIMIT)
    search += (1ull << (63u - (unsigned)__builtin_clzll(need) - SC_SHM_SL_LOG)) - 1;
  unsigned fl, sl;
  sc_shm_class_of(search, &fl, &sl);
  if (fl >= SC_SHM_FL_COUNT)
    return NULL;
  uint32_t sl_map = h->sl_bitmap[fl] & (~0u << sl);
  if (sl_map == 0) {
    uint64_t fl_map = h->fl_bitmap & (~0ull << (fl + 1));
    if (fl_map == 0)
      return NULL;
    fl = (unsigned)__builtin_ctzll(fl_map);
    sl_map = h->sl_bitmap[fl];
  }
  return sc_shm_block_at(h, h->free_head[fl][(unsigned)__builtin_ctz(sl_map)]);
}

/* ---- journaled updates of block headers ---- */

typedef struct sc_shm_update {
  unsigned n;
  uint64_t *word[SC_SHM_JOURNAL_MAX];
  uint64_t value[SC_SHM_JOURNAL_MAX];
} sc_shm_update;

static void update_set(sc_shm_update *u, uint64_t *word, uint64_t value) {
  for (unsigned i = 0; i < u->n; i++)
    if (u->word[i] == word) {
      u->value[i] = value;
      return;
    }
  u->word[u->n] = word;
  u->value[u->n++] = value;
}

/* Fault injection for the crash tests (see shm.h). */
static long crash_countdown = -1;
static unsigned crash_step;

void sc_shm_crash_at(long update, unsigned step) {
  crash_countdown = update;
  crash_step = step;
}

static void update_apply(sc_shm_header *h, const sc_shm_update *u) {
  int crash = crash_countdown >= 0 && crash_countdown-- == 0;
  if (crash && crash_step == 0)
    raise(SIGKILL);
  for (unsigned i = 0; i < u->n; i++)
    h->journal[i] = (sc_shm_journal_entry){sc_shm_offset_of(h, u->word[i]), *u->word[i]};
  if (crash && crash_step == 1)
    raise(SIGKILL);
  __atomic_store_n(&h->journal_count, u->n, __ATOMIC_RELEASE);
  /* No header word may change before the count is visible. */
  __atomic_thread_fence(__ATOMIC_RELEASE);
  for (unsigned i = 0; i < u->n; i++) {
    if (crash && crash_step == 2 + i)
      raise(SIGKILL);
    __atomic_store_n(u->word[i], u->value[i], __ATOMIC_RELAXED);
  }
  if (crash && crash_step >= 2 + u->n)
    raise(SIGKILL);
  __atomic_store_n(&h->journal_count, 0, __ATOMIC_RELEASE);
}

/* ---- the lock ---- */

#define SC_SHM_LOCK_SPINS 100

/* Waits in slices: a process killed between releasing the lock and waking
 * a waiter (or while being woken) can leave the lock free and a waiter
 * asleep; the kernel's robust-list cleanup is meant to wake it, but the
 * kill -9 tests saw waiters sleep on a free lock on this kernel.  A lost
 * wake-up then costs one slice instead of forever. */
static int lock_slow(pthread_mutex_t *lock) {
  for (;;) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 20 * 1000 * 1000;
    if (until.tv_nsec >= 1000000000) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000;
    }
    int rc = pthread_mutex_timedlock(lock, &until);
    if (rc != ETIMEDOUT)
      return rc;
  }
}

/* The robust-mutex part of sc_shm_lock: 0, EOWNERDEAD, or an errno. */
static int lock_take(sc_shm_header *h) {
  int rc = pthread_mutex_trylock(&h->lock);
  /* Critical sections are tens of nanoseconds: spinning a little before
   * sleeping saves the holder a futex wake and us a context switch. */
  for (unsigned spin = 0; rc == EBUSY && spin < SC_SHM_LOCK_SPINS; spin++) {
    for (unsigned i = 0; i < 8; i++)
      sc_cpu_relax();
    rc = pthread_mutex_trylock(&h->lock);
  }
  return rc == EBUSY ? lock_slow(&h->lock) : rc;
}

int sc_shm_lock(sc_shm_header *h) {
  int rc = lock_take(h);
  if (rc == 0)
    return 0;
  if (rc != EOWNERDEAD)
    return sc_fail(rc, "the shared arena's lock: %s", strerror(rc));
  if (sc_shm_repair(h) != 0) {
    /* The blocks themselves are corrupt (not a crash: an overrun by the
     * program); unlocking without marking it consistent says so to all. */
    pthread_mutex_unlock(&h->lock);
    return sc_fail(EUCLEAN, "the shared arena's heap is damaged beyond repair (its lock "
                            "holder died and its blocks do not tile the heap)");
  }
  pthread_mutex_consistent(&h->lock);
  return 0;
}

void sc_shm_unlock(sc_shm_header *h) { pthread_mutex_unlock(&h->lock); }

int sc_shm_migrate_lock(sc_shm_header *h) {
  int rc = lock_slow(&h->migrate_lock);
  if (rc == EOWNERDEAD)
    rc = pthread_mutex_consistent(&h->migrate_lock);
  return rc ? sc_fail(rc, "the shared arena's migration lock: %s", strerror(rc)) : 0;
}

void sc_shm_migrate_unlock(sc_shm_header *h) { pthread_mutex_unlock(&h->migrate_lock); }

static int robust_mutex_init(pthread_mutex_t *mutex) {
  pthread_mutexattr_t attr;
  if (pthread_mutexattr_init(&attr) != 0)
    return ENOMEM;
  int rc = pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  if (rc == 0)
    rc = pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  if (rc == 0)
    rc = pthread_mutex_init(mutex, &attr);
  pthread_mutexattr_destroy(&attr);
  return rc;
}

int sc_shm_heap_format(sc_shm_header *h, size_t size) {
  int rc = robust_mutex_init(&h->lock);
  if (rc == 0)
    rc = robust_mutex_init(&h->migrate_lock);
  if (rc != 0)
    return sc_fail(rc, "cannot make the shared arena's locks: %s", strerror(rc));
  h->header_size = sc_round_up(sizeof *h, sc_page_size());
  h->size = size;
  h->heap_begin = h->header_size;
  h->heap_end = size - SC_SHM_BLOCK_HEADER;
  sc_shm_block *first = sc_shm_block_at(h, h->heap_begin);
  first->prev_size = 0;
  first->size_flags = (h->heap_end - h->heap_begin) | SC_SHM_FREE;
  sc_shm_block *sentinel = sc_shm_block_at(h, h->heap_end);
  sentinel->prev_size = sc_shm_block_size(first);
  sentinel->size_flags = 0;
  sc_shm_list_insert(h, first);
  return 0;
}

/* ---- allocation ---- */

/* Adds to u what makes b a used block of `need` of the `room` bytes up to
 * `after`; a tail of at least SC_SHM_BLOCK_MIN becomes a free block (*rest),
 * a smaller one stays in b.  Returns b's new size. */
static uint64_t update_use(sc_shm_update *u, sc_shm_block *b, uint64_t need, uint64_t room,
                           sc_shm_block *after, sc_shm_block **rest) {
  uint64_t tail = room - need;
  if (tail < SC_SHM_BLOCK_MIN) {
    need = room;
    tail = 0;
  }
  *rest = tail ? (sc_shm_block *)((char *)b + need) : NULL;
  update_set(u, &b->size_flags, need);
  if (tail) {
    update_set(u, &(*rest)->prev_size, need);
    update_set(u, &(*rest)->size_flags, tail | SC_SHM_FREE);
  }
  update_set(u, &after->prev_size, tail ? tail : need);
  return need;
}

/* Takes `need` bytes at `lead` bytes into free block b, already out of its
 * list; the lead (if any) and a large enough tail stay free. */
static sc_shm_block *carve(sc_shm_header *h, sc_shm_block *b, uint64_t lead, uint64_t need) {
  uint64_t size = sc_shm_block_size(b);
  sc_shm_block *taken = (sc_shm_block *)((char *)b + lead), *rest;
  sc_shm_update u = {0};
  if (lead) {
    update_set(&u, &b->size_flags, lead | SC_SHM_FREE);
    update_set(&u, &taken->prev_size, lead);
  }
  need = update_use(&u, taken, need, size - lead, (sc_shm_block *)((char *)b + size), &rest);
  update_apply(h, &u);
  if (lead)
    sc_shm_list_insert(h, b);
  if (rest)
    sc_shm_list_insert(h, rest);
  h->blocks_used++;
  h->bytes_used += need;
  return taken;
}

/* The block size serving `size` bytes, or 0 if none can. */
static uint64_t block_need(size_t size) {
  if (size > SC_SHM_SIZE_MAX)
    return 0;
  uint64_t need = ((uint64_t)size + SC_SHM_ALIGN - 1) / SC_SHM_ALIGN * SC_SHM_ALIGN + SC_SHM_BLOCK_HEADER;
  return need < SC_SHM_BLOCK_MIN ? SC_SHM_BLOCK_MIN : need;
}

static int size_check(size_t size) {
  if (size == 0)
    return sc_fail(EINVAL, "size 0");
  if (block_need(size) == 0)
    return sc_fail(ENOMEM, "size %zu is too large", size);
  return 0;
}

void *sc_shm_heap_alloc(sc_arena *a, uint64_t generation, size_t size, size_t align, int zero) {
  sc_shm_header *h = sc_shared_of(a)->header;
  if (size_check(size) != 0 || sc_shm_lock(h) != 0)
    return NULL;
  uint64_t need = block_need(size), extra = align > SC_SHM_ALIGN ? align + SC_SHM_BLOCK_MIN : 0;
  sc_shm_block *b = find_fit(h, need + extra);
  void *p = NULL;
  if (b != NULL) {
    uint64_t lead = 0;
    if (extra) {
      uintptr_t payload = ((uintptr_t)b + SC_SHM_BLOCK_HEADER + align - 1) & ~(uintptr_t)(align - 1);
      lead = payload - SC_SHM_BLOCK_HEADER - (uintptr_t)b;
      if (lead != 0 && lead < SC_SHM_BLOCK_MIN) /* too small to stay a free block */
        lead += align;
    }
    list_remove(h, b);
    p = (char *)carve(h, b, lead, need) + SC_SHM_BLOCK_HEADER;
  }
  uint64_t bytes_free = h->bytes_free;
  sc_shm_unlock(h);
  if (p == NULL)
    return sc_fail_null(ENOMEM, "shared arena full: no free block for %zu bytes (%llu bytes free)",
                          size, (unsigned long long)bytes_free);
  if (zero)
    memset(p, 0, size);
  return p;
}

/* The live block whose payload starts at ptr, or NULL.  Cross-checks both
 * boundary tags, so stale and foreign pointers are refused in O(1). */
static sc_shm_block *block_of(sc_shm_header *h, const void *ptr) {
  uintptr_t p = (uintptr_t)ptr, base = (uintptr_t)h;
  if ((p & (SC_SHM_ALIGN - 1)) || p < base + h->heap_begin + SC_SHM_BLOCK_HEADER ||
      p >= base + h->heap_end)
    return NULL;
  uint64_t offset = p - SC_SHM_BLOCK_HEADER - base;
  sc_shm_block *b = sc_shm_block_at(h, offset);
  uint64_t size = sc_shm_block_size(b);
  if (sc_shm_block_is_free(b) || size < SC_SHM_BLOCK_MIN || size > h->heap_end - offset ||
      block_after(b)->prev_size != size)
    return NULL;
  if (offset == h->heap_begin)
    return b->prev_size == 0 ? b : NULL;
  if (b->prev_size == 0 || b->prev_size > offset - h->heap_begin ||
      sc_shm_block_size(sc_shm_block_at(h, offset - b->prev_size)) != b->prev_size)
    return NULL;
  return b;
}

/* Frees b, merging it with free neighbours. */
static void release(sc_shm_header *h, sc_shm_block *b) {
  uint64_t size = sc_shm_block_size(b), total = size;
  sc_shm_block *start = b, *next = block_after(b);
  if (b->prev_size != 0) {
    sc_shm_block *prev = (sc_shm_block *)((char *)b - b->prev_size);
    if (sc_shm_block_is_free(prev)) {
      list_remove(h, prev);
      start = prev;
      total += sc_shm_block_size(prev);
    }
  }
  if (sc_shm_block_is_free(next)) { /* the sentinel never is */
    list_remove(h, next);
    total += sc_shm_block_size(next);
    next = block_after(next);
  }
  sc_shm_update u = {0};
  update_set(&u, &start->size_flags, total | SC_SHM_FREE);
  update_set(&u, &next->prev_size, total);
  update_apply(h, &u);
  h->blocks_used--;
  h->bytes_used -= size;
  sc_shm_list_insert(h, start);
}

void sc_shm_heap_free(sc_arena *a, uint64_t generation, void *ptr) {
  sc_shm_header *h = sc_shared_of(a)->header;
  if (sc_shm_lock(h) != 0)
    return;
  sc_shm_block *b = block_of(h, ptr);
  if (b != NULL)
    release(h, b);
  sc_shm_unlock(h);
  if (b == NULL)
    sc_fail(EINVAL, "%p is not a live block of the shared arena (freed twice?)", ptr);
}

/* Resizes b in place to `need` bytes when it or its free right neighbour
 * has room; returns 0, or -1 when it must move. */
static int resize_in_place(sc_shm_header *h, sc_shm_block *b, uint64_t need) {
  uint64_t size = sc_shm_block_size(b), total = size;
  sc_shm_block *next = block_after(b), *after = next;
  if (sc_shm_block_is_free(next)) {
    total += sc_shm_block_size(next);
    after = block_after(next);
  }
  if (total < need)
    return -1;
  if (next == after && total - need < SC_SHM_BLOCK_MIN)
    return 0; /* shrinking by less than a block: nothing to split off */
  if (next != after)
    list_remove(h, next);
  sc_shm_block *rest;
  sc_shm_update u = {0};
  need = update_use(&u, b, need, total, after, &rest);
  update_apply(h, &u);
  if (rest)
    sc_shm_list_insert(h, rest);
  h->bytes_used = h->bytes_used - size + need;
  return 0;
}

void *sc_shm_heap_realloc(sc_arena *a, uint64_t generation, void *ptr, size_t size) {
  sc_shm_header *h = sc_shared_of(a)->header;
  if (size_check(size) != 0 || sc_shm_lock(h) != 0)
    return NULL;
  sc_shm_block *b = block_of(h, ptr);
  uint64_t old_payload = b ? sc_shm_block_size(b) - SC_SHM_BLOCK_HEADER : 0;
  int done = b != NULL && resize_in_place(h, b, block_need(size)) == 0;
  sc_shm_unlock(h);
  if (b == NULL)
    return sc_fail_null(EINVAL, "%p is not a live block of the shared arena", ptr);
  if (done)
    return ptr;
  void *moved = sc_shm_heap_alloc(a, generation, size, SC_SHM_ALIGN, 0);
  if (moved == NULL)
    return NULL; /* ptr stays valid and unchanged */
  memcpy(moved, ptr, old_payload < size ? old_payload : size);
  sc_shm_heap_free(a, generation, ptr);
  return moved;
}

size_t sc_shm_heap_usable_for(sc_arena *a, size_t size, size_t align) {
  uint64_t need = block_need(size);
  return need ? need - SC_SHM_BLOCK_HEADER : 0;
}

size_t sc_shm_heap_usable_size(sc_arena *a, const void *ptr) {
  sc_shm_header *h = sc_shared_of(a)->header;
  if (sc_shm_lock(h) != 0)
    return 0;
  sc_shm_block *b = block_of(h, ptr);
  size_t usable = b ? sc_shm_block_size(b) - SC_SHM_BLOCK_HEADER : 0;
  sc_shm_unlock(h);
  if (b == NULL)
    sc_fail(EINVAL, "%p is not a live block of the shared arena", ptr);
  return usable;
}
