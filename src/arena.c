/* arena.c: arena lifecycle — slots and handles, create and destroy, the
 * library's default arenas, and the queries about one arena. */
#include <errno.h>
#include <stdio.h>
#include <numaif.h>
#include <stdlib.h>
#include <string.h>

#include "shm.h"

sicm_arena_rec *sicm_arena_slots[SICM_ARENA_SLOTS];

/* Serializes create and destroy (never taken on the allocation path). */
static pthread_mutex_t arenas_lock = PTHREAD_MUTEX_INITIALIZER;

/* A handle packs the slot in its low 12 bits and the generation above:
 * a destroyed arena's handle never matches a later arena in its slot. */
#define HANDLE_SLOT_BITS 12

sicm_arena sicm_arena_handle(const sicm_arena_rec *rec, uint64_t generation) {
  return (sicm_arena)(uintptr_t)((generation << HANDLE_SLOT_BITS) | rec->slot);
}

sicm_arena_rec *sicm_arena_resolve(sicm_arena sa) {
  uintptr_t h = (uintptr_t)sa;
  uint64_t generation = h >> HANDLE_SLOT_BITS;
  sicm_arena_rec *rec = __atomic_load_n(&sicm_arena_slots[h & (SICM_ARENA_SLOTS - 1)],
                                        __ATOMIC_ACQUIRE);
  if (generation == 0 || rec == NULL ||
      generation > __atomic_load_n(&rec->last_generation, __ATOMIC_ACQUIRE))
    return sicm_fail_null(EINVAL, "not an arena handle");
  if (__atomic_load_n(&rec->live_generation, __ATOMIC_ACQUIRE) != generation)
    return sicm_fail_null(ESTALE, "the arena was destroyed");
  return rec;
}

/* A free slot's record, allocated on first use and kept for the process's
 * life so that stale handles and lookups never touch freed memory. */
static sicm_arena_rec *arena_slot_claim(void) {
  for (unsigned slot = 0; slot < SICM_ARENA_SLOTS; slot++) {
    sicm_arena_rec *rec = sicm_arena_slots[slot];
    if (rec != NULL && rec->live_generation != 0)
      continue;
    if (rec == NULL) {
      rec = calloc(1, sizeof *rec);
      if (rec == NULL)
        return NULL;
      rec->slot = slot;
      pthread_mutex_init(&rec->window_lock, NULL);
      pthread_mutex_init(&rec->tcache_lock, NULL);
      pthread_mutex_init(&rec->migrate_lock, NULL);
      __atomic_store_n(&sicm_arena_slots[slot], rec, __ATOMIC_RELEASE);
    }
    return rec;
  }
  return NULL;
}

int sicm_binding_make(const sicm_state *s, sicm_device *const *devs, unsigned ndevs,
                      unsigned flags, sicm_binding *out) {
  const unsigned known = SICM_ARENA_PREFERRED | SICM_ARENA_INTERLEAVE | SICM_ARENA_HUGEPAGES |
                         SICM_ARENA_NOHUGEPAGES;
  if (flags & ~known)
    return sicm_fail(EINVAL, "unknown arena flags 0x%x", flags & ~known);
  if ((flags & SICM_ARENA_PREFERRED) && (flags & SICM_ARENA_INTERLEAVE))
    return sicm_fail(EINVAL, "PREFERRED and INTERLEAVE exclude each other");
  if ((flags & SICM_ARENA_HUGEPAGES) && (flags & SICM_ARENA_NOHUGEPAGES))
    return sicm_fail(EINVAL, "HUGEPAGES and NOHUGEPAGES exclude each other");
  if (devs == NULL || ndevs == 0 || ndevs > SICM_ARENA_DEVICES_MAX)
    return sicm_fail(EINVAL, "an arena needs 1 to %d devices", SICM_ARENA_DEVICES_MAX);
  memset(out, 0, sizeof *out);
  const unsigned bits = 8 * sizeof(unsigned long);
  for (unsigned i = 0; i < ndevs; i++) {
    if (!sicm_device_is_known(s, devs[i]))
      return sicm_fail(EINVAL, "device %u is not from sicm_devices()", i);
    if (devs[i]->huge)
      return sicm_fail(ENOTSUP, "arenas on hugetlb devices are not supported yet");
    if (devs[i]->node >= 1024)
      return sicm_fail(EINVAL, "node %d is beyond the 1024 nodes arenas support", devs[i]->node);
    for (unsigned j = 0; j < i; j++)
      if (devs[j] == devs[i])
        return sicm_fail(EINVAL, "device %u is listed twice", i);
    unsigned node = (unsigned)devs[i]->node;
    out->nodemask[node / bits] |= 1ul << (node % bits);
    out->devices[i] = devs[i];
  }
  out->ndevices = ndevs;
  if (flags & SICM_ARENA_INTERLEAVE)
    out->policy = MPOL_INTERLEAVE;
  else if (flags & SICM_ARENA_PREFERRED)
    out->policy = ndevs == 1 ? MPOL_PREFERRED : MPOL_PREFERRED_MANY;
  else
    out->policy = MPOL_BIND;
  return 0;
}

sicm_arena sicm_arena_create_internal(size_t maxsize, sicm_device *const *devs, unsigned ndevs,
                                      unsigned flags, int library_default) {
  sicm_state *s = sicm_state_get();
  sicm_binding binding;
  if (s == NULL || sicm_binding_make(s, devs, ndevs, flags, &binding) != 0)
    return NULL;
  pthread_mutex_lock(&arenas_lock);
  sicm_arena_rec *rec = arena_slot_claim();
  if (rec == NULL) {
    pthread_mutex_unlock(&arenas_lock);
    return sicm_fail_null(EAGAIN, "all %d arena slots are in use", SICM_ARENA_SLOTS);
  }
  rec->flags = flags;
  rec->maxsize = maxsize;
  rec->held = 0;
  rec->library_default = library_default;
  rec->binding = binding;
  rec->thp_advised = 0;
  rec->migrated = 0;
  rec->owner = NULL;
  rec->shm = NULL;
  sicm_extent_hooks_init(&rec->hooks);
  extent_hooks_t *hooks = &rec->hooks;
  unsigned index;
  size_t len = sizeof index;
  int err = mallctl("arenas.create", &index, &len, &hooks, sizeof hooks);
  if (err != 0) {
    sicm_window_release_all(rec);
    pthread_mutex_unlock(&arenas_lock);
    /* The metadata allocation failed: maxsize too small or no memory. */
    return sicm_fail_null(err == EAGAIN ? ENOMEM : err,
                          "jemalloc could not create the arena (maxsize %zu)", maxsize);
  }
  rec->je_index = index;
  uint64_t generation = rec->last_generation + 1;
  __atomic_store_n(&rec->last_generation, generation, __ATOMIC_RELEASE);
  __atomic_store_n(&rec->live_generation, generation, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&arenas_lock);
  return sicm_arena_handle(rec, generation);
}

sicm_arena sicm_arena_create(size_t maxsize, sicm_device *dev) {
  return sicm_arena_create_internal(maxsize, &dev, 1, 0, 0);
}

sicm_arena sicm_arena_create_devices(size_t maxsize, sicm_device *const *devs, unsigned ndevs,
                                     unsigned flags) {
  return sicm_arena_create_internal(maxsize, devs, ndevs, flags, 0);
}

sicm_arena sicm_arena_register_shared(struct shm_header *h, size_t size,
                                      const sicm_binding *binding, uint64_t dev, uint64_t ino) {
  pthread_mutex_lock(&arenas_lock);
  sicm_arena_rec *rec = arena_slot_claim();
  if (rec == NULL) {
    pthread_mutex_unlock(&arenas_lock);
    return sicm_fail_null(EAGAIN, "all %d arena slots are in use", SICM_ARENA_SLOTS);
  }
  rec->flags = 0;
  rec->maxsize = rec->held = size;
  rec->library_default = 0;
  rec->binding = *binding;
  rec->thp_advised = 0;
  rec->migrated = 0;
  rec->owner = NULL;
  rec->shm = h;
  rec->shm_dev = dev;
  rec->shm_ino = ino;
  sicm_window_adopt(rec, h, size);
  uint64_t generation = rec->last_generation + 1;
  __atomic_store_n(&rec->last_generation, generation, __ATOMIC_RELEASE);
  __atomic_store_n(&rec->live_generation, generation, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&arenas_lock);
  return sicm_arena_handle(rec, generation);
}

sicm_arena sicm_arena_find_shared(uint64_t dev, uint64_t ino) {
  sicm_arena found = NULL;
  pthread_mutex_lock(&arenas_lock);
  for (unsigned slot = 0; slot < SICM_ARENA_SLOTS && found == NULL; slot++) {
    sicm_arena_rec *rec = sicm_arena_slots[slot];
    if (rec != NULL && rec->live_generation != 0 && rec->shm != NULL && rec->shm_dev == dev &&
        rec->shm_ino == ino)
      found = sicm_arena_handle(rec, rec->live_generation);
  }
  pthread_mutex_unlock(&arenas_lock);
  return found;
}

/* Caller holds arenas_lock. */
static int arena_destroy_locked(sicm_arena_rec *rec) {
  pthread_mutex_lock(&rec->migrate_lock); /* an asynchronous migration finishes first */
  __atomic_store_n(&rec->live_generation, 0, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&rec->migrate_lock);
  if (rec->shm != NULL) { /* detach: the segment lives on for other processes */
    sicm_window_release_all(rec);
    rec->shm = NULL;
    return 0;
  }
  /* Cached regions must go back before the arena, or they would outlive it. */
  sicm_thread_caches_release(rec);
  char cmd[64];
  snprintf(cmd, sizeof cmd, "arena.%u.destroy", rec->je_index);
  int err = mallctl(cmd, NULL, NULL, NULL, 0);
  sicm_window_release_all(rec);
  __atomic_store_n(&rec->held, 0, __ATOMIC_RELAXED);
  return err == 0 ? 0 : sicm_fail(err, "jemalloc could not destroy arena %u", rec->je_index);
}

int sicm_arena_destroy(sicm_arena sa) {
  pthread_mutex_lock(&arenas_lock);
  sicm_arena_rec *rec = sicm_arena_resolve(sa);
  int rc = rec ? arena_destroy_locked(rec) : -1;
  pthread_mutex_unlock(&arenas_lock);
  return rc;
}

int sicm_arenas_release_all(void) {
  pthread_mutex_lock(&arenas_lock);
  for (unsigned slot = 0; slot < SICM_ARENA_SLOTS; slot++) {
    sicm_arena_rec *rec = sicm_arena_slots[slot];
    if (rec != NULL && rec->live_generation != 0 && !rec->library_default) {
      pthread_mutex_unlock(&arenas_lock);
      return sicm_fail(EBUSY, "arenas are still live; destroy them before the last sicm_fini");
    }
  }
  for (unsigned slot = 0; slot < SICM_ARENA_SLOTS; slot++) {
    sicm_arena_rec *rec = sicm_arena_slots[slot];
    if (rec != NULL && rec->live_generation != 0)
      arena_destroy_locked(rec);
  }
  pthread_mutex_unlock(&arenas_lock);
  return 0;
}

int sicm_arenas_list(sicm_arena *out, size_t max) {
  if (out == NULL && max > 0)
    return sicm_fail(EINVAL, "sicm_arenas_list: out is NULL");
  size_t count = 0;
  pthread_mutex_lock(&arenas_lock);
  for (unsigned slot = 0; slot < SICM_ARENA_SLOTS; slot++) {
    sicm_arena_rec *rec = sicm_arena_slots[slot];
    if (rec == NULL || rec->live_generation == 0 || rec->library_default)
      continue;
    if (count < max)
      out[count] = sicm_arena_handle(rec, rec->live_generation);
    count++;
  }
  pthread_mutex_unlock(&arenas_lock);
  return (int)count;
}

sicm_arena sicm_arena_lookup(const void *ptr) {
  sicm_arena_rec *rec = sicm_window_owner(ptr);
  if (rec == NULL)
    return NULL;
  uint64_t generation = __atomic_load_n(&rec->live_generation, __ATOMIC_ACQUIRE);
  return generation ? sicm_arena_handle(rec, generation) : NULL;
}

void sicm_arena_set_owner(sicm_arena sa, void *owner) {
  sicm_arena_rec *rec = sicm_arena_resolve(sa);
  if (rec != NULL)
    __atomic_store_n(&rec->owner, owner, __ATOMIC_RELEASE);
}

void *sicm_arena_owner_of(const void *ptr) {
  sicm_arena_rec *rec = sicm_window_owner(ptr);
  if (rec == NULL || __atomic_load_n(&rec->live_generation, __ATOMIC_ACQUIRE) == 0)
    return NULL;
  return __atomic_load_n(&rec->owner, __ATOMIC_ACQUIRE);
}

size_t sicm_arena_size(sicm_arena sa) {
  sicm_arena_rec *rec = sicm_arena_resolve(sa);
  return rec ? __atomic_load_n(&rec->held, __ATOMIC_RELAXED) : 0;
}

int sicm_arena_get_devices(sicm_arena sa, sicm_device **out, unsigned max) {
  sicm_arena_rec *rec = sicm_arena_resolve(sa);
  if (rec == NULL)
    return -1;
  if (out == NULL && max > 0)
    return sicm_fail(EINVAL, "sicm_arena_get_devices: out is NULL");
  if (rec->shm != NULL) /* another process may have moved it */
    shm_segment_get_binding(rec);
  pthread_mutex_lock(&rec->window_lock);
  unsigned n = rec->binding.ndevices;
  for (unsigned i = 0; i < n && i < max; i++)
    out[i] = rec->binding.devices[i];
  pthread_mutex_unlock(&rec->window_lock);
  return (int)n;
}

sicm_device *sicm_arena_get_device(sicm_arena sa) {
  sicm_device *first = NULL;
  return sicm_arena_get_devices(sa, &first, 1) < 0 ? NULL : first;
}
