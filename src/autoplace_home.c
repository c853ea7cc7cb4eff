/* SPDX-License-Identifier: BSD-3-Clause */
/* autoplace_home.c: the memory off the fast tier, as the placer sees it —
 * where an arena goes when it leaves the tier (its home), the devices an
 * ANYWHERE arena may live on, cheapest first, and how many of an arena's
 * resident bytes lie off the tier (a promotion that only partly fit is
 * judged by its pages, not by its binding); which arenas may lie on the
 * tier in part, and the tier's free memory. */
#include <numaif.h>
#include <stdlib.h>

#include "autoplace.h"

#define COUNTED_NODES 256

/* Capacity memory first, then by free bytes: where memory costs least. */
static int cheaper_first(const void *x, const void *y) {
  sicm_device *a = *(sicm_device *const *)x, *b = *(sicm_device *const *)y;
  int ca = a->kind == SICM_KIND_CAPACITY, cb = b->kind == SICM_KIND_CAPACITY;
  if (ca != cb)
    return cb - ca;
  size_t fa = 0, fb = 0;
  sicm_device_get_free_bytes(a, &fa);
  sicm_device_get_free_bytes(b, &fb);
  return fa < fb ? 1 : fa > fb ? -1 : a->node - b->node;
}

unsigned sc_autoplace_off_fast(const sc_nodemask *fast, sicm_device **out) {
  const sicm_device_list *all = sicm_devices();
  unsigned n = 0;
  for (unsigned i = 0; all != NULL && i < all->count && n < SICM_ARENA_DEVICES_MAX; i++) {
    sicm_device *d = &all->devices[i];
    if (!d->huge && !sc_nodemask_has(fast, d->node))
      out[n++] = d;
  }
  qsort(out, n, sizeof *out, cheaper_first);
  return n;
}

int sc_autoplace_bytes_off_fast(sicm_arena sa, const sc_nodemask *fast, uint64_t *off) {
  size_t bytes[COUNTED_NODES] = {0};
  if (sicm_arena_residency(sa, bytes, COUNTED_NODES) != 0)
    return -1;
  *off = 0;
  for (int node = 0; node < COUNTED_NODES; node++)
    if (!sc_nodemask_has(fast, node))
      *off += bytes[node];
  return 0;
}

int sc_autoplace_on_fast(const sc_nodemask *fast, sicm_device *const *devs, int n) {
  for (int i = 0; i < n; i++)
    if (!sc_nodemask_has(fast, devs[i]->node))
      return 0;
  return n > 0;
}

/* The placement flags that keep an arena's policy in a move; a
 * FIRST_TOUCH arena (MPOL_DEFAULT), which no move keeps, prefers its
 * devices: it may still spill anywhere, as before. */
static unsigned policy_flags(int policy) {
  return policy == MPOL_INTERLEAVE            ? SICM_ARENA_INTERLEAVE
         : policy == MPOL_WEIGHTED_INTERLEAVE ? SICM_ARENA_WEIGHTED
         : policy == MPOL_PREFERRED || policy == MPOL_PREFERRED_MANY || policy == MPOL_DEFAULT
             ? SICM_ARENA_PREFERRED
             : 0;
}

unsigned sc_autoplace_home(sc_arena *a, sicm_device *const *devs, int n, const sc_nodemask *fast,
                           sicm_device **home, unsigned *flags) {
  *flags = 0;
  if ((a->flags & SICM_ARENA_ANYWHERE) != 0) {
    unsigned count = sc_autoplace_off_fast(fast, home);
    if (count)
      return count;
  }
  if (!sc_autoplace_on_fast(fast, devs, n)) {
    for (int i = 0; i < n; i++)
      home[i] = devs[i];
    pthread_mutex_lock(&a->window_lock);
    *flags = policy_flags(a->binding.policy);
    pthread_mutex_unlock(&a->window_lock);
    return (unsigned)n;
  }
  sicm_rank_entry rank[64];
  int count = sicm_rank(SICM_RANK_NEAREST, SICM_INITIATOR_SELF, rank, 64, NULL);
  for (int i = 0; i < count && i < 64; i++)
    if (!rank[i].device->huge && !sc_nodemask_has(fast, rank[i].device->node)) {
      home[0] = rank[i].device;
      *flags = SICM_ARENA_PREFERRED;
      return 1;
    }
  return 0;
}

int sc_autoplace_splittable(const sc_arena *a) {
  return (a->flags & SICM_ARENA_ANYWHERE) == 0 && a->ops->placer_claim == NULL && !a->borrowed &&
         !a->huge_page;
}

uint64_t sc_autoplace_part_limit(sc_arena *a) {
  pthread_mutex_lock(&a->window_lock);
  uint64_t reach = a->nwindows ? a->windows[0].reach : 0;
  pthread_mutex_unlock(&a->window_lock);
  return reach;
}

uint64_t sc_autoplace_fast_free(const sicm_autoplace_config *c) {
  uint64_t free_bytes = 0;
  for (unsigned i = 0; i < c->ndevices; i++) {
    size_t f;
    if (sicm_device_get_free_bytes(c->devices[i], &f) == 0)
      free_bytes += f;
  }
  return free_bytes;
}
