/* SPDX-License-Identifier: BSD-3-Clause */
/* sicm_mpi_blocks.c: the record of the blocks libsicm-mpi handed out from
 * the arenas hints made, so that MPI_Free_mem frees each once: a second
 * free of the block freed last would otherwise pass every check the
 * allocator can make in O(1), free it again and, as the arena's last
 * block, destroy the arena under its live ones.  In the checking mode
 * (SICM_CHECK) freed blocks stay in the record until their address is
 * handed out again, so that a free after the arena is gone is named too.
 * One open-addressed table under one lock: MPI_Alloc_mem is no hot path. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>

#include "config.h"
#include "../base_settings.h"
#include "sicm_mpi.h"

enum { SLOT_EMPTY, SLOT_LIVE, SLOT_FREED, SLOT_GONE };

typedef struct block_slot {
  uintptr_t ptr;
  int state;
} block_slot;

static pthread_mutex_t blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static block_slot *slots;
static size_t capacity, used; /* used counts SLOT_GONE too */

int check_mode(void) {
#ifdef SICM_ALWAYS_CHECK
  return 1;
#else
  static int mode = -1; /* racing first calls store the same value */
  int m = __atomic_load_n(&mode, __ATOMIC_RELAXED);
  if (m < 0) {
    const char *value = getenv("SICM_CHECK");
    m = value != NULL && sc_setting_bool(value, &m) == 0 && m;
    __atomic_store_n(&mode, m, __ATOMIC_RELAXED);
  }
  return m;
#endif
}

void check_stop(const void *ptr, const char *why) {
  if (!check_mode())
    return;
  fprintf(stderr, "libsicm: SICM_CHECK: MPI_Free_mem(%p): %s\n", ptr, why);
  abort();
}

static size_t slot_of(uintptr_t p, size_t cap) {
  return (size_t)((p >> 4) * 0x9E3779B97F4A7C15ull) & (cap - 1);
}

/* The slot of p, or NULL; under blocks_lock. */
static block_slot *find(uintptr_t p) {
  for (size_t i = capacity ? slot_of(p, capacity) : 0, n = 0; n < capacity;
       n++, i = (i + 1) & (capacity - 1)) {
    if (slots[i].state == SLOT_EMPTY)
      return NULL;
    if (slots[i].ptr == p && slots[i].state != SLOT_GONE)
      return &slots[i];
  }
  return NULL;
}

/* Room for one more entry; 0, or -1 out of memory.  Under blocks_lock. */
static int reserve(void) {
  if (used + 1 <= capacity / 2)
    return 0;
  size_t grown_cap = capacity ? capacity * 2 : 1024, old_cap = capacity;
  block_slot *old = slots, *grown = calloc(grown_cap, sizeof *grown);
  if (grown == NULL)
    return -1;
  slots = grown;
  capacity = grown_cap;
  used = 0;
  for (size_t i = 0; i < old_cap; i++)
    if (old[i].state == SLOT_LIVE || old[i].state == SLOT_FREED) {
      size_t j = slot_of(old[i].ptr, capacity);
      while (slots[j].state != SLOT_EMPTY)
        j = (j + 1) & (capacity - 1);
      slots[j] = old[i];
      used++;
    }
  free(old);
  return 0;
}

int blocks_born(const void *ptr) {
  uintptr_t p = (uintptr_t)ptr;
  pthread_mutex_lock(&blocks_lock);
  block_slot *b = find(p);
  int rc = 0;
  if (b == NULL && (rc = reserve()) == 0) {
    size_t i = slot_of(p, capacity);
    while (slots[i].state == SLOT_LIVE || slots[i].state == SLOT_FREED)
      i = (i + 1) & (capacity - 1);
    used += slots[i].state == SLOT_EMPTY;
    b = &slots[i];
  }
  if (b != NULL)
    *b = (block_slot){p, SLOT_LIVE};
  pthread_mutex_unlock(&blocks_lock);
  return rc;
}

int blocks_dies(const void *ptr) {
  pthread_mutex_lock(&blocks_lock);
  block_slot *b = find((uintptr_t)ptr);
  int state = b == NULL ? BLOCK_UNKNOWN : b->state == SLOT_LIVE ? BLOCK_LIVE : BLOCK_FREED;
  if (b != NULL)
    b->state = check_mode() ? SLOT_FREED : SLOT_GONE;
  pthread_mutex_unlock(&blocks_lock);
  return state;
}

void blocks_reused(const void *ptr) {
  pthread_mutex_lock(&blocks_lock);
  block_slot *b = find((uintptr_t)ptr);
  if (b != NULL)
    b->state = SLOT_GONE;
  pthread_mutex_unlock(&blocks_lock);
}
