/* SPDX-License-Identifier: BSD-3-Clause */
/* shared_repair.c: a shared heap after the death of its lock holder, and the
 * checker of every heap invariant.
 *
 * Repair is undo, then rebuild: the journal puts back the header words of
 * the interrupted update (so the heap is as before that update), then one
 * scan of the blocks rebuilds the free lists, bitmaps and counters, which
 * the dead process may have left half changed.  Both steps are idempotent:
 * if the repairing process dies too, the next locker repeats them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shared.h"

/* Puts back the words of the update in progress.  Its entries are read
 * from the segment: all are checked to name header words of the heap (a
 * block's two header words, or the sentinel's) before any is written. */
static int journal_undo(sc_shared_arena *s) {
  sc_shm_header *h = s->header;
  uint64_t n = __atomic_load_n(&h->journal_count, __ATOMIC_ACQUIRE);
  if (n == 0)
    return 0;
  if (n > SC_SHM_JOURNAL_MAX)
    return sc_shm_damaged("journal count", n);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t offset = h->journal[i].offset;
    if (offset < s->heap_begin || offset > s->heap_end + 8 || (offset & 7) != 0)
      return sc_fail(EUCLEAN, "shared arena damaged: its journal entry %llu (offset 0x%llx) is "
                              "outside its heap", (unsigned long long)i, (unsigned long long)offset);
  }
  for (uint64_t i = n; i-- > 0;)
    *(uint64_t *)((char *)h + h->journal[i].offset) = h->journal[i].old_value;
  h->updates_undone++;
  return 0;
}

/* Rebuilds the derived state from the block headers; -1 (EUCLEAN) if they
 * do not tile the heap. */
static int rebuild(sc_shared_arena *s) {
  sc_shm_header *h = s->header;
  h->fl_bitmap = 0;
  memset(h->sl_bitmap, 0, sizeof h->sl_bitmap);
  memset(h->free_head, 0, sizeof h->free_head);
  h->blocks_used = h->bytes_used = h->blocks_free = h->bytes_free = 0;
  uint64_t offset = s->heap_begin, prev_size = 0;
  while (offset < s->heap_end) {
    sc_shm_block *b = sc_shm_block_at(h, offset);
    if (!sc_shm_offset_ok(s, offset) || !sc_shm_size_ok(s, b))
      return sc_fail(EUCLEAN, "shared arena damaged beyond repair: the block at offset 0x%llx "
                              "has size 0x%llx, so the blocks do not tile the heap",
                     (unsigned long long)offset, (unsigned long long)b->size_flags);
    __atomic_store_n(&b->prev_size, prev_size, __ATOMIC_RELAXED); /* read without the lock */
    if (sc_shm_block_is_free(b)) {
      if (sc_shm_list_insert(s, b) != 0)
        return -1;
    } else {
      h->blocks_used++;
      h->bytes_used += sc_shm_block_size(b);
    }
    prev_size = sc_shm_block_size(b);
    offset += prev_size;
  }
  sc_shm_block *sentinel = sc_shm_block_at(h, s->heap_end);
  sentinel->prev_size = prev_size;
  sentinel->size_flags = 0;
  return 0;
}

int sc_shm_repair(sc_shared_arena *s) {
  sc_shm_header *h = s->header;
  int rc = journal_undo(s);
  if (rc == 0)
    rc = rebuild(s);
  /* The dead holder's cached blocks, and those of any process gone. */
  if (rc == 0 && sc_shm_cache_reclaim(s) < 0)
    rc = -1;
  h->repairs++;
  if (rc == 0)
    __atomic_store_n(&h->journal_count, 0, __ATOMIC_RELEASE);
  return rc;
}

/* ---- checker ---- */

static int broken(const char *what, uint64_t offset) {
  return sc_fail(EUCLEAN, "shared heap check: %s (offset %llu)", what,
                   (unsigned long long)offset);
}

static int offset_cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int cacher_listed(const sc_shm_header *h, uint64_t owner) {
  for (unsigned i = 0; i < SC_SHM_CACHERS; i++)
    if (owner != 0 && h->cachers[i].owner == owner)
      return 1;
  return 0;
}

/* Walks the blocks: tiling, boundary tags, coalescing, counters.  Collects
 * the free blocks' offsets (in address order) into *frees. */
static int check_blocks(sc_shared_arena *s, uint64_t **frees, size_t *nfrees, sicm_heap_report *r) {
  sc_shm_header *h = s->header;
  size_t cap = 64, n = 0;
  uint64_t *list = malloc(cap * sizeof *list);
  if (list == NULL)
    return sc_fail(ENOMEM, "out of memory");
  uint64_t offset = s->heap_begin, prev_size = 0;
  int prev_free = 0, rc = 0;
  while (rc == 0 && offset < s->heap_end) {
    sc_shm_block *b = sc_shm_block_at(h, offset);
    uint64_t size = sc_shm_block_size(b);
    if (!sc_shm_offset_ok(s, offset) || !sc_shm_size_ok(s, b))
      rc = broken("a block size leaves the heap or is below the minimum", offset);
    else if (b->prev_size != prev_size)
      rc = broken("a block's prev_size is not the size of the block below", offset);
    else if (sc_shm_block_is_free(b) && prev_free)
      rc = broken("two free blocks are adjacent (not coalesced)", offset);
    else if (sc_shm_block_flags(b) != 0 && sc_shm_block_flags(b) != SC_SHM_FREE &&
             sc_shm_block_flags(b) != SC_SHM_CACHED)
      rc = broken("a block's flags say neither free, cached nor held", offset);
    else if (sc_shm_block_flags(b) == SC_SHM_CACHED && !cacher_listed(h, sc_shm_cached_owner(b)))
      rc = broken("a cached block names no process among the cachers", offset);
    if (rc != 0)
      break;
    if (sc_shm_block_is_free(b)) {
      if (n == cap) {
        uint64_t *grown = realloc(list, 2 * cap * sizeof *list);
        if (grown == NULL) {
          rc = sc_fail(ENOMEM, "out of memory");
          break;
        }
        list = grown;
        cap *= 2;
      }
      list[n++] = offset;
      r->blocks_free++;
      r->bytes_free += size;
      /* Good fit serves from a class only requests up to its lower bound. */
      uint64_t floor = size;
      if (size >= SC_SHM_SMALL_LIMIT)
        floor &= ~((1ull << (63u - (unsigned)__builtin_clzll(size) - SC_SHM_SL_LOG)) - 1);
      if (floor - SC_SHM_BLOCK_HEADER > r->largest_free)
        r->largest_free = floor - SC_SHM_BLOCK_HEADER;
    } else {
      r->blocks_used++;
      r->bytes_used += size;
    }
    prev_free = sc_shm_block_is_free(b);
    prev_size = size;
    offset += size;
  }
  const sc_shm_block *sentinel = sc_shm_block_at(h, s->heap_end);
  if (rc == 0 && offset != s->heap_end)
    rc = broken("the blocks do not end at the sentinel", offset);
  else if (rc == 0 && (sentinel->size_flags != 0 || sentinel->prev_size != prev_size))
    rc = broken("the sentinel block is damaged", s->heap_end);
  else if (rc == 0 && (r->blocks_used != h->blocks_used || r->bytes_used != h->bytes_used ||
                       r->blocks_free != h->blocks_free || r->bytes_free != h->bytes_free))
    rc = broken("the counters disagree with the blocks", 0);
  if (rc != 0) {
    free(list);
    return rc;
  }
  *frees = list;
  *nfrees = n;
  return 0;
}

/* Each list holds exactly the free blocks of its class, linked both ways;
 * the bitmaps say which lists are non-empty. */
static int check_lists(sc_shm_header *h, const uint64_t *frees, size_t nfrees) {
  unsigned char *seen = calloc(nfrees ? nfrees : 1, 1);
  if (seen == NULL)
    return sc_fail(ENOMEM, "out of memory");
  size_t listed = 0;
  int rc = 0;
  for (unsigned fl = 0; rc == 0 && fl < SC_SHM_FL_COUNT; fl++) {
    if (((h->fl_bitmap >> fl) & 1) != (h->sl_bitmap[fl] != 0))
      rc = broken("the first-level bitmap disagrees with the second level", fl);
    for (unsigned sl = 0; rc == 0 && sl < SC_SHM_SL_COUNT; sl++) {
      uint64_t offset = h->free_head[fl][sl], prev = 0;
      if (((h->sl_bitmap[fl] >> sl) & 1) != (offset != 0))
        rc = broken("a second-level bitmap bit disagrees with its list", fl * SC_SHM_SL_COUNT + sl);
      while (rc == 0 && offset != 0) {
        const uint64_t *at = bsearch(&offset, frees, nfrees, sizeof *frees, offset_cmp);
        unsigned bfl, bsl;
        if (at == NULL) {
          rc = broken("a free list holds something that is not a free block", offset);
          break;
        }
        sc_shm_block *b = sc_shm_block_at(h, offset);
        sc_shm_class_of(sc_shm_block_size(b), &bfl, &bsl);
        if (seen[at - frees]++)
          rc = broken("a free block is listed twice", offset);
        else if (bfl != fl || bsl != sl)
          rc = broken("a free block is in the list of another size class", offset);
        else if (b->prev_free != prev)
          rc = broken("a free list's back link is wrong", offset);
        listed++;
        prev = offset;
        offset = b->next_free;
      }
    }
  }
  if (rc == 0 && listed != nfrees)
    rc = broken("some free blocks are in no free list", 0);
  free(seen);
  return rc;
}

int sc_shm_check_locked(sc_shared_arena *s, sicm_heap_report *report) {
  sc_shm_header *h = s->header;
  sicm_heap_report r = {0};
  if (__atomic_load_n(&h->journal_count, __ATOMIC_ACQUIRE) != 0)
    return broken("an update is pending in the journal", 0);
  if (h->heap_begin != s->heap_begin || h->heap_end != s->heap_end || h->size != s->size ||
      h->header_size != s->heap_begin)
    return broken("the heap bounds in the header are not the ones it was attached with", 0);
  if (h->fl_bitmap >> SC_SHM_FL_COUNT)
    return broken("the first-level bitmap names classes beyond the last", h->fl_bitmap);
  uint64_t *frees = NULL;
  size_t nfrees = 0;
  if (check_blocks(s, &frees, &nfrees, &r) != 0)
    return -1;
  int rc = check_lists(h, frees, nfrees);
  free(frees);
  r.repairs = h->repairs;
  r.updates_undone = h->updates_undone;
  if (rc == 0 && report != NULL)
    *report = r;
  return rc;
}
