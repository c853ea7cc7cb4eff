/* SPDX-License-Identifier: BSD-3-Clause */
/* preload_sites.c: with sites=N, the arenas of each allocation site — the
 * hash of the N return addresses above the preload's own frames names a
 * site, and each site gets an arena of its own on each tier, made on first
 * use, named site-HASH and flagged for the placer.  Past PL_SITES_MAX
 * sites the tier's own arena takes the rest. */
#define _GNU_SOURCE
#include <execinfo.h>
#include <link.h>
#include <stdio.h>

#include "preload.h"

typedef struct pl_site {
  uint64_t hash;                 /* 0: empty */
  sicm_arena arena[PL_TIERS_MAX];
  int failed[PL_TIERS_MAX];
} pl_site;

static pl_site sites[PL_SITES_MAX * 2]; /* open addressing, at most half full */
static unsigned sites_used;

/* The preload's own code, whose frames a site's call stack skips. */
static uintptr_t self_lo = UINTPTR_MAX, self_hi;

static int self_find(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  uintptr_t here = (uintptr_t)arg;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && here - lo < hi - lo) {
      self_lo = lo;
      self_hi = hi;
      return 1;
    }
  }
  return 0;
}

uint64_t pl_site_hash(void) {
  enum { OWN_FRAMES_MAX = 6 };
  void *frames[OWN_FRAMES_MAX + PL_SITE_DEPTH_MAX];
  int n = backtrace(frames, OWN_FRAMES_MAX + (int)pl_conf.site_depth);
  int i = 0;
  while (i < n && (uintptr_t)frames[i] - self_lo < self_hi - self_lo)
    i++;
  uint64_t h = 1469598103934665603ull;
  for (int end = i + (int)pl_conf.site_depth; i < n && i < end; i++)
    h = (h ^ (uint64_t)(uintptr_t)frames[i]) * 1099511628211ull;
  return h ? h : 1;
}

sicm_arena pl_site_arena(uint64_t hash, unsigned tier) {
  pthread_mutex_lock(&pl_lock);
  pl_site *site = NULL;
  for (unsigned i = (unsigned)(hash % (PL_SITES_MAX * 2));; i = (i + 1) % (PL_SITES_MAX * 2)) {
    if (sites[i].hash == hash || sites[i].hash == 0) {
      site = &sites[i];
      break;
    }
  }
  if (site->hash == 0 && sites_used < PL_SITES_MAX) {
    site->hash = hash;
    sites_used++;
  }
  sicm_arena arena = NULL;
  if (site->hash == hash && !site->failed[tier]) {
    arena = site->arena[tier];
    if (arena == NULL) {
      pl_tier *t = &pl_conf.tiers[tier];
      arena = sicm_arena_create_devices(0, t->devices, (int)t->ndevices,
                                        t->flags | pl_conf.page_flags | SICM_ARENA_AUTOPLACE);
      char name[SICM_ARENA_NAME_MAX];
      pl_text text = {.len = 0};
      pl_text_str(&text, "site-");
      pl_text_hex(&text, hash & 0xffffffffffffull);
      snprintf(name, sizeof name, "%.*s", (int)text.len, text.buf);
      if (arena != NULL)
        sicm_arena_set_name(arena, name);
      site->failed[tier] = arena == NULL;
      site->arena[tier] = arena;
    }
  }
  pthread_mutex_unlock(&pl_lock);
  return arena;
}

int pl_sites_own(sicm_arena arena) {
  int ours = 0;
  pthread_mutex_lock(&pl_lock);
  for (unsigned i = 0; i < PL_SITES_MAX * 2 && !ours; i++)
    for (unsigned t = 0; t < pl_conf.ntiers && !ours; t++)
      ours = sites[i].hash && sites[i].arena[t] == arena;
  pthread_mutex_unlock(&pl_lock);
  return ours;
}

void pl_sites_warm(void) {
  void *frame;
  if (!pl_conf.site_depth)
    return;
  dl_iterate_phdr(self_find, (void *)(uintptr_t)&pl_site_hash);
  backtrace(&frame, 1); /* loads the unwinder now, not inside a malloc */
}
