/* shm.h: the layout of a shared arena's segment, and the calls between the
 * files that own it — shm_segment.c (names, address, attach), shm_heap.c
 * (allocation, the robust lock, the update journal) and shm_repair.c
 * (repair after a dead lock holder, and the heap checker).
 *
 * Everything the heap needs lives in the segment, addressed by offsets from
 * its base, so any process that maps it at that base can use it.  Block
 * headers are the truth; the free lists, bitmaps and statistics are derived
 * from them and can always be rebuilt by one scan. */
#ifndef SICM_SHM_H
#define SICM_SHM_H

#include <pthread.h>
#include <stdint.h>

#include "internal.h"

#define SHM_MAGIC 0x4d48535f4d434953ull /* "SICM_SHM", written last by the creator */
#define SHM_VERSION 1u

/* Two-level segregated fit (TLSF): first level = power of two, second
 * level = SHM_SL_COUNT linear steps inside it; below SHM_SMALL_LIMIT one
 * class per 16 bytes. */
#define SHM_ALIGN 16u
#define SHM_SL_LOG 5u
#define SHM_SL_COUNT (1u << SHM_SL_LOG)
#define SHM_SMALL_LIMIT ((uint64_t)SHM_ALIGN << SHM_SL_LOG) /* 512 */
#define SHM_FL_COUNT 40u                                   /* blocks up to 2^48 */
#define SHM_BLOCK_HEADER 16u                               /* prev_size + size_flags */
#define SHM_BLOCK_MIN 32u                                  /* header + the two list links */
#define SHM_JOURNAL_MAX 8u
#define SHM_FREE 1ull                                      /* in size_flags */
#define SHM_SIZE_MIN ((size_t)64 << 10)
#define SHM_SIZE_MAX ((size_t)64 << 40)
#define SHM_NAME_MAX 201                                   /* "/" + 200 */

typedef struct shm_block {
  uint64_t prev_size;   /* size of the block just below; 0 for the first */
  uint64_t size_flags;  /* size (a multiple of 16, header included) | SHM_FREE */
  uint64_t next_free;   /* free blocks only: offsets in the class's list, 0 = none */
  uint64_t prev_free;
} shm_block;

typedef struct shm_journal_entry {
  uint64_t offset;      /* of a header word being changed */
  uint64_t old_value;
} shm_journal_entry;

typedef struct shm_header {
  uint64_t magic;
  uint32_t version;
  uint32_t layout;      /* shm_layout_signature() of the creator */
  uint64_t header_size;
  uint64_t size;        /* of the whole segment */
  uint64_t base;        /* the address every process maps it at */
  uint64_t heap_begin;  /* offset of the first block */
  uint64_t heap_end;    /* offset of the sentinel block (size 0, in use) */
  int32_t creator_pid;
  char name[SHM_NAME_MAX + 1];
  uint64_t repairs, updates_undone;

  /* Placement: one migration at a time across all processes, under
   * migrate_lock (robust, process-shared); the binding is written at its
   * end under the heap lock. */
  pthread_mutex_t migrate_lock;
  int32_t policy;
  uint32_t nnodes;
  int32_t nodes[SICM_ARENA_DEVICES_MAX];

  /* What every allocation and free touches, packed into few cache lines:
   * under contention each line moves between CPUs once per operation. */
  pthread_mutex_t lock __attribute__((aligned(64))); /* process-shared, robust */
  /* The header words of the update in progress and their old values; the
   * count is published before the first word changes and cleared after the
   * last, so a dead process's update is undone exactly. */
  uint64_t journal_count;
  /* Derived from the blocks. */
  uint64_t blocks_used, bytes_used, blocks_free, bytes_free;
  shm_journal_entry journal[SHM_JOURNAL_MAX];
  uint64_t fl_bitmap;
  uint32_t sl_bitmap[SHM_FL_COUNT];
  uint64_t free_head[SHM_FL_COUNT][SHM_SL_COUNT];
} shm_header;

/* What a mismatched library must refuse: sizes and constants of the layout. */
uint32_t shm_layout_signature(void);

static inline shm_block *shm_block_at(shm_header *h, uint64_t offset) {
  return (shm_block *)((char *)h + offset);
}
static inline uint64_t shm_offset_of(const shm_header *h, const void *p) {
  return (uint64_t)((const char *)p - (const char *)h);
}
static inline uint64_t shm_block_size(const shm_block *b) { return b->size_flags & ~(uint64_t)15; }
static inline int shm_block_is_free(const shm_block *b) { return (b->size_flags & SHM_FREE) != 0; }

/* ---- shm_heap.c ---- */
/* Lays out an empty heap in a zeroed header + heap; the lock included. */
int shm_heap_format(shm_header *h, size_t size);
/* Takes the heap lock, repairing the heap if its holder died; 0 or an errno. */
int shm_lock(shm_header *h);
void shm_unlock(shm_header *h);
/* Takes migrate_lock.  A migrator that died leaves pages possibly on two
 * devices, which the next migration moves anyway: nothing to repair.
 * 0 or an errno. */
int shm_migrate_lock(shm_header *h);
void shm_migrate_unlock(shm_header *h);
/* The class (first level, second level) of a block size. */
void shm_class_of(uint64_t size, unsigned *fl, unsigned *sl);
void shm_list_insert(shm_header *h, shm_block *b);
/* Entry points of alloc.c for a shared arena (errno set as theirs). */
void *shm_heap_alloc(sicm_arena_rec *rec, size_t size, size_t align, int zero);
void shm_heap_free(sicm_arena_rec *rec, void *ptr);
void *shm_heap_realloc(sicm_arena_rec *rec, void *ptr, size_t size);
size_t shm_heap_usable_size(sicm_arena_rec *rec, const void *ptr);

/* Fault injection for the crash tests only: the process kills itself with
 * SIGKILL in its `update`-th journaled update from now (0: the next), at
 * `step`: 0 before the journal is written (the free lists already changed),
 * 1 with the journal written but not published, 2 + k after k of the
 * update's header words changed.  Not in sicm.h. */
void sicm__shm_crash_at(long update, unsigned step);

/* ---- shm_repair.c ---- */
/* Undoes a journaled update left by a dead process and rebuilds the derived
 * state; the caller holds the lock (EOWNERDEAD).  0, or -1 when the blocks
 * themselves do not tile the heap. */
int shm_repair(shm_header *h);
/* The checker behind sicm_arena_check(); the caller holds the lock. */
int shm_check_locked(shm_header *h, sicm_heap_report *report);

/* ---- shm_segment.c ---- */
/* Makes resident pages of the segment that this process has not touched
 * mapped here too, so move_pages and mbind see every page. */
void shm_segment_map_resident(sicm_arena_rec *rec);
/* Records a migration's binding in the header, for every process. */
void shm_segment_set_binding(sicm_arena_rec *rec, const sicm_binding *b);
/* Refreshes rec->binding from the header (another process may have moved it). */
void shm_segment_get_binding(sicm_arena_rec *rec);
int shm_segment_stats(sicm_arena_rec *rec, sicm_arena_stats *out);

#endif /* SICM_SHM_H */
