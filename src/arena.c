/* SPDX-License-Identifier: BSD-3-Clause */
/* arena.c: arena lifecycle for every kind — slots and handles, the one
 * creation path, destroy, the library's default arenas, and the queries
 * about one arena that do not depend on its kind. */
#include <errno.h>
#include <numaif.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>

#include "arena.h"

sc_arena *sc_arena_slots[SC_ARENA_SLOTS];

/* Serializes create and destroy (never taken on the allocation path). */
static pthread_mutex_t arenas_lock = PTHREAD_MUTEX_INITIALIZER;

/* A handle packs the slot in its low bits and the generation above: a
 * destroyed arena's handle never matches a later arena in its slot. */
sicm_arena sc_arena_handle(const sc_arena *a, uint64_t generation) {
  return (sicm_arena)(uintptr_t)((generation << SC_HANDLE_SLOT_BITS) | a->slot);
}

sc_arena *sc_arena_resolve_fail(sicm_arena sa) {
  uintptr_t h = (uintptr_t)sa;
  uint64_t generation = sc_handle_generation(sa);
  sc_arena *a = __atomic_load_n(&sc_arena_slots[h & (SC_ARENA_SLOTS - 1)], __ATOMIC_ACQUIRE);
  if (generation == 0 || a == NULL ||
      generation > __atomic_load_n(&a->last_generation, __ATOMIC_ACQUIRE))
    return sc_fail_null(EINVAL, "not an arena handle");
  if (__atomic_load_n(&a->live_generation, __ATOMIC_ACQUIRE) != generation)
    return sc_fail_null(ESTALE, "the arena was destroyed");
  return a; /* became live meanwhile */
}

/* A free slot's record, allocated on first use and kept for the process's
 * life so that stale handles and lookups never touch freed memory. */
static sc_arena *arena_slot_claim(void) {
  for (unsigned slot = 0; slot < SC_ARENA_SLOTS; slot++) {
    sc_arena *a = sc_arena_slots[slot];
    if (a != NULL && a->live_generation != 0)
      continue;
    if (a == NULL) {
      /* The record's alignment (kind_data is cache-line aligned), which
       * calloc does not give: with 16-byte alignment the hot fields of
       * kind_data straddled cache lines depending on the record's size. */
      a = aligned_alloc(_Alignof(sc_arena), sizeof *a);
      if (a == NULL)
        return sc_fail_null(ENOMEM, "out of memory for an arena record");
      memset(a, 0, sizeof *a);
      a->slot = slot;
      pthread_mutex_init(&a->window_lock, NULL);
      pthread_mutex_init(&a->migrate_lock, NULL);
      pthread_mutex_init(&a->kind_lock, NULL);
      __atomic_store_n(&sc_arena_slots[slot], a, __ATOMIC_RELEASE);
    }
    return a;
  }
  return sc_fail_null(EAGAIN, "all %d arena slots are in use", SC_ARENA_SLOTS);
}

/* The machine's RAM and swap, read once: every binding (each arena's
 * creation and each move) needs them, and a move of a small arena costs
 * only a few system calls, of which this would be one.  Swap added later
 * with swapon is not seen. */
static void memory_totals(size_t *ram, size_t *swap) {
  static size_t totals[2];
  static int read_once; /* atomic: 0 unread, 1 read */
  if (!__atomic_load_n(&read_once, __ATOMIC_ACQUIRE)) {
    struct sysinfo si;
    if (sysinfo(&si) == 0) {
      totals[0] = (size_t)si.totalram * si.mem_unit;
      totals[1] = (size_t)si.totalswap * si.mem_unit;
      __atomic_store_n(&read_once, 1, __ATOMIC_RELEASE);
    }
  }
  *ram = totals[0];
  *swap = totals[1];
}

int sc_binding_make(const sc_state *s, sicm_device *const *devs, unsigned ndevs,
                    unsigned flags, sc_binding *out) {
  const unsigned known = SICM_ARENA_PREFERRED | SICM_ARENA_INTERLEAVE | SICM_ARENA_HUGEPAGES |
                         SICM_ARENA_NOHUGEPAGES | SICM_ARENA_AUTOPLACE | SICM_ARENA_ANYWHERE |
                         SICM_ARENA_FIRST_TOUCH | SICM_ARENA_WEIGHTED;
  const unsigned placement = SICM_ARENA_PREFERRED | SICM_ARENA_INTERLEAVE | SICM_ARENA_FIRST_TOUCH |
                             SICM_ARENA_WEIGHTED;
  if (flags & ~known)
    return sc_fail(EINVAL, "unknown arena flags 0x%x", flags & ~known);
  if (__builtin_popcount(flags & placement) > 1)
    return sc_fail(EINVAL, "PREFERRED, INTERLEAVE, WEIGHTED and FIRST_TOUCH exclude each other");
  if ((flags & SICM_ARENA_FIRST_TOUCH) && (flags & (SICM_ARENA_AUTOPLACE | SICM_ARENA_ANYWHERE)))
    return sc_fail(EINVAL, "the placer places an arena by binding it; FIRST_TOUCH binds nothing");
  if ((flags & SICM_ARENA_HUGEPAGES) && (flags & SICM_ARENA_NOHUGEPAGES))
    return sc_fail(EINVAL, "HUGEPAGES and NOHUGEPAGES exclude each other");
  if (devs == NULL || ndevs == 0 || ndevs > SICM_ARENA_DEVICES_MAX)
    return sc_fail(EINVAL, "an arena needs 1 to %d devices", SICM_ARENA_DEVICES_MAX);
  memset(out, 0, sizeof *out);
  for (unsigned i = 0; i < ndevs; i++) {
    if (!sc_device_is_known(s, devs[i]))
      return sc_fail(EINVAL, "device %u is not from sicm_devices()", i);
    size_t huge_page = devs[i]->huge ? devs[i]->page_size : 0;
    if (i > 0 && huge_page != out->huge_page)
      return sc_fail(EINVAL, "devices 0 and %u have different page sizes", i);
    out->huge_page = huge_page;
    if (devs[i]->node >= SC_NODES_MAX)
      return sc_fail(EINVAL, "node %d is beyond the %d nodes arenas support", devs[i]->node,
                     SC_NODES_MAX);
    for (unsigned j = 0; j < i; j++)
      if (devs[j] == devs[i])
        return sc_fail(EINVAL, "device %u is listed twice", i);
    sc_nodemask_add(&out->nodes, devs[i]->node);
    out->devices[i] = devs[i];
  }
  out->ndevices = ndevs;
  if (out->huge_page && (flags & (SICM_ARENA_NOHUGEPAGES | SICM_ARENA_AUTOPLACE)))
    return sc_fail(EINVAL, "a hugetlb arena has huge pages, and the placer moves base pages only");
  if (flags & SICM_ARENA_INTERLEAVE)
    out->policy = MPOL_INTERLEAVE;
  else if (flags & SICM_ARENA_WEIGHTED)
    out->policy = sc_weighted_policy(&out->nodes);
  else if (flags & SICM_ARENA_PREFERRED)
    out->policy = ndevs == 1 ? MPOL_PREFERRED : MPOL_PREFERRED_MANY;
  else if (flags & SICM_ARENA_FIRST_TOUCH)
    out->policy = MPOL_DEFAULT;
  else
    out->policy = MPOL_BIND;
  if (out->policy == MPOL_DEFAULT) /* which takes no nodes: mbind refuses any */
    memset(&out->nodes, 0, sizeof out->nodes);
  size_t ram, swap;
  memory_totals(&ram, &swap);
  if (flags & (SICM_ARENA_PREFERRED | SICM_ARENA_FIRST_TOUCH)) {
    out->capacity = ram;
  } else {
    for (unsigned i = 0; i < ndevs; i++)
      out->capacity += devs[i]->capacity;
  }
  out->capacity += swap;
  return 0;
}

sicm_arena sc_arena_create(const sc_arena_config *config) {
  pthread_mutex_lock(&arenas_lock);
  sc_arena *a = arena_slot_claim();
  if (a == NULL) {
    pthread_mutex_unlock(&arenas_lock);
    return NULL;
  }
  a->ops = config->ops;
  a->flags = config->flags;
  a->maxsize = config->maxsize;
  a->huge_page = config->binding->huge_page;
  a->library_default = config->library_default;
  sc_arena_binding_set(a, config->binding);
  a->migrated = 0;
  a->migrations_done = a->migrations_failed = a->migration_ns = a->migration_bytes = 0;
  pthread_mutex_lock(&a->window_lock);
  a->name[0] = '\0';
  pthread_mutex_unlock(&a->window_lock);
  __atomic_store_n(&a->autoplace_mode, SICM_AUTOPLACE_AUTO, __ATOMIC_RELAXED);
  __atomic_store_n(&a->program_moves, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&a->placer_part, 0, __ATOMIC_RELAXED);
  sc_arena_usage_reset(a);
  /* Atomic: a thread that resolved the arena this record held before may
   * still read these (ThreadSanitizer saw the plain writes race it). */
  __atomic_store_n(&a->held, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&a->peak_held, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&a->pool, NULL, __ATOMIC_RELAXED);
  a->borrowed = config->borrowed_base != NULL;
  a->move_flag = config->move_all ? MPOL_MF_MOVE_ALL : config->ops->move_flag;
  if ((a->borrowed && sc_window_lend(a, config->borrowed_base, config->borrowed_size) != 0) ||
      a->ops->open(a, config->kind_arg) != 0) {
    int err = errno;
    sc_window_release_all(a);
    pthread_mutex_unlock(&arenas_lock);
    errno = err;
    return NULL;
  }
  uint64_t generation = a->last_generation + 1;
  __atomic_store_n(&a->last_generation, generation, __ATOMIC_RELEASE);
  __atomic_store_n(&a->live_generation, generation, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&arenas_lock);
  return sc_arena_handle(a, generation);
}

sicm_arena sc_arena_find(int (*match)(const sc_arena *a, const void *arg), const void *arg) {
  sicm_arena found = NULL;
  pthread_mutex_lock(&arenas_lock);
  for (unsigned slot = 0; slot < SC_ARENA_SLOTS && found == NULL; slot++) {
    sc_arena *a = sc_arena_slots[slot];
    if (a != NULL && a->live_generation != 0 && match(a, arg))
      found = sc_arena_handle(a, a->live_generation);
  }
  pthread_mutex_unlock(&arenas_lock);
  return found;
}

/* The header's inline fast path trusts a thread's front only while no
 * arena has been destroyed since it was set; starts at 1, above a fresh
 * front's 0. */
SICM_API uint64_t sicm_epoch_v2 = 1;

/* Caller holds arenas_lock. */
static int arena_destroy_locked(sc_arena *a) {
  pthread_mutex_lock(&a->migrate_lock); /* an asynchronous migration finishes first */
  __atomic_store_n(&a->live_generation, 0, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&a->migrate_lock);
  /* Before the arena's memory goes: a front that still names it is stale,
   * to the inline path by the epoch, to the called path by being closed. */
  __atomic_fetch_add(&sicm_epoch_v2, 1, __ATOMIC_RELEASE);
  sc_fronts_close();
  int rc = a->ops->close(a);
  int err = errno;
  sc_arenas_gone_add(a);
  sc_window_release_all(a);
  __atomic_store_n(&a->held, 0, __ATOMIC_RELAXED);
  errno = err;
  return rc;
}

int sicm_arena_destroy(sicm_arena sa) {
  pthread_mutex_lock(&arenas_lock);
  sc_arena *a = sc_arena_resolve(sa);
  int rc = a ? arena_destroy_locked(a) : -1;
  pthread_mutex_unlock(&arenas_lock);
  return rc;
}

void sc_arenas_upkeep(void) {
  pthread_mutex_lock(&arenas_lock);
  for (unsigned slot = 0; slot < SC_ARENA_SLOTS; slot++) {
    sc_arena *a = sc_arena_slots[slot];
    if (a != NULL && a->live_generation != 0 && a->ops->upkeep != NULL)
      a->ops->upkeep(a);
  }
  pthread_mutex_unlock(&arenas_lock);
}

/* 0 when no arena of the program is live; else -1 (EBUSY). */
static int program_arenas_none_locked(void) {
  for (unsigned slot = 0; slot < SC_ARENA_SLOTS; slot++) {
    sc_arena *a = sc_arena_slots[slot];
    if (a != NULL && a->live_generation != 0 && !a->library_default)
      return sc_fail(EBUSY, "arenas are still live; destroy them before the last sicm_fini");
  }
  return 0;
}

int sc_arenas_none_live(void) {
  pthread_mutex_lock(&arenas_lock);
  int rc = program_arenas_none_locked();
  int err = errno;
  pthread_mutex_unlock(&arenas_lock);
  errno = err;
  return rc;
}

int sc_arenas_release_all(void) {
  pthread_mutex_lock(&arenas_lock);
  if (program_arenas_none_locked() != 0) {
    int err = errno;
    pthread_mutex_unlock(&arenas_lock);
    errno = err;
    return -1;
  }
  int rc = 0;
  for (unsigned slot = 0; slot < SC_ARENA_SLOTS; slot++) {
    sc_arena *a = sc_arena_slots[slot];
    if (a != NULL && a->live_generation != 0 && arena_destroy_locked(a) != 0)
      rc = -1; /* the last failure's detail stands; the others are destroyed */
  }
  pthread_mutex_unlock(&arenas_lock);
  return rc;
}

int sicm_arenas_list(sicm_arena *out, size_t max) {
  if (out == NULL && max > 0)
    return sc_fail(EINVAL, "sicm_arenas_list: out is NULL");
  size_t count = 0;
  pthread_mutex_lock(&arenas_lock);
  for (unsigned slot = 0; slot < SC_ARENA_SLOTS; slot++) {
    sc_arena *a = sc_arena_slots[slot];
    if (a == NULL || a->live_generation == 0 || a->library_default)
      continue;
    if (count < max)
      out[count] = sc_arena_handle(a, a->live_generation);
    count++;
  }
  pthread_mutex_unlock(&arenas_lock);
  return (int)count;
}

sicm_arena sicm_arena_lookup(const void *ptr) {
  uint64_t generation;
  sc_arena *a = sc_arena_of_ptr(ptr, &generation);
  return a ? sc_arena_handle(a, generation) : NULL;
}

void sc_arena_set_pool(sicm_arena sa, sc_pool *pool) {
  sc_arena *a = sc_arena_resolve(sa);
  if (a != NULL)
    __atomic_store_n(&a->pool, pool, __ATOMIC_RELEASE);
}

size_t sicm_arena_size(sicm_arena sa) {
  sc_arena *a = sc_arena_resolve(sa);
  return a ? __atomic_load_n(&a->held, __ATOMIC_RELAXED) : 0;
}

int sicm_arena_get_devices(sicm_arena sa, sicm_device **out, unsigned max) {
  sc_arena *a = sc_arena_resolve(sa);
  if (a == NULL)
    return -1;
  if (out == NULL && max > 0)
    return sc_fail(EINVAL, "sicm_arena_get_devices: out is NULL");
  if (a->ops->binding_load != NULL && a->ops->binding_load(a) != 0)
    return -1; /* another process may have moved it: the local copy may be stale */
  pthread_mutex_lock(&a->window_lock);
  unsigned n = a->binding.ndevices;
  for (unsigned i = 0; i < n && i < max; i++)
    out[i] = a->binding.devices[i];
  pthread_mutex_unlock(&a->window_lock);
  return (int)n;
}

sicm_device *sicm_arena_get_device(sicm_arena sa) {
  sicm_device *first = NULL;
  return sicm_arena_get_devices(sa, &first, 1) < 0 ? NULL : first;
}

/* ---- default arenas ---- */

static SC_TLS sicm_arena thread_default;
/* The library's default arena of each node, created on first use. */
static sicm_arena library_defaults[SC_NODES_MAX];
static pthread_mutex_t library_defaults_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- fork ---- */

/* In the order the code nests them: defaults, the table, then each
 * record's migration and kind locks (a migration in progress finishes
 * first).  jemalloc's own handlers take its locks after these. */
void sc_arenas_fork_lock(void) {
  pthread_mutex_lock(&library_defaults_lock);
  pthread_mutex_lock(&arenas_lock);
  for (unsigned slot = 0; slot < SC_ARENA_SLOTS; slot++) {
    sc_arena *a = sc_arena_slots[slot];
    if (a != NULL) {
      pthread_mutex_lock(&a->migrate_lock);
      pthread_mutex_lock(&a->kind_lock);
    }
  }
}

/* window_lock is not taken around fork: the extent hooks take it inside
 * jemalloc's locks, which jemalloc's handlers take after ours.  Its
 * writers are excluded anyway (the hooks that take windows run under an
 * arena's grow lock, which jemalloc holds across fork; migrations under
 * migrate_lock; a commit's reach is one word, raised only); a reader of
 * the parent may hold it, so the child makes it anew. */
void sc_arenas_fork_unlock(int child) {
  for (unsigned slot = 0; slot < SC_ARENA_SLOTS; slot++) {
    sc_arena *a = sc_arena_slots[slot];
    if (a != NULL) {
      pthread_mutex_unlock(&a->kind_lock);
      pthread_mutex_unlock(&a->migrate_lock);
      if (child)
        pthread_mutex_init(&a->window_lock, NULL);
    }
  }
  pthread_mutex_unlock(&arenas_lock);
  pthread_mutex_unlock(&library_defaults_lock);
}

void sc_arenas_fork_child(void) {
  int gone = 0;
  for (unsigned slot = 0; slot < SC_ARENA_SLOTS; slot++) {
    sc_arena *a = sc_arena_slots[slot];
    if (a != NULL && a->huge_page != 0 && a->live_generation != 0) {
      __atomic_store_n(&a->live_generation, 0, __ATOMIC_RELEASE);
      gone = 1;
      /* Its windows leave the record (which a new arena may take), their
       * addresses held; its allocator arenas are left alone, unused. */
      sc_window_lose_all(a);
    }
  }
  if (gone) { /* as at a destroy: no front may still name one */
    __atomic_fetch_add(&sicm_epoch_v2, 1, __ATOMIC_RELEASE);
    sc_fronts_close();
  }
}

int sicm_arena_set_default(sicm_arena sa) {
  if (sa != NULL && sc_arena_resolve(sa) == NULL)
    return -1;
  thread_default = sa;
  return 0;
}

static sc_kind_create_fn default_kind_create;

void sc_arenas_set_default_kind(sc_kind_create_fn create) { default_kind_create = create; }

static sicm_arena default_of_node(int node) {
  if (node < 0 || node >= SC_NODES_MAX)
    return sc_fail_null(EINVAL, "node %d has no default arena", node);
  sicm_arena sa = __atomic_load_n(&library_defaults[node], __ATOMIC_ACQUIRE);
  int saved = errno;
  if (sa != NULL && sc_arena_resolve(sa) != NULL)
    return sa;
  errno = saved;
  pthread_mutex_lock(&library_defaults_lock);
  sa = library_defaults[node];
  if (sa == NULL || sc_arena_resolve(sa) == NULL) {
    sicm_device *dev = sicm_device_of_node(node, 0);
    sa = NULL;
    if (dev != NULL && default_kind_create == NULL)
      sc_fail(ENOSYS, "no kind of arena is set to make the default arenas");
    else if (dev != NULL)
      sa = default_kind_create(0, &dev, 1, SICM_ARENA_PREFERRED, 1);
    if (sa != NULL)
      __atomic_store_n(&library_defaults[node], sa, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&library_defaults_lock);
  return sa;
}

sicm_arena sicm_arena_get_default(void) {
  if (thread_default != NULL)
    return thread_default;
  int node = sicm_node_self();
  return node < 0 ? NULL : default_of_node(node);
}
