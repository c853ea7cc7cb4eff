/* SPDX-License-Identifier: BSD-3-Clause */
/* preload_place.c: which device takes a large allocation (the tiers), and
 * the table of live placed blocks; a site's own arenas are
 * preload_sites.c's.  A tier takes a block when its live bytes stay within
 * its budget and its node keeps `reserve` bytes free (the node's free
 * memory, plus what the tier's arena holds but has not handed out); else
 * the next tier is tried, and after the last the caller uses the process
 * allocator.  Arenas are bound PREFERRED, so a node that fills up between
 * two checks spills page by page instead of meeting the OOM killer.
 *
 * The table maps each placed block to its size and tier: it keeps the
 * accounting exact, and turns a double or wild free of arena memory into
 * an abort with a message (as glibc's free does) instead of corruption.
 * What placement counts is printed by preload_stats.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "preload.h"

pthread_mutex_t pl_lock = PTHREAD_MUTEX_INITIALIZER;
#define PL_FREE_REFRESH_NS 20000000ull /* 20 ms */

/* ---------------------------------------------------------------- table */

typedef struct pl_entry {
  uintptr_t key;  /* 0: empty; 1: deleted */
  size_t size;
  unsigned tier;
} pl_entry;

static pl_entry *table;
static size_t table_cap, table_used; /* used counts deleted slots too */

static size_t slot_of(uintptr_t key, size_t cap) {
  uint64_t h = (uint64_t)key * 0x9e3779b97f4a7c15ull;
  return (size_t)(h >> 20) & (cap - 1);
}

/* Under pl_lock. */
static pl_entry *table_find(uintptr_t key) {
  if (table == NULL)
    return NULL;
  for (size_t i = slot_of(key, table_cap);; i = (i + 1) & (table_cap - 1)) {
    if (table[i].key == key)
      return &table[i];
    if (table[i].key == 0)
      return NULL;
  }
}

/* Under pl_lock.  The table lives in its own mapping: the process
 * allocator may be the caller. */
static int table_insert(uintptr_t key, size_t size, unsigned tier) {
  if ((table_used + 1) * 2 > table_cap) {
    size_t cap = table_cap ? table_cap * 2 : 4096;
    size_t live = 0;
    for (size_t i = 0; i < table_cap; i++)
      live += table[i].key > 1;
    while (live * 4 < cap && cap > 4096 && cap > table_cap / 2)
      cap /= 2; /* mostly deleted slots: rebuild at a smaller size */
    pl_entry *grown = mmap(NULL, cap * sizeof *grown, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (grown == MAP_FAILED)
      return -1;
    for (size_t i = 0; i < table_cap; i++) {
      if (table[i].key <= 1)
        continue;
      size_t j = slot_of(table[i].key, cap);
      while (grown[j].key != 0)
        j = (j + 1) & (cap - 1);
      grown[j] = table[i];
    }
    if (table != NULL)
      munmap(table, table_cap * sizeof *table);
    table = grown;
    table_cap = cap;
    table_used = live;
  }
  size_t i = slot_of(key, table_cap);
  while (table[i].key > 1)
    i = (i + 1) & (table_cap - 1);
  table_used += table[i].key == 0;
  table[i] = (pl_entry){key, size, tier};
  return 0;
}

/* ---------------------------------------------------------------- tiers */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Free bytes of the tier's nodes: read again when the last reading is old
 * or an eighth of it was placed since; in between, the reading minus what
 * was placed. */
static size_t tier_free(pl_tier *t) {
  uint64_t now = now_ns(), read = __atomic_load_n(&t->read_ns, __ATOMIC_RELAXED);
  size_t at = __atomic_load_n(&t->free_at_read, __ATOMIC_RELAXED);
  size_t since = __atomic_load_n(&t->placed_since_read, __ATOMIC_RELAXED);
  if (read == 0 || now - read > PL_FREE_REFRESH_NS || since > at / 8) {
    size_t bytes = 0, one;
    for (unsigned i = 0; i < t->ndevices; i++) {
      if (sicm_device_get_free_bytes(t->devices[i], &one) != 0)
        return SIZE_MAX / 2; /* the kernel does not say: the policy's fallback is the guard */
      bytes += one;
    }
    __atomic_store_n(&t->free_at_read, bytes, __ATOMIC_RELAXED);
    __atomic_store_n(&t->placed_since_read, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&t->read_ns, now, __ATOMIC_RELAXED);
    at = bytes;
    since = 0;
  }
  return at > since ? at - since : 0;
}

static int tier_fits(pl_tier *t, size_t size) {
  size_t live = __atomic_load_n(&t->live, __ATOMIC_RELAXED);
  if (t->budget != SIZE_MAX && (size > t->budget || live > t->budget - size))
    return 0;
  sicm_arena arena = __atomic_load_n(&t->arena, __ATOMIC_ACQUIRE);
  size_t held = arena ? sicm_arena_size(arena) : 0;
  size_t room = tier_free(t) + (held > live ? held - live : 0);
  return room >= pl_conf.reserve && room - pl_conf.reserve >= size;
}

static sicm_arena tier_arena(pl_tier *t) {
  sicm_arena arena = __atomic_load_n(&t->arena, __ATOMIC_ACQUIRE);
  if (arena != NULL || t->arena_failed)
    return arena;
  pthread_mutex_lock(&pl_lock);
  arena = t->arena;
  if (arena == NULL && !t->arena_failed) {
    arena = sicm_arena_create_devices(0, t->devices, (int)t->ndevices,
                                      t->flags | pl_conf.page_flags);
    if (arena == NULL) {
      t->arena_failed = 1;
      pl_warn("could not create an arena; that device is skipped: ", sicm_error_detail());
    }
    __atomic_store_n(&t->arena, arena, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&pl_lock);
  return arena;
}

/* Whether `arena` is one of the preload's own (a tier's or a site's). */
static int arena_is_ours(sicm_arena arena) {
  for (unsigned i = 0; i < pl_conf.ntiers; i++)
    if (__atomic_load_n(&pl_conf.tiers[i].arena, __ATOMIC_ACQUIRE) == arena)
      return 1;
  return pl_sites_own(arena);
}

/* A block of `size` bytes joins tier `tier`: a new placement, or the
 * result of a resize (which counts as live memory only). */
static void tier_account(pl_tier *t, size_t size, unsigned tier, int new_placement) {
  size_t live = __atomic_add_fetch(&t->live, size, __ATOMIC_RELAXED);
  size_t peak = __atomic_load_n(&t->peak, __ATOMIC_RELAXED);
  while (live > peak &&
         !__atomic_compare_exchange_n(&t->peak, &peak, live, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    ;
  pl_stat_add(&t->placed_since_read, size);
  if (!new_placement)
    return;
  pl_stat_add(&t->placed_bytes, size);
  pl_stat_add(&t->placed_count, 1);
  if (tier > 0) {
    pl_stat_add(&t->spilled_bytes, size);
    pl_stat_add(&t->spilled_count, 1);
  }
}

static void range_extend(uintptr_t lo, uintptr_t hi) {
  uintptr_t cur = __atomic_load_n(&pl_fast.range_lo, __ATOMIC_RELAXED);
  while (lo < cur &&
         !__atomic_compare_exchange_n(&pl_fast.range_lo, &cur, lo, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
    ;
  cur = __atomic_load_n(&pl_fast.range_hi, __ATOMIC_RELAXED);
  while (hi > cur &&
         !__atomic_compare_exchange_n(&pl_fast.range_hi, &cur, hi, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
    ;
}

/* Record a block the arena of tier `tier` returned; on failure it is
 * given back and NULL returned. */
static void *block_record(void *p, unsigned tier, int new_placement) {
  size_t size = sicm_usable_size(p);
  pthread_mutex_lock(&pl_lock);
  int rc = table_insert((uintptr_t)p, size, tier);
  pthread_mutex_unlock(&pl_lock);
  if (rc != 0) {
    sicm_free(p);
    return NULL;
  }
  tier_account(&pl_conf.tiers[tier], size, tier, new_placement);
  range_extend((uintptr_t)p, (uintptr_t)p + size);
  return p;
}

void *pl_place(size_t size, size_t align, int zero) {
  int saved = errno;
  uint64_t site = pl_conf.site_depth ? pl_site_hash() : 0;
  for (unsigned i = 0; i < pl_conf.ntiers; i++) {
    pl_tier *t = &pl_conf.tiers[i];
    if (!tier_fits(t, size))
      continue;
    sicm_arena arena = site ? pl_site_arena(site, i) : NULL;
    if (arena == NULL)
      arena = tier_arena(t);
    if (arena == NULL)
      continue;
    void *p = align ? sicm_arena_aligned_alloc(arena, align, size)
              : zero ? sicm_arena_calloc(arena, 1, size)
                     : sicm_arena_alloc(arena, size);
    if (p != NULL && (p = block_record(p, i, 1)) != NULL) {
      errno = saved;
      return p;
    }
  }
  pl_stats_fallback(size);
  errno = saved;
  return NULL;
}

static _Noreturn void invalid_pointer(const char *caller, const void *ptr) {
  pl_text t = {.len = 0};
  pl_text_str(&t, "libsicm-preload: ");
  pl_text_str(&t, caller);
  pl_text_str(&t, "(): invalid pointer (not a live block of its arena) ");
  pl_text_hex(&t, (uintptr_t)ptr);
  pl_text_str(&t, "\n");
  pl_text_flush(&t, 2);
  abort();
}

size_t pl_block_size(const void *ptr, sicm_arena arena, const char *caller) {
  pthread_mutex_lock(&pl_lock);
  pl_entry *e = table_find((uintptr_t)ptr);
  size_t size = e ? e->size : 0;
  pthread_mutex_unlock(&pl_lock);
  if (size != 0)
    return size;
  if (arena_is_ours(arena))
    invalid_pointer(caller, ptr);
  return 0; /* an arena the program made itself: not ours to judge */
}

/* Remove a block from the table; its entry, or {0} when absent. */
static pl_entry block_forget(const void *ptr) {
  pl_entry out = {0, 0, 0};
  pthread_mutex_lock(&pl_lock);
  pl_entry *e = table_find((uintptr_t)ptr);
  if (e != NULL) {
    out = *e;
    e->key = 1;
  }
  pthread_mutex_unlock(&pl_lock);
  if (out.key != 0)
    __atomic_fetch_sub(&pl_conf.tiers[out.tier].live, out.size, __ATOMIC_RELAXED);
  return out;
}

void pl_release(void *ptr) {
  pl_entry e = block_forget(ptr);
  if (e.key == 0)
    invalid_pointer("free", ptr); /* freed by another thread since the check */
  if (pl_conf.stats)
    pl_stats_freed(ptr, e.size);
  sicm_free_named(ptr, "free");
}

void *pl_resize(void *ptr, size_t size) {
  pthread_mutex_lock(&pl_lock);
  pl_entry *e = table_find((uintptr_t)ptr);
  pl_entry old = e ? *e : (pl_entry){0, 0, 0};
  pthread_mutex_unlock(&pl_lock);
  if (old.key == 0)
    invalid_pointer("realloc", ptr);
  pl_tier *t = &pl_conf.tiers[old.tier];
  if (size > old.size && !tier_fits(t, size - old.size))
    return NULL;
  int saved = errno;
  void *p = sicm_realloc_named(ptr, size, "realloc");
  errno = saved;
  if (p == NULL)
    return NULL;
  block_forget(ptr);
  /* NULL only when the table cannot grow: the block is gone, as for a failed malloc. */
  return block_record(p, old.tier, 0);
}
