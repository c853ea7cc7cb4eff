/* SPDX-License-Identifier: BSD-3-Clause */
/* shared.h: shared arenas, a kind of arena — the layout of a shared
 * arena's segment, the kind's data, and the calls between the files that
 * own it: shared_segment.c (names, address, attach, the kind's operations
 * table), shared_heap.c (allocation, the robust lock, the update journal),
 * shared_cache.c (the threads' caches of freed blocks in front of the heap)
 * and shared_repair.c (repair after a dead lock holder, and the checker).
 *
 * Everything the heap needs lives in the segment, addressed by offsets from
 * its base, so any process that maps it at that base can use it.  Block
 * headers are the truth; the free lists, bitmaps and statistics are derived
 * from them and can always be rebuilt by one scan. */
#ifndef SC_SHARED_H
#define SC_SHARED_H

#include <pthread.h>
#include <stdint.h>

#include <sys/stat.h>

#include "arena.h"

#define SC_SHM_MAGIC 0x4d48535f4d434953ull /* "SICM_SHM", written last by the creator */
#define SC_SHM_VERSION 3u

/* Two-level segregated fit (TLSF): first level = power of two, second
 * level = SC_SHM_SL_COUNT linear steps inside it; below SC_SHM_SMALL_LIMIT one
 * class per 16 bytes. */
#define SC_SHM_ALIGN 16u
#define SC_SHM_SL_LOG 5u
#define SC_SHM_SL_COUNT (1u << SC_SHM_SL_LOG)
#define SC_SHM_SMALL_LIMIT ((uint64_t)SC_SHM_ALIGN << SC_SHM_SL_LOG) /* 512 */
#define SC_SHM_FL_COUNT 40u                                   /* blocks up to 2^48 */
#define SC_SHM_BLOCK_HEADER 16u                               /* prev_size + size_flags */
#define SC_SHM_BLOCK_MIN 32u                                  /* header + the two list links */
#define SC_SHM_JOURNAL_MAX 8u
#define SC_SHM_FREE 1ull                                      /* in size_flags */
/* In size_flags of a block a thread freed into its cache (shared_cache.c):
 * used as far as the heap is concerned, its first payload word names the
 * process whose cache holds it. */
#define SC_SHM_CACHED 2ull
#define SC_SHM_SIZE_MIN ((size_t)64 << 10)
#define SC_SHM_SIZE_MAX ((size_t)64 << 40)
#define SC_SHM_NAME_MAX 201                                   /* "/" + 200 */

typedef struct sc_shm_block {
  uint64_t prev_size;   /* size of the block just below; 0 for the first */
  uint64_t size_flags;  /* size (a multiple of 16, header included) | SC_SHM_FREE */
  uint64_t next_free;   /* free blocks only: offsets in the class's list, 0 = none */
  uint64_t prev_free;
} sc_shm_block;

typedef struct sc_shm_journal_entry {
  uint64_t offset;      /* of a header word being changed */
  uint64_t old_value;
} sc_shm_journal_entry;

/* A process-shared robust mutex and who holds it, recorded by the holder
 * after it takes the mutex and cleared before it lets go: what lets a
 * waiter tell a live holder from a lock word naming a task that is gone
 * (shared_lock.c). */
typedef struct sc_shm_mutex {
  pthread_mutex_t mutex;
  uint64_t holder;      /* pid | start time << 22 (clock ticks since boot); 0: none */
  uint64_t holder_ns;   /* inode of the holder's pid namespace */
} sc_shm_mutex;

/* A process whose threads cache freed blocks of the segment
 * (shared_cache.c), as holders record themselves; owner 0: a free entry. */
#define SC_SHM_CACHERS 64u
typedef struct sc_shm_cacher {
  uint64_t owner;       /* pid | start time << 22 */
  uint64_t ns;          /* inode of its pid namespace */
} sc_shm_cacher;

/* One process's share of a segment's accesses (shared_autoplace.c). */
#define SC_SHM_RATES 64u
typedef struct sc_shm_rate {
  uint64_t owner;       /* pid | start time << 22 of the publisher; 0: free */
  uint64_t per_second;  /* bytes it referenced per second in its last interval */
  uint64_t stamp_ns;    /* when it published (CLOCK_MONOTONIC, one clock per host) */
  uint64_t interval_ms; /* its interval: stale after three of them */
} sc_shm_rate;

typedef struct sc_shm_header {
  uint64_t magic;
  uint32_t version;
  uint32_t layout;      /* sc_shm_layout_signature() of the creator */
  uint64_t header_size;
  uint64_t size;        /* of the whole segment */
  uint64_t base;        /* the address every process maps it at */
  uint64_t heap_begin;  /* offset of the first block */
  uint64_t heap_end;    /* offset of the sentinel block (size 0, in use) */
  int32_t creator_pid;
  uint64_t creator_start; /* the creator's start time, clock ticks since boot */
  char name[SC_SHM_NAME_MAX + 1];
  uint64_t repairs, updates_undone;

  /* Placement: one migration at a time across all processes, under
   * migrate_lock (robust, process-shared); the binding is written at its
   * end under the heap lock. */
  sc_shm_mutex migrate_lock;
  int32_t policy;
  uint32_t nnodes;
  int32_t nodes[SICM_ARENA_DEVICES_MAX];
  /* Automatic placement: each process's monitor publishes what it
   * referenced of the segment; the sum is the arena's rate in every
   * process.  One process places it: `placer` (pid | start time << 22),
   * while its rate stays fresh. */
  uint64_t placer;
  sc_shm_rate rates[SC_SHM_RATES];
  /* The processes whose caches may hold blocks; changed under the heap
   * lock.  A dead one's blocks go back to the heap at the next reclaim. */
  sc_shm_cacher cachers[SC_SHM_CACHERS];

  /* What every allocation and free touches, packed into few cache lines:
   * under contention each line moves between CPUs once per operation. */
  sc_shm_mutex lock __attribute__((aligned(64)));
  /* The header words of the update in progress and their old values; the
   * count is published before the first word changes and cleared after the
   * last, so a dead process's update is undone exactly. */
  uint64_t journal_count;
  /* Derived from the blocks. */
  uint64_t blocks_used, bytes_used, blocks_free, bytes_free;
  sc_shm_journal_entry journal[SC_SHM_JOURNAL_MAX];
  uint64_t fl_bitmap;
  uint32_t sl_bitmap[SC_SHM_FL_COUNT];
  uint64_t free_head[SC_SHM_FL_COUNT][SC_SHM_SL_COUNT];
} sc_shm_header;

/* The kind's data in sc_arena.kind_data.  The segment is untrusted input:
 * any process that maps it, or a stray write in one, may have changed any
 * byte.  So its bounds are this process's own copies, checked once at
 * attach, and every offset or size read from the segment is checked
 * against them before use: a violation is EUCLEAN, never an access outside
 * the mapping. */
typedef struct sc_shared_arena {
  sc_shm_header *header;        /* the segment, mapped at its recorded base */
  uint64_t size;                /* bytes mapped */
  uint64_t heap_begin;          /* offset of the first block */
  uint64_t heap_end;            /* offset of the sentinel block */
  int lock_kind;                /* what a sound mutex of the segment holds in __kind */
  uint64_t dev, ino;            /* identity of its object, for attach */
  /* This process's thread caches of the arena (shared_cache.c), under the
   * record's kind_lock: its entry in the header's cachers (-1: none yet,
   * -2: none free, so its threads do not cache), the caches, and the
   * bytes each may hold. */
  int cacher;
  struct sc_shm_tcache *caches;
  uint64_t cache_bytes_max;
} sc_shared_arena;

static inline sc_shared_arena *sc_shared_of(sc_arena *a) {
  return (sc_shared_arena *)(void *)a->kind_data;
}

/* What a mismatched library must refuse: sizes and constants of the layout. */
uint32_t sc_shm_layout_signature(void);

static inline sc_shm_block *sc_shm_block_at(sc_shm_header *h, uint64_t offset) {
  return (sc_shm_block *)((char *)h + offset);
}
static inline uint64_t sc_shm_offset_of(const sc_shm_header *h, const void *p) {
  return (uint64_t)((const char *)p - (const char *)h);
}
/* Header words are read atomically: a thread of any process may mark its
 * own block cached, or not, without the lock (shared_cache.c). */
static inline uint64_t sc_shm_block_flags(const sc_shm_block *b) {
  return __atomic_load_n(&b->size_flags, __ATOMIC_RELAXED) & 15;
}
static inline uint64_t sc_shm_block_size(const sc_shm_block *b) {
  return __atomic_load_n(&b->size_flags, __ATOMIC_RELAXED) & ~(uint64_t)15;
}
static inline int sc_shm_block_is_free(const sc_shm_block *b) {
  return (sc_shm_block_flags(b) & SC_SHM_FREE) != 0;
}
/* The process a cached block names (its next_free word). */
static inline uint64_t sc_shm_cached_owner(const sc_shm_block *b) {
  return __atomic_load_n(&b->next_free, __ATOMIC_RELAXED);
}

/* The class (first level, second level) of a block size. */
static inline void sc_shm_class_of(uint64_t size, unsigned *fl, unsigned *sl) {
  if (size < SC_SHM_SMALL_LIMIT) {
    *fl = 0;
    *sl = (unsigned)(size / SC_SHM_ALIGN);
    return;
  }
  unsigned msb = 63u - (unsigned)__builtin_clzll(size);
  *fl = msb - (SC_SHM_SL_LOG + 4) + 1;
  *sl = (unsigned)(size >> (msb - SC_SHM_SL_LOG)) ^ SC_SHM_SL_COUNT;
}

/* Where the heap starts: after the header, on a page of its own. */
static inline uint64_t sc_shm_heap_begin(void) {
  return sc_round_up(sizeof(sc_shm_header), sc_page_size());
}

/* Whether a block can start at `offset`, an offset read from the segment:
 * 16-aligned, with room for the smallest block before the sentinel. */
static inline int sc_shm_offset_ok(const sc_shared_arena *s, uint64_t offset) {
  return (offset & (SC_SHM_ALIGN - 1)) == 0 && offset >= s->heap_begin &&
         offset <= s->heap_end - SC_SHM_BLOCK_MIN;
}
/* Whether b's size, read from the segment, keeps it inside the heap. */
static inline int sc_shm_size_ok(const sc_shared_arena *s, const sc_shm_block *b) {
  uint64_t size = sc_shm_block_size(b);
  return size >= SC_SHM_BLOCK_MIN && size <= s->heap_end - sc_shm_offset_of(s->header, b);
}

/* ---- shared_lock.c ---- */
/* A process-shared robust mutex, unlocked, no holder recorded; 0 or an errno. */
int sc_shm_mutex_init(sc_shm_mutex *m);
/* What sc_shm_mutex_init() writes into the mutex's kind, -1 on failure. */
int sc_shm_mutex_kind(void);
/* This process's start time (clock ticks since boot), as holders record it. */
uint64_t sc_shm_self_start(void);
/* This process as holders record it: pid | start time << 22. */
uint64_t sc_shm_self_id(void);
/* The inode of this process's pid namespace, as holders record it. */
uint64_t sc_shm_self_ns(void);
/* 1 when the process `owner` (pid | start time << 22) recorded in pid
 * namespace `ns` is gone: no such process here, or its pid now names one
 * that started at another time.  0 when it lives or cannot be checked
 * from here (another pid namespace, a process this one may not look at). */
int sc_shm_owner_gone(uint64_t owner, uint64_t ns);
/* Takes the heap lock, repairing the heap if its holder died or is gone;
 * 0 or -1 (EUCLEAN: the segment is damaged: the lock's kind, or blocks a
 * repair cannot tile). */
int sc_shm_lock(sc_shared_arena *s);
void sc_shm_unlock(sc_shared_arena *s);
/* Takes migrate_lock.  A migrator that died leaves pages possibly on two
 * devices, which the next migration moves anyway: nothing to repair.
 * 0 or -1. */
int sc_shm_migrate_lock(sc_shared_arena *s);
void sc_shm_migrate_unlock(sc_shared_arena *s);

/* ---- shared_autoplace.c: the placer's view of a shared arena ---- */
/* Publishes this process's referenced bytes per second and returns the
 * sum over the processes whose figures are fresh, this one's included. */
uint64_t sc_shm_rate_share(sc_arena *a, uint64_t per_second, unsigned interval_ms);
/* 1 when this process places the arena (claimed now or before), 0 when
 * another live one does. */
int sc_shm_placer_claim(sc_arena *a);
/* Gives up this process's rate slot and placing (placer stop, detach). */
void sc_shm_placer_release(sc_arena *a);

/* ---- shared_heap.c ---- */
/* Lays out an empty heap in a zeroed segment of s->size bytes, the locks
 * included, and fills s's bounds; 0 or -1. */
int sc_shm_heap_format(sc_shared_arena *s);
/* Puts free block b at the head of its class's list; 0, or -1 (EUCLEAN)
 * when the list's head is not a free block of that class. */
int sc_shm_list_insert(sc_shared_arena *s, sc_shm_block *b);
/* Fails with EUCLEAN, naming the segment's field and its value. */
int sc_shm_damaged(const char *field, uint64_t value);
/* The kind's allocation operations (sc_arena_ops). */
void *sc_shm_heap_alloc(sc_arena *a, uint64_t generation, size_t size, size_t align, int zero);
void sc_shm_heap_free(sc_arena *a, uint64_t generation, void *ptr);
void *sc_shm_heap_realloc(sc_arena *a, uint64_t generation, void *ptr, size_t size);
/* The block size serving `size` bytes, or 0 if none can. */
uint64_t sc_shm_block_need(size_t size);
/* The held block whose payload starts at ptr, or NULL.  Safe without the
 * lock too: a NULL then may come from a neighbour changing meanwhile. */
sc_shm_block *sc_shm_block_of(sc_shared_arena *s, const void *ptr);
/* Frees b (held or cached), merging it with free neighbours; the caller
 * holds the lock.  0, or -1 (EUCLEAN) when a neighbour or a list is
 * damaged. */
int sc_shm_release(sc_shared_arena *s, sc_shm_block *b);
size_t sc_shm_heap_usable_size(sc_arena *a, const void *ptr);
/* Where ptr lies in the heap, from a walk of every block (ops->block_where,
 * the checking mode's diagnosis): the start of a held block's payload
 * (SC_BLOCK_START), inside one (SC_BLOCK_INSIDE), or neither (in a free or
 * cached block, a header, or outside). */
int sc_shm_heap_where(sc_arena *a, const void *ptr);
size_t sc_shm_heap_usable_for(sc_arena *a, size_t size, size_t align);

/* Fault injection for the crash tests only: the process kills itself with
 * SIGKILL in its `update`-th journaled update from now (0: the next), at
 * `step`: 0 before the journal is written (the free lists already changed),
 * 1 with the journal written but not published, 2 + k after k of the
 * update's header words changed.  Internal: the crash test links the
 * convenience library. */
void sc_shm_crash_at(long update, unsigned step);

/* ---- shared_cache.c ---- */
/* The kind's alloc and free: this thread's cache, else the heap. */
void *sc_shm_cache_alloc(sc_arena *a, uint64_t generation, size_t size, size_t align, int zero);
void sc_shm_cache_free(sc_arena *a, uint64_t generation, void *ptr);
/* The heap's realloc, retried once after an ENOMEM has emptied this
 * thread's cache and reclaimed the dead processes' blocks. */
void *sc_shm_cache_realloc(sc_arena *a, uint64_t generation, void *ptr, size_t size);
/* Gives this thread's cached blocks of the arena back to the heap; 0 or -1. */
int sc_shm_cache_flush_mine(sc_arena *a);
/* Frees every cached block whose process is gone (or names no process
 * registered as a cacher) and forgets those processes; the caller holds
 * the lock.  Returns the bytes given back, or -1 (EUCLEAN). */
long sc_shm_cache_reclaim(sc_shared_arena *s);
/* Detach: every thread's cache of the arena goes back to the heap and the
 * process leaves the cachers. */
void sc_shm_cache_close(sc_arena *a);
/* In a forked child: the caches it inherited hold its parent's blocks;
 * they are dropped, unflushed. */
void sc_shm_cache_fork_child(sc_arena *a);

/* ---- shared_repair.c ---- */
/* Undoes a journaled update left by a dead process and rebuilds the derived
 * state; the caller holds the lock (EOWNERDEAD).  0, or -1 (EUCLEAN) when
 * a journal entry points outside the heap or the blocks do not tile it. */
int sc_shm_repair(sc_shared_arena *s);
/* The checker behind sicm_arena_check(); the caller holds the lock. */
int sc_shm_check_locked(sc_shared_arena *s, sicm_heap_report *report);

/* ---- shared_ops.c ---- */
extern const sc_arena_ops sc_shm_ops;
/* The binding every process follows, read from the segment's header; 0,
 * or -1 (EUCLEAN) for a policy libsicm never writes. */
int sc_shm_binding_read(const sc_shm_header *h, sc_binding *b);
void sc_shm_binding_write(sc_shm_header *h, const sc_binding *b);
/* Makes a mapped segment (of the object *st) a live arena of this process. */
sicm_arena sc_shm_register(const sc_shared_arena *segment, const sc_binding *binding,
                           const struct stat *st);

/* ---- shared_segment.c ---- */
/* Fault injection for the crash tests only: the creating process kills
 * itself at `step` of sicm_arena_create_shared(): 0 right after creating
 * the object (empty, before its creation lock), 1 with the lock taken,
 * 2 with the object sized and mapped, 3 with the heap laid out but the
 * magic not written.  -1: never. */
void sc_shm_crash_in_create(int step);
/* Fault injection for the creation race test only: random pauses of up to
 * max_us microseconds where creation can race another creator's reclaim
 * (before the creation lock, before binding, and in a reclaim holding the
 * lock).  0: none. */
void sc_shm_delay_in_create(unsigned max_us);
/* Around fork() (init.c registers the handlers): the attach lock, taken
 * before the arena layer's. */
void sc_shared_fork_lock(void);
void sc_shared_fork_unlock(void);
/* In the child, after the unlock: the thread caches it inherited go. */
void sc_shared_fork_child(void);

#endif /* SC_SHARED_H */
