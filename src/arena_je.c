/* SPDX-License-Identifier: BSD-3-Clause */
/* arena_je.c: the private arena kind — creation on a jemalloc arena with
 * the extent hooks of arena_je_hooks.c, and its operations: allocation and
 * free through this thread's cache for the arena (a pop from or push to a
 * bin; a miss is one jemalloc call; no lock either way), realloc, usable
 * size, statistics. */
#include "config.h"

#include <errno.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arena_je.h"

_Static_assert(sizeof(sc_je_arena) <= SC_ARENA_KIND_DATA, "sc_je_arena outgrew kind_data");

/* jemalloc's "5.3.0-0-g<hash>", up to the first '-': read once. */
static char jemalloc_release[32];
static pthread_once_t jemalloc_release_once = PTHREAD_ONCE_INIT;

static void jemalloc_release_read(void) {
  const char *full = "unknown";
  size_t len = sizeof full;
  je_mallctl("version", &full, &len, NULL, 0);
  snprintf(jemalloc_release, sizeof jemalloc_release, "%.*s", (int)strcspn(full, "-"), full);
}

int sicm_jemalloc_info(const char **version) {
  if (version != NULL) {
    pthread_once(&jemalloc_release_once, jemalloc_release_read);
    *version = jemalloc_release;
  }
#ifdef SICM_JEMALLOC_PRIVATE_BUILD
  return 1;
#else
  return 0;
#endif
}

static int private_open(sc_arena *a, void *arg) {
  sc_je_arena *je = sc_je_of(a);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  unsigned target = cpus < 1 ? 1 : cpus > SC_SHARDS_MAX ? SC_SHARDS_MAX : (unsigned)cpus;
  if (sc_je_maxsize_small(a) || a->borrowed) /* a fixed range: one allocator arena fills it */
    target = 1;
  *je = (sc_je_arena){.arena = a, .shards_target = target};
  sc_je_hooks_init(&je->hooks);
  return sc_je_shard_add(je);
}

int sc_je_shard_add(sc_je_arena *je) {
  extent_hooks_t *hooks = &je->hooks;
  unsigned index;
  sc_je_hook_failed = 0;
  int err = je_mallctl("arenas.create", &index, &(size_t){sizeof index}, &hooks, sizeof hooks);
  if (err != 0 && sc_je_hook_failed) { /* no memory for its metadata: the hook said why */
    sc_je_hook_failed = 0;
    errno = ENOMEM;
    return -1;
  }
  if (err != 0) /* EAGAIN: jemalloc has no arena index left */
    return sc_fail(err, "jemalloc could not create another arena (%s)", strerror(err));
  /* jemalloc purges a freed extent of 8 MiB or more at once (its
   * oversize_threshold); with two threads that madvise interrupts the
   * other CPU at every large free.  Large extents
   * decay like the rest; maxsize pressure purges on demand. */
  char cmd[64];
  snprintf(cmd, sizeof cmd, "arena.%u.oversize_threshold", index);
  size_t never = SIZE_MAX;
  je_mallctl(cmd, NULL, NULL, &never, sizeof never);
  /* jemalloc grows its address space in steps that double; steps past
   * maxsize take address space (and jemalloc's metadata for it) that the
   * arena can never commit. */
  if (je->arena->maxsize != 0) {
    snprintf(cmd, sizeof cmd, "arena.%u.retain_grow_limit", index);
    /* A fixed arena's range fills to its end only if each step is no
     * larger than what it asks for: the smallest step there is. */
    size_t limit = je->arena->borrowed ? sc_page_size() : je->arena->maxsize;
    je_mallctl(cmd, NULL, NULL, &limit, sizeof limit);
  }
  je->shards[je->nshards] = index;
  __atomic_store_n(&je->nshards, je->nshards + 1, __ATOMIC_RELEASE); /* read by the hooks */
  return 0;
}

static int private_close(sc_arena *a) {
  sc_je_arena *je = sc_je_of(a);
  /* Cached regions must go back before the arena, or they would outlive it. */
  sc_thread_caches_release(a);
  int rc = 0;
  for (unsigned i = 0; i < je->nshards; i++) {
    char cmd[64];
    snprintf(cmd, sizeof cmd, "arena.%u.destroy", je->shards[i]);
    int err = je_mallctl(cmd, NULL, NULL, NULL, 0);
    if (err != 0)
      rc = sc_fail(err, "jemalloc could not destroy arena %u", je->shards[i]);
  }
  return rc;
}

/* A size no memory of the arena's devices could ever back is refused now,
 * not left to the page faults that would meet the OOM killer. */
static int size_check(const sc_arena *a, size_t sz) {
  if (sz == 0)
    return sc_fail(EINVAL, "size 0");
  if (sz > PTRDIFF_MAX)
    return sc_fail(ENOMEM, "size %zu is too large", sz);
  size_t capacity = __atomic_load_n(&a->capacity, __ATOMIC_RELAXED);
  if (sz > capacity)
    return sc_fail(ENOMEM, "%zu bytes are more than the arena's devices hold (%zu, swap "
                           "included)", sz, capacity);
  return 0;
}

/* "arena.<i>.purge" as a MIB, translated once: by name, every call
 * would parse the name again, a good part of an empty arena's move. */
static size_t purge_mib[3];
static int purge_mib_ok;
static pthread_once_t purge_mib_once = PTHREAD_ONCE_INIT;

static void purge_mib_translate(void) {
  size_t len = 3;
  purge_mib_ok = je_mallctlnametomib("arena.0.purge", purge_mib, &len) == 0 && len == 3;
}

/* Gives back to the system every free page the arena's shards keep
 * (dirty, muzzy, retained committed); their commit leaves maxsize. */
static void shards_purge(sc_arena *a) {
  sc_je_arena *je = sc_je_of(a);
  unsigned n = __atomic_load_n(&je->nshards, __ATOMIC_ACQUIRE);
  pthread_once(&purge_mib_once, purge_mib_translate);
  for (unsigned i = 0; i < n; i++) {
    if (purge_mib_ok) {
      size_t mib[3] = {purge_mib[0], je->shards[i], purge_mib[2]};
      je_mallctlbymib(mib, 3, NULL, NULL, NULL, 0);
    } else {
      char cmd[64];
      snprintf(cmd, sizeof cmd, "arena.%u.purge", je->shards[i]);
      je_mallctl(cmd, NULL, NULL, NULL, 0);
    }
  }
}

/* maxsize counts what jemalloc keeps committed for reuse as well as what
 * is live.  When a commit would pass it, this thread's cached regions of
 * the arena and every shard's free pages go back, and the caller tries
 * once more: 1 then, 0 when the failure had another cause. */
static int maxsize_relieve(sc_arena *a, sc_thread_cache *cache) {
  if (sc_je_hook_failed != SC_HOOK_MAXSIZE)
    return 0;
  if (cache != NULL) {
    for (unsigned b = 0; b < sc_je_size_classes.nbins; b++)
      sc_bin_flush(cache, b, 0);
    sc_large_flush(cache);
    if (cache->flag != MALLOCX_TCACHE_NONE)
      je_mallctl("tcache.flush", NULL, NULL, &cache->tcache, sizeof cache->tcache);
  }
  shards_purge(a);
  sc_je_hook_failed = 0;
  return 1;
}

/* A NULL from jemalloc is ENOMEM; its cause is the failed hook's detail
 * when one failed during the call. */
static void *alloc_result(void *p, const sc_arena *a, size_t sz) {
  if (p != NULL)
    return p;
  if (sc_je_hook_failed) {
    char cause[256];
    snprintf(cause, sizeof cause, "%s", sicm_error_detail());
    return sc_fail_null(ENOMEM, "arena out of memory for %zu bytes: %s", sz, cause);
  }
  return sc_fail_null(ENOMEM, "arena out of memory for %zu bytes (held %zu, maxsize %zu)", sz,
                      __atomic_load_n(&a->held, __ATOMIC_RELAXED), a->maxsize);
}

/* Through the thread's cache and shard, or uncached from the first shard. */
static int alloc_flags(sc_arena *a, const sc_thread_cache *cache) {
  return cache ? cache->alloc_flags : sc_je_arena_flag(sc_je_of(a)->shards[0]) | MALLOCX_TCACHE_NONE;
}

/* Regions a miss takes from jemalloc for the bin, besides the one it
 * returns, when the bin's limit allows twice as many: a thread's bin is
 * then seldom empty in a run of allocations and frees, and never on the
 * very next allocation. */
#define SC_BIN_REFILL 3

/* Fills an empty bin with up to SC_BIN_REFILL regions of its class, so
 * that they are handed out in jemalloc's order.  A refusal is no error:
 * the bin keeps what it got. */
static void bin_refill(sc_thread_cache *cache, unsigned b) {
  sc_bin *bin = &cache->bins[b];
  if (bin->count != 0 || bin->limit < 2 * SC_BIN_REFILL)
    return;
  int err = errno;
  size_t size = sc_je_size_classes.size[b];
  void *got[SC_BIN_REFILL];
  unsigned n = 0;
  while (n < SC_BIN_REFILL && (got[n] = je_mallocx(size, cache->alloc_flags)) != NULL)
    sc_page_class_set(got[n++], b);
  while (n > 0)
    bin->slots[bin->count++] = got[--n];
  sc_je_hook_failed = 0;
  errno = err;
}

void *sc_je_alloc_miss(sc_arena *a, sc_thread_cache *cache, size_t sz) {
  sc_je_hook_failed = 0;
  void *p = je_mallocx(sz, cache->alloc_flags);
  if (p == NULL && maxsize_relieve(a, cache))
    p = je_mallocx(sz, cache->alloc_flags);
  if (p == NULL)
    return alloc_result(p, a, sz);
  unsigned b = sc_size_class(sz);
  sc_page_class_set(p, b);
  bin_refill(cache, b);
  return p;
}

/* calloc's zeroing.  A block comes from the same caches as any other and
 * is zeroed here: written below SC_ZERO_BY_DROP_MIN, and above it by
 * dropping its whole pages (MADV_DONTNEED: the next touch maps a zero page,
 * under the arena's binding), as glibc's calloc hands out fresh mappings for
 * large blocks.  jemalloc's MALLOCX_ZERO would write every byte of a reused
 * block, which costs more than the program's own first touch of it. */
#define SC_ZERO_BY_DROP_MIN ((size_t)1 << 20)

static void zero_block(const sc_arena *a, void *p, size_t sz) {
  /* A dropped huge page would fault again, where a dry pool means SIGBUS;
   * the caller's memory of a fixed arena may be a mapping that keeps its
   * bytes when dropped. */
  if (sz < SC_ZERO_BY_DROP_MIN || a->huge_page || a->borrowed) {
    memset(p, 0, sz);
    return;
  }
  uintptr_t page = sc_page_size(), start = (uintptr_t)p, end = start + sz;
  uintptr_t lo = (start + page - 1) & ~(page - 1), hi = end & ~(page - 1);
  memset(p, 0, lo - start);
  memset((void *)hi, 0, end - hi);
  if (madvise((void *)lo, hi - lo, MADV_DONTNEED) != 0)
    memset((void *)lo, 0, hi - lo);
}

/* A small class's slab may span several pages (one of 112-byte blocks
 * spans seven), more than a fixed arena of a few pages holds; a power of
 * two below a page has a slab of one page.  The size to retry a refused
 * small request with in a fixed arena, or 0. */
static size_t fixed_small_fallback(const sc_arena *a, size_t sz) {
  if (!a->borrowed || sz == 0 || sz >= sc_page_size() || (sz & (sz - 1)) == 0)
    return 0;
  return (size_t)1 << (64 - __builtin_clzl(sz));
}

static void *private_alloc(sc_arena *a, uint64_t generation, size_t sz, size_t align, int zero) {
  if (zero && align == 0) {
    void *p = private_alloc(a, generation, sz, 0, 0);
    if (p != NULL)
      zero_block(a, p, sz);
    return p;
  }
  sc_thread_cache *cache = sc_thread_cache_get(a, generation);
  if (align == 0 && !zero && sz - 1 < sc_je_size_classes.max && cache != NULL) {
    sc_bin *bin = &cache->bins[sc_size_class(sz)];
    return bin->count > 0 ? bin->slots[--bin->count] : sc_je_alloc_miss(a, cache, sz);
  }
  if (size_check(a, sz) != 0)
    return NULL;
  if (align == 0 && !zero && cache != NULL) {
    void *p = sc_large_take(cache, sc_class_of(sz));
    if (p != NULL)
      return p;
  }
  int flags = alloc_flags(a, cache) | (align ? MALLOCX_ALIGN(align) : 0) |
              (zero ? MALLOCX_ZERO : 0);
  sc_je_hook_failed = 0;
  void *p = je_mallocx(sz, flags);
  if (p == NULL && maxsize_relieve(a, cache))
    p = je_mallocx(sz, flags);
  if (p != NULL) /* an alignment may raise the class: ask jemalloc then */
    sc_page_class_set(p, sc_class_of(align ? je_sallocx(p, 0) : sz));
  size_t up = p == NULL ? fixed_small_fallback(a, sz) : 0;
  return up ? private_alloc(a, generation, up, align, zero) : alloc_result(p, a, sz);
}

/* The class of the block that starts at ptr, or SC_CLASSES_MAX with
 * EINVAL when no block can: no allocation ever started in its page (a tag
 * is written by every one jemalloc hands out, so this covers the inside of
 * large blocks too), or ptr is not placed as a block of that class starts.
 * Never passed to jemalloc, which would fault on it.  A freed block, or an
 * address inside a slab placed like a block start, cannot be told here. */
static unsigned block_class(const void *ptr) {
  unsigned cls = sc_page_class(ptr);
  if (cls == SC_CLASSES_MAX || !sc_class_start_ok(cls, ptr)) {
    sc_fail(EINVAL, "%p is inside an arena but not where an allocation starts", ptr);
    return SC_CLASSES_MAX;
  }
  return cls;
}

static void private_free(sc_arena *a, uint64_t generation, void *ptr) {
  unsigned cls = block_class(ptr);
  if (cls == SC_CLASSES_MAX)
    return;
  sc_thread_cache *cache = sc_thread_cache_get(a, generation);
  int flag = cache ? cache->flag : MALLOCX_TCACHE_NONE;
  if (cache != NULL) {
    if (cls < sc_je_size_classes.nbins)
      sc_bin_free(cache, cls, ptr);
    else
      sc_large_free(cache, cls, ptr);
    return;
  }
  if (cls >= sc_je_size_classes.nbins)
    sc_page_class_clear(ptr);
  je_sdallocx(ptr, sc_je_size_classes.size[cls], flag);
}

static void *private_realloc(sc_arena *a, uint64_t generation, void *ptr, size_t sz) {
  if (size_check(a, sz) != 0 || block_class(ptr) == SC_CLASSES_MAX)
    return NULL;
  sc_thread_cache *cache = sc_thread_cache_get(a, generation);
  int flags = alloc_flags(a, cache);
  /* A large block's tag goes before jemalloc may free it (as a free); it
   * comes back when the block stays. */
  unsigned old = block_class(ptr);
  if (old >= sc_je_size_classes.nbins)
    sc_page_class_clear(ptr);
  sc_je_hook_failed = 0;
  void *p = je_rallocx(ptr, sz, flags);
  if (p == NULL && maxsize_relieve(a, cache))
    p = je_rallocx(ptr, sz, flags);
  size_t up = p == NULL ? fixed_small_fallback(a, sz) : 0;
  if (up && (p = je_rallocx(ptr, up, flags)) != NULL)
    sz = up;
  if (p == NULL && old >= sc_je_size_classes.nbins)
    sc_page_class_set(ptr, old);
  if (p != NULL)
    sc_page_class_set(p, sc_class_of(sz));
  return alloc_result(p, a, sz);
}

static size_t private_usable_size(sc_arena *a, const void *ptr) {
  return block_class(ptr) == SC_CLASSES_MAX ? 0 : je_sallocx((void *)ptr, 0);
}

static size_t private_usable_for(sc_arena *a, size_t size, size_t align) {
  return je_nallocx(size, align ? MALLOCX_ALIGN(align) : 0);
}

static int stat_read(unsigned index, const char *name, size_t *out) {
  char cmd[96];
  size_t len = sizeof *out;
  snprintf(cmd, sizeof cmd, "stats.arenas.%u.%s", index, name);
  return je_mallctl(cmd, out, &len, NULL, 0);
}

static int private_stats(sc_arena *a, sicm_arena_stats *out) {
  sc_je_arena *je = sc_je_of(a);
  uint64_t epoch = 1;
  int rc = sc_stats_refresh_due()
               ? je_mallctl("epoch", &epoch, &(size_t){sizeof epoch}, &epoch, sizeof epoch)
               : 0;
  *out = (sicm_arena_stats){0};
  size_t pactive = 0;
  pthread_mutex_lock(&a->kind_lock);
  for (unsigned i = 0; i < je->nshards && rc == 0; i++) {
    size_t small, large, pages, resident, metadata, mapped;
    rc = stat_read(je->shards[i], "small.allocated", &small) |
         stat_read(je->shards[i], "large.allocated", &large) |
         stat_read(je->shards[i], "pactive", &pages) |
         stat_read(je->shards[i], "resident", &resident) |
         stat_read(je->shards[i], "base", &metadata) |
         stat_read(je->shards[i], "mapped", &mapped);
    out->allocated += small + large;
    pactive += pages;
    out->resident += resident > metadata ? resident - metadata : 0;
    out->mapped += mapped;
  }
  pthread_mutex_unlock(&a->kind_lock);
  if (rc != 0)
    return sc_fail(EIO, "jemalloc statistics are unavailable (built without stats?)");
  out->active = pactive * sc_page_size();
  out->held = __atomic_load_n(&a->held, __ATOMIC_RELAXED);
  out->maxsize = a->maxsize;
  return 0;
}

/* The free pages jemalloc keeps would move for nothing; a fixed arena
 * over a shared segment maps first the pages other processes touched. */
static int private_move_begin(sc_arena *a) {
  shards_purge(a);
  if (a->borrowed && a->move_flag == MPOL_MF_MOVE_ALL &&
      sc_resident_runs(a->windows[0].base, a->windows[0].size, sc_populate_run, NULL) < 0)
    return -1;
  return 0;
}

static const sc_arena_ops private_ops = {
    .open = private_open,
    .close = private_close,
    .alloc = private_alloc,
    .free = private_free,
    .realloc = private_realloc,
    .usable_size = private_usable_size,
    .usable_for = private_usable_for,
    .stats = private_stats,
    .move_begin = private_move_begin,
    .move_flag = MPOL_MF_MOVE, /* pages of this process only */
    .upkeep = sc_je_upkeep_decay,
};

sicm_arena sc_je_arena_create(size_t maxsize, sicm_device *const *devs, unsigned ndevs,
                              unsigned flags, int library_default) {
  sc_state *s = sc_state_get();
  sc_binding binding;
  if (s == NULL || sc_binding_make(s, devs, ndevs, flags, &binding) != 0)
    return NULL;
  sc_arena_config config = {.ops = &private_ops, .binding = &binding, .maxsize = maxsize,
                            .flags = flags, .library_default = library_default};
  return sc_arena_create(&config);
}

/* jemalloc never merges free extents of two of its address-space steps,
 * so a fixed range that it took in small steps could never again hold a
 * block larger than a step.  Its first step is made the largest that fits
 * (a block of the largest class whose step fits, allocated and freed),
 * and given back at once, so that it serves requests of any size. */
static void fixed_prime(sc_arena *a) {
  size_t room = a->windows[0].size, usize = je_nallocx(1 << 20, 0), best = 0;
  for (size_t next; (next = je_nallocx(usize + 1, 0)) <= room; usize = next)
    best = usize; /* its extent (usize and a page) takes a step of class next */
  void *p = best ? je_mallocx(best, sc_je_arena_flag(sc_je_of(a)->shards[0]) |
                                        MALLOCX_TCACHE_NONE) : NULL;
  if (p != NULL)
    je_dallocx(p, MALLOCX_TCACHE_NONE);
  shards_purge(a);
}

sicm_arena sicm_arena_create_fixed(void *addr, size_t size, sicm_device *dev) {
  sc_state *s = sc_state_get();
  if (s == NULL)
    return NULL;
  uintptr_t page = sc_page_size(), lo = sc_round_up((uintptr_t)addr, page);
  uintptr_t hi = ((uintptr_t)addr + size) & ~(page - 1);
  if (addr == NULL || (uintptr_t)addr + size < (uintptr_t)addr || hi <= lo)
    return sc_fail_null(EINVAL, "a fixed arena needs a page of memory (%p, %zu bytes)", addr,
                        size);
  int shared;
  if (!sc_range_writable(lo, hi, &shared))
    return sc_fail_null(EINVAL, "the memory at %p is not all mapped readable and writable",
                        addr);
  sc_binding binding = {.policy = MPOL_DEFAULT};
  if (dev != NULL) {
    if (sc_binding_make(s, &dev, 1, 0, &binding) != 0)
      return NULL;
    if (binding.huge_page)
      return sc_fail_null(EINVAL, "the caller's memory has base pages; the device has huge ones");
  }
  binding.capacity = hi - lo;
  /* Pages of a shared segment that another process touched are its too:
   * only MPOL_MF_MOVE_ALL moves them, where the process may. */
  sc_arena_config config = {.ops = &private_ops, .binding = &binding, .maxsize = hi - lo,
                            .borrowed_base = (void *)lo, .borrowed_size = hi - lo,
                            .move_all = shared && sc_may_move_others_pages()};
  /* The arena first: it refuses a range that is another arena's, which
   * must not be bound, nor its pages moved, by a call that fails. */
  sicm_arena sa = sc_arena_create(&config);
  if (sa == NULL)
    return NULL;
  /* The pages already touched move now; the rest fault in on dev. */
  if (dev != NULL && config.move_all)
    (void)sc_resident_runs((void *)lo, hi - lo, sc_populate_run, NULL);
  if (dev != NULL &&
      sc_mbind_resident((void *)lo, hi - lo, &binding,
                        config.move_all ? MPOL_MF_MOVE_ALL : MPOL_MF_MOVE) != 0) {
    int err = errno;
    sicm_arena_destroy(sa);
    return sc_fail_null(err, "mbind of the memory at %p to node %d failed: %s", addr,
                        dev->node, strerror(err));
  }
  fixed_prime(sc_arena_resolve(sa));
  return sa;
}

sicm_arena sicm_arena_create(size_t maxsize, sicm_device *dev) {
  return sc_je_arena_create(maxsize, &dev, 1, 0, 0);
}

sicm_arena sicm_arena_create_devices(size_t maxsize, sicm_device *const *devs, unsigned ndevs,
                                     unsigned flags) {
  return sc_je_arena_create(maxsize, devs, ndevs, flags, 0);
}
