/* SPDX-License-Identifier: BSD-3-Clause */
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

#include "shared.h"

uint32_t sc_shm_layout_signature(void) {
  const uint64_t parts[] = {
      sizeof(sc_shm_header),      sizeof(sc_shm_block),         sizeof(pthread_mutex_t),
      SC_SHM_ALIGN,               SC_SHM_SL_LOG,                SC_SHM_FL_COUNT,
      SC_SHM_JOURNAL_MAX,         SICM_ARENA_DEVICES_MAX,    offsetof(sc_shm_header, lock),
      offsetof(sc_shm_header, journal), offsetof(sc_shm_header, free_head),
      offsetof(sc_shm_header, migrate_lock), offsetof(sc_shm_header, rates),
      sizeof(sc_shm_rate),        SC_SHM_RATES,                 offsetof(sc_shm_header, cachers),
      SC_SHM_CACHERS,             SC_SHM_CACHED};
  uint32_t hash = 2166136261u; /* FNV-1a */
  const unsigned char *bytes = (const unsigned char *)parts;
  for (size_t i = 0; i < sizeof parts; i++)
    hash = (hash ^ bytes[i]) * 16777619u;
  return hash;
}

static sc_shm_block *block_after(sc_shm_block *b) {
  return (sc_shm_block *)((char *)b + sc_shm_block_size(b));
}

int sc_shm_damaged(const char *field, uint64_t value) {
  return sc_fail(EUCLEAN, "shared arena damaged: its %s (0x%llx) does not fit its heap", field,
                 (unsigned long long)value);
}

/* ---- free lists (derived state) ----
 * Links and heads are read from the segment: each is checked to be a block
 * offset whose block links back before anything is written through it. */

static int list_remove(sc_shared_arena *s, sc_shm_block *b) {
  sc_shm_header *h = s->header;
  unsigned fl, sl;
  sc_shm_class_of(sc_shm_block_size(b), &fl, &sl);
  uint64_t offset = sc_shm_offset_of(h, b), prev = b->prev_free, next = b->next_free;
  if (prev != 0 && (!sc_shm_offset_ok(s, prev) || sc_shm_block_at(h, prev)->next_free != offset))
    return sc_shm_damaged("free-list link prev_free", prev);
  if (prev == 0 && h->free_head[fl][sl] != offset)
    return sc_shm_damaged("free-list head", h->free_head[fl][sl]);
  if (next != 0 && (!sc_shm_offset_ok(s, next) || sc_shm_block_at(h, next)->prev_free != offset))
    return sc_shm_damaged("free-list link next_free", next);
  if (prev)
    sc_shm_block_at(h, prev)->next_free = next;
  else
    h->free_head[fl][sl] = next;
  if (next)
    sc_shm_block_at(h, next)->prev_free = prev;
  if (h->free_head[fl][sl] == 0) {
    h->sl_bitmap[fl] &= ~(1u << sl);
    if (h->sl_bitmap[fl] == 0)
      h->fl_bitmap &= ~(1ull << fl);
  }
  h->blocks_free--;
  h->bytes_free -= sc_shm_block_size(b);
  return 0;
}

int sc_shm_list_insert(sc_shared_arena *s, sc_shm_block *b) {
  sc_shm_header *h = s->header;
  unsigned fl, sl;
  sc_shm_class_of(sc_shm_block_size(b), &fl, &sl);
  uint64_t offset = sc_shm_offset_of(h, b), head = h->free_head[fl][sl];
  if (head != 0 && (head == offset || !sc_shm_offset_ok(s, head) ||
                    sc_shm_block_at(h, head)->prev_free != 0))
    return sc_shm_damaged("free-list head", head);
  b->prev_free = 0;
  b->next_free = head;
  if (head)
    sc_shm_block_at(h, head)->prev_free = offset;
  h->free_head[fl][sl] = offset;
  h->sl_bitmap[fl] |= 1u << sl;
  h->fl_bitmap |= 1ull << fl;
  h->blocks_free++;
  h->bytes_free += sc_shm_block_size(b);
  return 0;
}

/* The first free block of the smallest non-empty class whose every block
 * holds `need` bytes, in *found (NULL: none); 0, or -1 when the bitmaps or
 * the list head lead outside the heap or to a block that does not fit. */
static int find_fit(sc_shared_arena *s, uint64_t need, sc_shm_block **found) {
  sc_shm_header *h = s->header;
  uint64_t search = need;
  *found = NULL;
  if (need >= SC_SHM_SMALL_LIMIT)
    search += (1ull << (63u - (unsigned)__builtin_clzll(need) - SC_SHM_SL_LOG)) - 1;
  unsigned fl, sl;
  sc_shm_class_of(search, &fl, &sl);
  if (fl >= SC_SHM_FL_COUNT)
    return 0;
  uint32_t sl_map = h->sl_bitmap[fl] & (~0u << sl);
  if (sl_map == 0) {
    uint64_t fl_map = h->fl_bitmap & (~0ull << (fl + 1));
    if (fl_map == 0)
      return 0;
    fl = (unsigned)__builtin_ctzll(fl_map);
    if (fl >= SC_SHM_FL_COUNT)
      return sc_shm_damaged("first-level bitmap", h->fl_bitmap);
    sl_map = h->sl_bitmap[fl];
  }
  sl = (unsigned)__builtin_ctz(sl_map);
  uint64_t offset = h->free_head[fl][sl];
  if (!sc_shm_offset_ok(s, offset))
    return sc_shm_damaged("free-list head", offset);
  sc_shm_block *b = sc_shm_block_at(h, offset);
  /* Enough to stay in the heap; a block in the wrong class's list is
   * caught when list_remove() looks for it in its own. */
  if (!sc_shm_block_is_free(b) || !sc_shm_size_ok(s, b) || sc_shm_block_size(b) < need)
    return sc_shm_damaged("block size of a free-list head", b->size_flags);
  *found = b;
  return 0;
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

int sc_shm_heap_format(sc_shared_arena *s) {
  sc_shm_header *h = s->header;
  int rc = sc_shm_mutex_init(&h->lock);
  if (rc == 0)
    rc = sc_shm_mutex_init(&h->migrate_lock);
  if (rc != 0)
    return sc_fail(rc, "cannot make the shared arena's locks: %s", strerror(rc));
  s->lock_kind = h->lock.mutex.__data.__kind;
  s->heap_begin = h->header_size = h->heap_begin = sc_shm_heap_begin();
  s->heap_end = h->heap_end = s->size - SC_SHM_BLOCK_HEADER;
  h->size = s->size;
  sc_shm_block *first = sc_shm_block_at(h, s->heap_begin);
  first->prev_size = 0;
  first->size_flags = (s->heap_end - s->heap_begin) | SC_SHM_FREE;
  sc_shm_block *sentinel = sc_shm_block_at(h, s->heap_end);
  sentinel->prev_size = sc_shm_block_size(first);
  sentinel->size_flags = 0;
  return sc_shm_list_insert(s, first);
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
 * list; the lead (if any) and a large enough tail stay free.  NULL when a
 * free list turns out damaged (the blocks are right; the lists are not). */
static sc_shm_block *carve(sc_shared_arena *s, sc_shm_block *b, uint64_t lead, uint64_t need) {
  sc_shm_header *h = s->header;
  uint64_t size = sc_shm_block_size(b);
  sc_shm_block *taken = (sc_shm_block *)((char *)b + lead), *rest;
  sc_shm_update u;
  u.n = 0; /* only n: zeroing the arrays costs a rep stos per update */
  if (lead) {
    update_set(&u, &b->size_flags, lead | SC_SHM_FREE);
    update_set(&u, &taken->prev_size, lead);
  }
  need = update_use(&u, taken, need, size - lead, (sc_shm_block *)((char *)b + size), &rest);
  update_apply(h, &u);
  h->blocks_used++;
  h->bytes_used += need;
  if ((lead && sc_shm_list_insert(s, b) != 0) || (rest && sc_shm_list_insert(s, rest) != 0))
    return NULL;
  return taken;
}

uint64_t sc_shm_block_need(size_t size) {
  if (size > SC_SHM_SIZE_MAX)
    return 0;
  uint64_t need = ((uint64_t)size + SC_SHM_ALIGN - 1) / SC_SHM_ALIGN * SC_SHM_ALIGN + SC_SHM_BLOCK_HEADER;
  return need < SC_SHM_BLOCK_MIN ? SC_SHM_BLOCK_MIN : need;
}

static int size_check(size_t size) {
  if (size == 0)
    return sc_fail(EINVAL, "size 0");
  if (sc_shm_block_need(size) == 0)
    return sc_fail(ENOMEM, "size %zu is too large", size);
  return 0;
}

/* Unlocks, keeping the errno of a failure under the lock. */
static void unlock_after(sc_shared_arena *s, int failed) {
  int err = failed ? errno : 0;
  sc_shm_unlock(s);
  if (failed)
    errno = err;
}

void *sc_shm_heap_alloc(sc_arena *a, uint64_t generation, size_t size, size_t align, int zero) {
  sc_shared_arena *s = sc_shared_of(a);
  if (size_check(size) != 0 || sc_shm_lock(s) != 0)
    return NULL;
  uint64_t need = sc_shm_block_need(size), extra = align > SC_SHM_ALIGN ? align + SC_SHM_BLOCK_MIN : 0;
  sc_shm_block *b;
  void *p = NULL;
  int rc = find_fit(s, need + extra, &b);
  if (rc == 0 && b != NULL) {
    uint64_t lead = 0;
    if (extra) {
      uintptr_t payload = ((uintptr_t)b + SC_SHM_BLOCK_HEADER + align - 1) & ~(uintptr_t)(align - 1);
      lead = payload - SC_SHM_BLOCK_HEADER - (uintptr_t)b;
      if (lead != 0 && lead < SC_SHM_BLOCK_MIN) /* too small to stay a free block */
        lead += align;
    }
    sc_shm_block *taken = NULL;
    if ((rc = list_remove(s, b)) == 0 && (taken = carve(s, b, lead, need)) == NULL)
      rc = -1;
    if (taken != NULL)
      p = (char *)taken + SC_SHM_BLOCK_HEADER;
  }
  uint64_t bytes_free = s->header->bytes_free;
  unlock_after(s, rc != 0);
  if (rc != 0)
    return NULL;
  if (p == NULL)
    return sc_fail_null(ENOMEM, "shared arena full: no free block for %zu bytes (%llu bytes free)",
                          size, (unsigned long long)bytes_free);
  if (zero)
    memset(p, 0, size);
  return p;
}

/* The racy reads of sc_shm_block_of (below). */
__attribute__((no_sanitize("thread"))) static uint64_t word_load(const uint64_t *word) {
  return __atomic_load_n(word, __ATOMIC_RELAXED);
}

/* Cross-checks both boundary tags against the heap's bounds, so stale and
 * foreign pointers are refused in O(1) and no tag leads outside the heap.
 * Each word is read once: without the lock, another process may be
 * rewriting b's prev_size and the block below (never b's own size or the
 * next block's prev_size, which change only when b does).  So a read here
 * may meet another block's data being written: a caller without the lock
 * takes any refusal to the locked path, which checks again.  Those reads
 * are racy by design, and kept out of ThreadSanitizer's view. */
__attribute__((no_sanitize("thread")))
sc_shm_block *sc_shm_block_of(sc_shared_arena *s, const void *ptr) {
  sc_shm_header *h = s->header;
  uintptr_t p = (uintptr_t)ptr, base = (uintptr_t)h;
  if ((p & (SC_SHM_ALIGN - 1)) || p < base + s->heap_begin + SC_SHM_BLOCK_HEADER ||
      p >= base + s->heap_end)
    return NULL;
  uint64_t offset = p - SC_SHM_BLOCK_HEADER - base;
  sc_shm_block *b = sc_shm_block_at(h, offset);
  uint64_t size_flags = word_load(&b->size_flags), size = size_flags & ~(uint64_t)15;
  if ((size_flags & (SC_SHM_FREE | SC_SHM_CACHED)) || size < SC_SHM_BLOCK_MIN ||
      size > s->heap_end - offset || word_load(&sc_shm_block_at(h, offset + size)->prev_size) != size)
    return NULL;
  uint64_t prev_size = word_load(&b->prev_size);
  if (offset == s->heap_begin)
    return prev_size == 0 ? b : NULL;
  if (prev_size < SC_SHM_BLOCK_MIN || prev_size > offset - s->heap_begin ||
      (word_load(&sc_shm_block_at(h, offset - prev_size)->size_flags) & ~(uint64_t)15) != prev_size)
    return NULL;
  return b;
}

int sc_shm_release(sc_shared_arena *s, sc_shm_block *b) {
  sc_shm_header *h = s->header;
  uint64_t size = sc_shm_block_size(b), total = size;
  sc_shm_block *start = b, *next = block_after(b);
  sc_shm_block *prev = b->prev_size ? (sc_shm_block *)((char *)b - b->prev_size) : NULL;
  int prev_free = prev != NULL && sc_shm_block_is_free(prev);
  int next_free = sc_shm_block_is_free(next); /* the sentinel never is */
  if (next_free && !sc_shm_size_ok(s, next))
    return sc_shm_damaged("block size", next->size_flags);
  if (prev_free) {
    if (list_remove(s, prev) != 0)
      return -1;
    start = prev;
    total += sc_shm_block_size(prev);
  }
  if (next_free) {
    if (list_remove(s, next) != 0)
      return -1;
    total += sc_shm_block_size(next);
    next = block_after(next);
  }
  sc_shm_update u;
  u.n = 0; /* only n: zeroing the arrays costs a rep stos per update */
  update_set(&u, &start->size_flags, total | SC_SHM_FREE);
  update_set(&u, &next->prev_size, total);
  update_apply(h, &u);
  h->blocks_used--;
  h->bytes_used -= size;
  return sc_shm_list_insert(s, start);
}

void sc_shm_heap_free(sc_arena *a, uint64_t generation, void *ptr) {
  sc_shared_arena *s = sc_shared_of(a);
  if (sc_shm_lock(s) != 0)
    return;
  sc_shm_block *b = sc_shm_block_of(s, ptr);
  unlock_after(s, b != NULL && sc_shm_release(s, b) != 0);
  if (b == NULL)
    sc_fail(EINVAL, "%p is not a live block of the shared arena (freed twice?)", ptr);
}

/* Resizes b in place to `need` bytes when it or its free right neighbour
 * has room; returns 1, 0 when it must move, or -1 when the neighbour or a
 * free list is damaged. */
static int resize_in_place(sc_shared_arena *s, sc_shm_block *b, uint64_t need) {
  sc_shm_header *h = s->header;
  uint64_t size = sc_shm_block_size(b), total = size;
  sc_shm_block *next = block_after(b), *after = next;
  if (sc_shm_block_is_free(next)) {
    if (!sc_shm_size_ok(s, next))
      return sc_shm_damaged("block size", next->size_flags);
    total += sc_shm_block_size(next);
    after = block_after(next);
  }
  if (total < need)
    return 0;
  if (next == after && total - need < SC_SHM_BLOCK_MIN)
    return 1; /* shrinking by less than a block: nothing to split off */
  if (next != after && list_remove(s, next) != 0)
    return -1;
  sc_shm_block *rest;
  sc_shm_update u;
  u.n = 0; /* only n: zeroing the arrays costs a rep stos per update */
  need = update_use(&u, b, need, total, after, &rest);
  update_apply(h, &u);
  h->bytes_used = h->bytes_used - size + need;
  return rest && sc_shm_list_insert(s, rest) != 0 ? -1 : 1;
}

void *sc_shm_heap_realloc(sc_arena *a, uint64_t generation, void *ptr, size_t size) {
  sc_shared_arena *s = sc_shared_of(a);
  if (size_check(size) != 0 || sc_shm_lock(s) != 0)
    return NULL;
  sc_shm_block *b = sc_shm_block_of(s, ptr);
  uint64_t old_payload = b ? sc_shm_block_size(b) - SC_SHM_BLOCK_HEADER : 0;
  int resized = b != NULL ? resize_in_place(s, b, sc_shm_block_need(size)) : 0;
  unlock_after(s, resized < 0);
  if (b == NULL)
    return sc_fail_null(EINVAL, "%p is not a live block of the shared arena", ptr);
  if (resized != 0)
    return resized > 0 ? ptr : NULL;
  void *moved = sc_shm_heap_alloc(a, generation, size, SC_SHM_ALIGN, 0);
  if (moved == NULL)
    return NULL; /* ptr stays valid and unchanged */
  memcpy(moved, ptr, old_payload < size ? old_payload : size);
  sc_shm_heap_free(a, generation, ptr);
  return moved;
}

size_t sc_shm_heap_usable_for(sc_arena *a, size_t size, size_t align) {
  uint64_t need = sc_shm_block_need(size);
  return need ? need - SC_SHM_BLOCK_HEADER : 0;
}

size_t sc_shm_heap_usable_size(sc_arena *a, const void *ptr) {
  sc_shared_arena *s = sc_shared_of(a);
  if (sc_shm_lock(s) != 0)
    return 0;
  sc_shm_block *b = sc_shm_block_of(s, ptr);
  size_t usable = b ? sc_shm_block_size(b) - SC_SHM_BLOCK_HEADER : 0;
  sc_shm_unlock(s);
  if (b == NULL)
    sc_fail(EINVAL, "%p is not a live block of the shared arena", ptr);
  return usable;
}

int sc_shm_heap_where(sc_arena *a, const void *ptr) {
  sc_shared_arena *s = sc_shared_of(a);
  if (sc_shm_lock(s) != 0)
    return SC_BLOCK_NOT_HELD;
  uint64_t p = sc_shm_offset_of(s->header, ptr), offset = s->heap_begin;
  int where = SC_BLOCK_NOT_HELD;
  while (offset < s->heap_end) {
    sc_shm_block *b = sc_shm_block_at(s->header, offset);
    if (!sc_shm_size_ok(s, b))
      break; /* damaged: the walk cannot go on */
    uint64_t size = sc_shm_block_size(b);
    if (p < offset + size) {
      int held = !(sc_shm_block_flags(b) & (SC_SHM_FREE | SC_SHM_CACHED));
      if (held && p >= offset + SC_SHM_BLOCK_HEADER)
        where = p == offset + SC_SHM_BLOCK_HEADER ? SC_BLOCK_START : SC_BLOCK_INSIDE;
      break;
    }
    offset += size;
  }
  sc_shm_unlock(s);
  return where;
}
