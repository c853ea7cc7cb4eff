/* SPDX-License-Identifier: BSD-3-Clause */
/* arena_check.c: the checking mode (SICM_CHECK=1, or a build configured
 * --enable-checking) — every block the entry points hand out is recorded
 * live, and a free or resize of anything else stops the process with one
 * line naming the call and the pointer, then abort(): a double free, an
 * address inside a block, a pointer no arena allocated, a block of an
 * arena destroyed since.  That is what jemalloc's debug build and
 * mimalloc's secure mode do for their users.  In this mode the thread's
 * front is never set, so the header's inline path and the called path
 * both reach the entry points; off, nothing here runs.
 *
 * The record is one open-addressed table of block addresses, each with
 * its arena's slot and generation, under one lock: the mode is for
 * finding bugs, not for speed. */
#include <stdio.h>
#include <stdlib.h>

#include "arena.h"
#include "config.h"

#ifdef SICM_ALWAYS_CHECK
int sc_check_on = 1;
#else
int sc_check_on;
#endif

typedef struct live_block {
  uintptr_t ptr;                /* 0: empty; TOMBSTONE: removed */
  uint64_t generation;          /* of the arena that allocated it */
} live_block;

#define TOMBSTONE ((uintptr_t)1)

static pthread_mutex_t check_lock = PTHREAD_MUTEX_INITIALIZER;
static live_block *blocks;
static size_t capacity, used; /* used counts tombstones too */

void sc_check_setup(void) {
#ifndef SICM_ALWAYS_CHECK
  if (sc_env_switch("SICM_CHECK", 0))
    __atomic_store_n(&sc_check_on, 1, __ATOMIC_RELEASE);
#endif
}

static size_t slot_of(uintptr_t p, size_t cap) {
  return (size_t)((p >> 4) * 0x9E3779B97F4A7C15ull) & (cap - 1);
}

static live_block *find(uintptr_t p) {
  size_t i = capacity ? slot_of(p, capacity) : 0;
  for (size_t n = 0; n < capacity; n++, i = (i + 1) & (capacity - 1)) {
    if (blocks[i].ptr == p)
      return &blocks[i];
    if (blocks[i].ptr == 0)
      return NULL;
  }
  return NULL;
}

static _Noreturn void stop(const char *call, const void *ptr, const char *what) {
  fprintf(stderr, "libsicm: SICM_CHECK: %s(%p): %s\n", call, ptr, what);
  abort();
}

/* Room for one more; out of memory stops the process, since the record
 * could no longer tell a good free from a bad one. */
static void reserve(void) {
  if (used + 1 <= capacity / 2)
    return;
  size_t grown_cap = capacity ? capacity * 2 : 4096;
  live_block *old = blocks, *grown = calloc(grown_cap, sizeof *grown);
  if (grown == NULL)
    stop("sicm_arena_alloc", NULL, "out of memory for the record of live blocks");
  size_t old_cap = capacity;
  blocks = grown;
  capacity = grown_cap;
  used = 0;
  for (size_t i = 0; i < old_cap; i++)
    if (old[i].ptr > TOMBSTONE) {
      size_t j = slot_of(old[i].ptr, capacity);
      while (blocks[j].ptr != 0)
        j = (j + 1) & (capacity - 1);
      blocks[j] = old[i];
      used++;
    }
  free(old);
}

void sc_check_born(const void *ptr, uint64_t generation) {
  uintptr_t p = (uintptr_t)ptr;
  pthread_mutex_lock(&check_lock);
  live_block *b = find(p);
  if (b == NULL) {
    reserve();
    size_t i = slot_of(p, capacity);
    while (blocks[i].ptr > TOMBSTONE)
      i = (i + 1) & (capacity - 1);
    used += blocks[i].ptr == 0;
    b = &blocks[i];
  }
  *b = (live_block){p, generation}; /* an address a destroyed arena had: now this block's */
  pthread_mutex_unlock(&check_lock);
}

/* Why ptr, not live, was given to a free or resize. */
static const char *why_not_live(const void *ptr) {
  uint64_t generation;
  sc_arena *a = sc_arena_of_ptr(ptr, &generation);
  if (a == NULL)
    return "no arena allocated it (another allocator's, the stack, static data, or an arena "
           "destroyed since)";
  if (a->ops->usable_size(a, ptr) == 0)
    return "inside an arena but no block starts there (an interior pointer)";
  return "not a live block: freed already (a double free)";
}

/* A shared arena's blocks are allocated and freed by every process that
 * attached it: its kind (ops->block_where), not this process's record,
 * says which are live. */
static int shared_dies(sc_arena *a, const void *ptr, const char *call) {
  if (a == NULL || a->ops->block_where == NULL)
    return 0;
  pthread_mutex_lock(&check_lock);
  live_block *b = find((uintptr_t)ptr);
  if (b != NULL)
    b->ptr = TOMBSTONE;
  pthread_mutex_unlock(&check_lock);
  int where = a->ops->block_where(a, ptr);
  if (where == SC_BLOCK_INSIDE)
    stop(call, ptr, "inside a block of a shared arena, not its start (an interior pointer)");
  if (where != SC_BLOCK_START)
    stop(call, ptr, "not a live block of the shared arena: freed already (a double free)");
  return 1;
}

void sc_check_dies(const void *ptr, const char *call) {
  uint64_t owner_generation;
  if (shared_dies(sc_arena_of_ptr(ptr, &owner_generation), ptr, call))
    return;
  uintptr_t p = (uintptr_t)ptr;
  pthread_mutex_lock(&check_lock);
  live_block *b = find(p);
  int live = b != NULL;
  if (live) {
    uint64_t generation;
    sc_arena *a = sc_arena_of_ptr(ptr, &generation);
    live = a != NULL && generation == b->generation;
    b->ptr = TOMBSTONE;
  }
  pthread_mutex_unlock(&check_lock);
  if (!live)
    stop(call, ptr, why_not_live(ptr));
}

void sc_check_fork_lock(void) { pthread_mutex_lock(&check_lock); }
void sc_check_fork_unlock(void) { pthread_mutex_unlock(&check_lock); }
