/* SPDX-License-Identifier: BSD-3-Clause */
/* intent_allocator.c: allocators by intent, after OpenMP 5.0/5.1 memory management
 * — a memory space mapped to devices through the device ranking, traits
 * (alignment, pool size, fallback, partition, access, sync hint), backed by
 * arenas of their own so that their memory can be migrated. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"

struct sicm_allocator {
  sicm_memspace space;
  size_t alignment;             /* 0: none */
  sc_pool pool;                 /* of its arenas, counted by the arena layer */
  uintptr_t fallback;
  sicm_allocator *fb_data;
  uintptr_t partition;
  unsigned narenas;
  sicm_arena arenas[SICM_ARENA_DEVICES_MAX];
  int arena_nodes[SICM_ARENA_DEVICES_MAX];
  sicm_device *devices[SICM_ARENA_DEVICES_MAX];
  unsigned ndevices;
};

/* Requests at least this large first check that the space's devices have
 * room: a strictly bound page that cannot be placed means the OOM killer,
 * not a NULL from the allocator. */
#define ROOM_CHECK_MIN ((size_t)1 << 20)
#define ROOM_MARGIN ((size_t)32 << 20)

static int device_by_capacity(const void *a, const void *b) {
  const sicm_device *x = *(sicm_device *const *)a, *y = *(sicm_device *const *)b;
  if (x->capacity != y->capacity)
    return x->capacity > y->capacity ? -1 : 1;
  return x->node - y->node;
}

/* Devices of one kind, base pages, in the order of `by` from initiator. */
static unsigned devices_of_kind(sicm_device_kind kind, sicm_rank_by by, int initiator,
                                sicm_device **out, unsigned max) {
  sicm_rank_entry order[SICM_ARENA_DEVICES_MAX * 4];
  int n = sicm_rank(by, initiator, order, sizeof order / sizeof order[0], NULL);
  unsigned count = 0;
  for (int i = 0; i < n && i < (int)(sizeof order / sizeof order[0]); i++)
    if (!order[i].device->huge && order[i].device->kind == kind && count < max)
      out[count++] = order[i].device;
  return count;
}

int sicm_memspace_devices(sicm_memspace space, int initiator, sicm_device **out, unsigned max) {
  const sicm_device_list *list = sicm_devices();
  if (list == NULL)
    return -1;
  if (out == NULL && max > 0)
    return sc_fail(EINVAL, "sicm_memspace_devices: out is NULL");
  int node = initiator == SICM_INITIATOR_SELF ? sicm_node_self() : initiator;
  if (sicm_rank(SICM_RANK_NEAREST, node, NULL, 0, NULL) < 0)
    return -1; /* not a node with CPUs */
  sicm_device *found[SICM_ARENA_DEVICES_MAX];
  unsigned n = 0;
  sicm_rank_entry first;
  switch (space) {
  case SICM_MEMSPACE_DEFAULT:
  case SICM_MEMSPACE_CONST:
    found[0] = sicm_device_of_node(node, 0);
    n = found[0] != NULL;
    break;
  case SICM_MEMSPACE_LARGE_CAP:
    n = devices_of_kind(SICM_KIND_CAPACITY, SICM_RANK_CAPACITY, node, found, SICM_ARENA_DEVICES_MAX);
    if (n == 0 && sicm_rank(SICM_RANK_CAPACITY, node, &first, 1, NULL) > 0)
      found[n++] = first.device;
    qsort(found, n, sizeof *found, device_by_capacity);
    break;
  case SICM_MEMSPACE_HIGH_BW:
    n = devices_of_kind(SICM_KIND_HBM, SICM_RANK_BANDWIDTH, node, found, SICM_ARENA_DEVICES_MAX);
    break;
  case SICM_MEMSPACE_LOW_LAT:
    if (sicm_rank(SICM_RANK_LATENCY, node, &first, 1, NULL) > 0)
      found[n++] = first.device;
    break;
  default:
    return sc_fail(EINVAL, "unknown memory space %d", (int)space);
  }
  for (unsigned i = 0; i < n && i < max; i++)
    out[i] = found[i];
  return (int)n;
}

/* Checks one trait and stores it; 0 or -1 with errno. */
static int trait_apply(sicm_allocator *a, const sicm_alloctrait *t) {
  uintptr_t v = t->value;
  switch (t->key) {
  case SICM_ATK_SYNC_HINT:
    if (v == SICM_ATV_DEFAULT || (v >= SICM_ATV_CONTENDED && v <= SICM_ATV_PRIVATE))
      return 0;
    break;
  case SICM_ATK_ALIGNMENT:
    if (v == SICM_ATV_DEFAULT)
      return 0;
    if (v != 0 && (v & (v - 1)) == 0) {
      a->alignment = v;
      return 0;
    }
    return sc_fail(EINVAL, "alignment %zu is not a power of two", (size_t)v);
  case SICM_ATK_ACCESS:
    if (v == SICM_ATV_DEFAULT || (v >= SICM_ATV_ALL && v <= SICM_ATV_CGROUP))
      return 0; /* memory every thread can reach satisfies each of them */
    break;
  case SICM_ATK_POOL_SIZE:
    if (v == SICM_ATV_DEFAULT)
      return 0;
    if (v != 0) {
      a->pool.size = v;
      return 0;
    }
    return sc_fail(EINVAL, "pool size 0");
  case SICM_ATK_FALLBACK:
    if (v == SICM_ATV_DEFAULT || (v >= SICM_ATV_DEFAULT_MEM_FB && v <= SICM_ATV_ALLOCATOR_FB)) {
      a->fallback = v == SICM_ATV_DEFAULT ? SICM_ATV_DEFAULT_MEM_FB : v;
      return 0;
    }
    break;
  case SICM_ATK_FB_DATA:
    a->fb_data = (sicm_allocator *)v;
    return 0;
  case SICM_ATK_PINNED:
    if (v == SICM_ATV_DEFAULT || v == SICM_ATV_FALSE)
      return 0;
    if (v == SICM_ATV_TRUE)
      return sc_fail(ENOTSUP, "pinned memory is not supported");
    break;
  case SICM_ATK_PARTITION:
    if (v == SICM_ATV_BLOCKED)
      return sc_fail(ENOTSUP, "partition 'blocked' is not supported");
    if (v == SICM_ATV_DEFAULT || v == SICM_ATV_ENVIRONMENT || v == SICM_ATV_NEAREST ||
        v == SICM_ATV_INTERLEAVED) {
      a->partition = v == SICM_ATV_DEFAULT ? SICM_ATV_ENVIRONMENT : v;
      return 0;
    }
    break;
  default:
    return sc_fail(EINVAL, "unknown allocator trait %d", (int)t->key);
  }
  return sc_fail(EINVAL, "trait %d cannot take value %zu", (int)t->key, (size_t)v);
}

/* Devices of the space for this partition: a partitioned default space
 * spreads over every DRAM device. */
static int allocator_devices(sicm_allocator *a) {
  int n;
  if ((a->space == SICM_MEMSPACE_DEFAULT || a->space == SICM_MEMSPACE_CONST) &&
      a->partition != SICM_ATV_ENVIRONMENT)
    n = (int)devices_of_kind(SICM_KIND_DRAM, SICM_RANK_NEAREST, SICM_INITIATOR_SELF, a->devices,
                             SICM_ARENA_DEVICES_MAX);
  else
    n = sicm_memspace_devices(a->space, SICM_INITIATOR_SELF, a->devices, SICM_ARENA_DEVICES_MAX);
  if (n < 0)
    return -1;
  a->ndevices = (unsigned)n < SICM_ARENA_DEVICES_MAX ? (unsigned)n : SICM_ARENA_DEVICES_MAX;
  return 0;
}

static int allocator_make_arenas(sicm_allocator *a) {
  if (a->ndevices == 0)
    return 0; /* no such memory here: every allocation takes the fallback */
  if (a->partition == SICM_ATV_NEAREST) {
    for (unsigned i = 0; i < a->ndevices; i++) {
      a->arenas[i] = sicm_arena_create(0, a->devices[i]);
      if (a->arenas[i] == NULL)
        return -1;
      a->arena_nodes[i] = a->devices[i]->node;
      a->narenas++;
    }
  } else {
    unsigned flags = a->partition == SICM_ATV_INTERLEAVED ? SICM_ARENA_INTERLEAVE : 0;
    a->arenas[0] = sicm_arena_create_devices(0, a->devices, a->ndevices, flags);
    if (a->arenas[0] == NULL)
      return -1;
    a->arena_nodes[0] = a->devices[0]->node;
    a->narenas = 1;
  }
  for (unsigned i = 0; i < a->narenas; i++)
    sc_arena_set_pool(a->arenas[i], &a->pool);
  return 0;
}

/* An allocator over `devs` (ndevs >= 0), or over the space's devices
 * (ndevs < 0). */
static sicm_allocator *allocator_new(sicm_memspace space, unsigned ntraits,
                                     const sicm_alloctrait *traits, sicm_device **devs,
                                     int ndevs) {
  if (sc_state_get() == NULL)
    return NULL;
  if ((unsigned)space > SICM_MEMSPACE_LOW_LAT)
    return sc_fail_null(EINVAL, "unknown memory space %d", (int)space);
  if (traits == NULL && ntraits > 0)
    return sc_fail_null(EINVAL, "traits is NULL");
  sicm_allocator *a = calloc(1, sizeof *a);
  if (a == NULL)
    return sc_fail_null(ENOMEM, "out of memory");
  a->space = space;
  a->fallback = SICM_ATV_DEFAULT_MEM_FB;
  a->partition = SICM_ATV_ENVIRONMENT;
  for (unsigned i = 0; i < ntraits; i++)
    if (trait_apply(a, &traits[i]) != 0)
      goto fail;
  if (a->fallback == SICM_ATV_ALLOCATOR_FB && a->fb_data == NULL) {
    sc_fail(EINVAL, "fallback allocator_fb needs an fb_data allocator");
    goto fail;
  }
  if (ndevs >= 0) {
    memcpy(a->devices, devs, (size_t)ndevs * sizeof *devs);
    a->ndevices = (unsigned)ndevs;
  } else if (allocator_devices(a) != 0) {
    goto fail;
  }
  if (allocator_make_arenas(a) != 0)
    goto fail;
  return a;
fail:;
  int err = errno;
  sicm_allocator_destroy(a);
  errno = err;
  return NULL;
}

sicm_allocator *sicm_allocator_create(sicm_memspace space, unsigned ntraits,
                                      const sicm_alloctrait *traits) {
  return allocator_new(space, ntraits, traits, NULL, -1);
}

sicm_allocator *sicm_allocator_create_for_intent(const sicm_intent *intent, unsigned ntraits,
                                                 const sicm_alloctrait *traits) {
  sicm_device *dev = sicm_device_for_intent(intent);
  if (dev == NULL && errno != ENODEV)
    return NULL;
  /* No device fits: an allocator without memory of its own, so that every
   * allocation follows the fallback, as for an absent memory space. */
  return allocator_new(SICM_MEMSPACE_DEFAULT, ntraits, traits, &dev, dev ? 1 : 0);
}

int sicm_allocator_destroy(sicm_allocator *a) {
  if (a == NULL)
    return sc_fail(EINVAL, "sicm_allocator_destroy: NULL allocator");
  for (unsigned i = 0; i < a->narenas; i++)
    sicm_arena_destroy(a->arenas[i]);
  free(a);
  return 0;
}

int sicm_allocator_arenas(sicm_allocator *a, sicm_arena *out, unsigned max) {
  if (a == NULL || (out == NULL && max > 0))
    return sc_fail(EINVAL, "sicm_allocator_arenas: NULL argument");
  for (unsigned i = 0; i < a->narenas && i < max; i++)
    out[i] = a->arenas[i];
  return (int)a->narenas;
}

/* The arena for this thread: the nearest one when partitioned by distance. */
static unsigned arena_for_thread(const sicm_allocator *a) {
  if (a->partition != SICM_ATV_NEAREST || a->narenas == 1)
    return 0;
  int self = sicm_node_self();
  unsigned best = 0;
  for (unsigned i = 1; i < a->narenas; i++)
    if (sicm_node_distance(self, a->arena_nodes[i]) < sicm_node_distance(self, a->arena_nodes[best]))
      best = i;
  return best;
}

static int devices_have_room(const sicm_allocator *a, unsigned arena, size_t size) {
  sicm_device *devs[SICM_ARENA_DEVICES_MAX];
  int n = sicm_arena_get_devices(a->arenas[arena], devs, SICM_ARENA_DEVICES_MAX);
  size_t room = 0;
  for (int i = 0; i < n; i++) {
    size_t free_bytes = 0;
    if (sicm_device_get_free_bytes(devs[i], &free_bytes) == 0)
      room += free_bytes;
  }
  return room >= size + ROOM_MARGIN;
}

/* From the allocator's own arenas, or NULL (the caller falls back). */
static void *allocator_own(sicm_allocator *a, size_t size, size_t align) {
  if (a->narenas == 0)
    return NULL;
  unsigned i = arena_for_thread(a);
  if (size >= ROOM_CHECK_MIN && !devices_have_room(a, i, size))
    return NULL;
  return align ? sicm_arena_aligned_alloc(a->arenas[i], align, size)
               : sicm_arena_alloc(a->arenas[i], size);
}

static void *allocator_alloc(sicm_allocator *a, size_t size, size_t align, unsigned depth) {
  if (a->alignment > align)
    align = a->alignment;
  void *p = allocator_own(a, size, align);
  if (p != NULL)
    return p;
  switch (a->fallback) {
  case SICM_ATV_NULL_FB:
    return sc_fail_null(ENOMEM, "memory space %d exhausted or absent (fallback null_fb)",
                          (int)a->space);
  case SICM_ATV_ABORT_FB:
    fprintf(stderr, "libsicm: memory space %d cannot provide %zu bytes (fallback abort_fb)\n",
            (int)a->space, size);
    abort();
  case SICM_ATV_ALLOCATOR_FB:
    if (depth > 16)
      return sc_fail_null(ENOMEM, "fallback allocators form a cycle");
    return allocator_alloc(a->fb_data, size, align, depth + 1);
  default: {
    sicm_arena fallback = sicm_arena_get_default();
    if (fallback == NULL)
      return NULL;
    return align ? sicm_arena_aligned_alloc(fallback, align, size)
                 : sicm_arena_alloc(fallback, size);
  }
  }
}

void *sicm_allocator_aligned_alloc(sicm_allocator *a, size_t alignment, size_t size) {
  if (a == NULL || size == 0)
    return sc_fail_null(EINVAL, a ? "size 0" : "NULL allocator");
  if (alignment != 0 && (alignment & (alignment - 1)) != 0)
    return sc_fail_null(EINVAL, "alignment %zu is not a power of two", alignment);
  return allocator_alloc(a, size, alignment, 0);
}

void *sicm_allocator_alloc(sicm_allocator *a, size_t size) {
  return sicm_allocator_aligned_alloc(a, 0, size);
}

void *sicm_allocator_calloc(sicm_allocator *a, size_t n, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(n, size, &total))
    return sc_fail_null(ENOMEM, "calloc of %zu x %zu bytes overflows", n, size);
  void *p = sicm_allocator_alloc(a, total);
  if (p != NULL)
    memset(p, 0, total);
  return p;
}

void sicm_allocator_free(sicm_allocator *a, void *ptr) { sicm_free(ptr); }

void *sicm_allocator_realloc(sicm_allocator *a, void *ptr, size_t size) {
  if (ptr == NULL)
    return sicm_allocator_alloc(a, size);
  size_t old = sicm_usable_size(ptr);
  if (old == 0)
    return NULL; /* EINVAL: no arena owns ptr */
  void *p = sicm_allocator_alloc(a, size);
  if (p == NULL)
    return NULL;
  memcpy(p, ptr, old < size ? old : size);
  sicm_free(ptr);
  return p;
}
