/* SPDX-License-Identifier: BSD-3-Clause */
/* shared_ops.c: the shared kind's operations table — an attached segment
 * made a live arena of this process, the heap of shared_heap.c behind the
 * thread caches of shared_cache.c, statistics, the binding every process
 * follows (kept in the segment's header), pages mapped for migration, and
 * placement shared by all processes (shared_autoplace.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <numaif.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "shared.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

int sc_shm_binding_read(const sc_shm_header *h, sc_binding *b) {
  memset(b, 0, sizeof *b);
  b->policy = h->policy;
  if (b->policy != MPOL_BIND && b->policy != MPOL_PREFERRED && !sc_policy_interleaves(b->policy) &&
      b->policy != MPOL_PREFERRED_MANY)
    return sc_shm_damaged("memory policy", (uint64_t)(uint32_t)b->policy);
  for (unsigned i = 0; i < h->nnodes && i < SICM_ARENA_DEVICES_MAX; i++) {
    int node = h->nodes[i];
    if (node < 0 || node >= SC_NODES_MAX)
      continue;
    sc_nodemask_add(&b->nodes, node);
    sicm_device *dev = sicm_device_of_node(node, 0);
    if (dev != NULL)
      b->devices[b->ndevices++] = dev;
  }
  return 0;
}

void sc_shm_binding_write(sc_shm_header *h, const sc_binding *b) {
  h->policy = b->policy;
  h->nnodes = b->ndevices;
  for (unsigned i = 0; i < b->ndevices; i++)
    h->nodes[i] = b->devices[i]->node;
}

typedef struct shared_open_arg {
  const sc_shared_arena *segment; /* header and bounds */
  const struct stat *st;
} shared_open_arg;

_Static_assert(sizeof(sc_shared_arena) <= SC_ARENA_KIND_DATA, "sc_shared_arena outgrew kind_data");

static int shared_open(sc_arena *a, void *arg) {
  const shared_open_arg *o = arg;
  sc_shared_arena *s = sc_shared_of(a);
  *s = *o->segment;
  s->dev = (uint64_t)o->st->st_dev;
  s->ino = (uint64_t)o->st->st_ino;
  a->held = a->maxsize;
  sc_window_adopt(a, s->header, s->size);
  return 0;
}

/* Makes a mapped segment a live arena of this process. */
sicm_arena sc_shm_register(const sc_shared_arena *segment, const sc_binding *binding,
                                  const struct stat *st) {
  shared_open_arg arg = {segment, st};
  sc_arena_config config = {.ops = &sc_shm_ops, .binding = binding, .maxsize = segment->size,
                            .kind_arg = &arg};
  return sc_arena_create(&config);
}

/* Maps here every page of the segment other processes touched. */
static int shared_pages_map(sc_arena *a) {
  sc_shared_arena *s = sc_shared_of(a);
  return sc_resident_runs((char *)s->header, s->size, sc_populate_run, NULL) < 0 ? -1 : 0;
}

static int shared_binding_load(sc_arena *a) {
  sc_shared_arena *s = sc_shared_of(a);
  if (sc_shm_lock(s) != 0)
    return -1;
  sc_binding b;
  int rc = sc_shm_binding_read(s->header, &b);
  int err = errno;
  sc_shm_unlock(s);
  if (rc != 0) {
    errno = err;
    return -1;
  }
  pthread_mutex_lock(&a->window_lock);
  sc_arena_binding_set(a, &b);
  pthread_mutex_unlock(&a->window_lock);
  return 0;
}

/* Two processes moving the arena at once would leave its pages split
 * between their targets and the header naming one of them. */
static int shared_move_begin(sc_arena *a) {
  sc_shared_arena *s = sc_shared_of(a);
  if (sc_shm_migrate_lock(s) != 0)
    return -1;
  if (shared_binding_load(a) != 0 || shared_pages_map(a) != 0) {
    int err = errno;
    sc_shm_migrate_unlock(s);
    errno = err;
    return -1;
  }
  return 0;
}

/* Records the new binding in the header, for every process. */
static int shared_move_end(sc_arena *a, int moved) {
  sc_shared_arena *s = sc_shared_of(a);
  int rc = moved ? sc_shm_lock(s) : 0;
  if (moved && rc == 0) {
    pthread_mutex_lock(&a->window_lock);
    sc_shm_binding_write(s->header, &a->binding);
    pthread_mutex_unlock(&a->window_lock);
    sc_shm_unlock(s);
  }
  sc_shm_migrate_unlock(s);
  return rc;
}

static int shared_stats(sc_arena *a, sicm_arena_stats *out) {
  sc_shared_arena *s = sc_shared_of(a);
  sc_shm_header *h = s->header;
  long resident = sc_resident_runs((char *)s->header, s->size, NULL, NULL);
  if (resident < 0 || sc_shm_lock(s) != 0)
    return -1;
  out->allocated = h->bytes_used - h->blocks_used * SC_SHM_BLOCK_HEADER;
  out->active = s->heap_begin + h->bytes_used;
  sc_shm_unlock(s);
  out->resident = (size_t)resident * sc_page_size();
  out->mapped = out->held = out->maxsize = s->size;
  return 0;
}

/* Detach: the windows (the segment's mapping) go; the segment lives on for
 * the other processes. */
static int shared_close(sc_arena *a) {
  sc_shm_cache_close(a);
  sc_shm_placer_release(a);
  return 0;
}

const sc_arena_ops sc_shm_ops = {
    .open = shared_open,
    .close = shared_close,
    .alloc = sc_shm_cache_alloc,
    .free = sc_shm_cache_free,
    .realloc = sc_shm_cache_realloc,
    .usable_size = sc_shm_heap_usable_size,
    .usable_for = sc_shm_heap_usable_for,
    .stats = shared_stats,
    .pages_map = shared_pages_map,
    .binding_load = shared_binding_load,
    .move_begin = shared_move_begin,
    .move_end = shared_move_end,
    .move_flag = MPOL_MF_MOVE_ALL, /* pages other processes map too */
    .rate_share = sc_shm_rate_share,
    .placer_claim = sc_shm_placer_claim,
    .placer_release = sc_shm_placer_release,
    .block_where = sc_shm_heap_where,
};
