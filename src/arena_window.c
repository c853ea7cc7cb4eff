/* SPDX-License-Identifier: BSD-3-Clause */
/* arena_window.c: address windows.  A private arena owns large NORESERVE
 * reservations (PROT_NONE under strict overcommit; hugetlb mappings in a
 * hugetlb arena), side by side low in the address space where it can,
 * bound once to the arena's nodes; jemalloc's extents are
 * carved from their bottom (and opened with mprotect when PROT_NONE), so
 * every piece inherits the binding, and the pages of the arena are always
 * a few known ranges (what migration moves).  A shared arena adopts its
 * segment as its one window.  A table indexed by 16 GiB chunk maps any
 * address to its arena without a lock; a fixed arena's window (memory the
 * caller owns, anywhere) marks its chunks SC_CHUNK_MANY, and a short list
 * of those windows finds the owner. */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <numaif.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "arena.h"

uint16_t sc_chunk_owner[SC_CHUNK_COUNT];
/* sc_window_owner tells an arena's slot + 1 from the marks by one test. */
_Static_assert(SC_ARENA_SLOTS < SC_CHUNK_LOST, "slot + 1 lies below the chunk table's marks");
uint8_t *sc_page_tags[SC_CHUNK_COUNT];

#define PAGE_TAGS_SIZE (SC_CHUNK_SIZE >> SC_PAGE_TAG_SHIFT)

/* Gives each chunk of a new private window, or of a fixed arena's range,
 * its page tags.  Without them (no memory for the table) frees of the
 * chunk take the slow path, which is correct; so this reports nothing. */
static void page_tags_make(const sc_window *w) {
  uintptr_t first = (uintptr_t)w->base >> SC_CHUNK_SHIFT;
  uintptr_t last = ((uintptr_t)w->base + w->size - 1) >> SC_CHUNK_SHIFT;
  for (uintptr_t c = first; c <= last; c++) {
    if (__atomic_load_n(&sc_page_tags[c], __ATOMIC_ACQUIRE) != NULL)
      continue; /* cleared when its last window went */
    void *tags = mmap(NULL, PAGE_TAGS_SIZE, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (tags != MAP_FAILED)
      __atomic_store_n(&sc_page_tags[c], (uint8_t *)tags, __ATOMIC_RELEASE);
  }
}

static void page_tags_clear(const sc_window *w) {
  uintptr_t first = (uintptr_t)w->base >> SC_CHUNK_SHIFT;
  for (uintptr_t c = first; c < first + w->size / SC_CHUNK_SIZE; c++) {
    uint8_t *tags = __atomic_load_n(&sc_page_tags[c], __ATOMIC_ACQUIRE);
    if (tags != NULL)
      madvise(tags, PAGE_TAGS_SIZE, MADV_DONTNEED); /* reads as zero again */
  }
}

void sc_page_tags_clear_inside(const void *p, size_t size) {
  uintptr_t page = ((uintptr_t)p >> SC_PAGE_TAG_SHIFT) + 1;
  uintptr_t last = ((uintptr_t)p + size - 1) >> SC_PAGE_TAG_SHIFT;
  while (page <= last) { /* chunk by chunk: each has its own table */
    uintptr_t chunk_last = ((((page << SC_PAGE_TAG_SHIFT) >> SC_CHUNK_SHIFT) + 1)
                            << (SC_CHUNK_SHIFT - SC_PAGE_TAG_SHIFT)) - 1;
    uintptr_t stop = last < chunk_last ? last : chunk_last;
    uint8_t *tag = sc_page_tag_of((void *)(page << SC_PAGE_TAG_SHIFT));
    if (tag != NULL)
      memset(tag, 0, stop - page + 1);
    page = stop + 1;
  }
}

/* ---- fixed arenas' windows ---- */
enum { FIXED_MAX = 256 };
typedef struct fixed_range {
  uintptr_t base, end;
  sc_arena *arena;              /* atomic; set last, cleared first */
} fixed_range;
static fixed_range fixed_ranges[FIXED_MAX];
static unsigned fixed_used;     /* atomic: entries ever used, a bound for readers */
static pthread_mutex_t fixed_lock = PTHREAD_MUTEX_INITIALIZER;

sc_arena *sc_window_owner_fixed(uintptr_t addr) {
  unsigned n = __atomic_load_n(&fixed_used, __ATOMIC_ACQUIRE);
  for (unsigned i = 0; i < n; i++) {
    sc_arena *a = __atomic_load_n(&fixed_ranges[i].arena, __ATOMIC_ACQUIRE);
    if (a != NULL && addr >= __atomic_load_n(&fixed_ranges[i].base, __ATOMIC_RELAXED) &&
        addr < __atomic_load_n(&fixed_ranges[i].end, __ATOMIC_RELAXED))
      return a;
  }
  return NULL;
}

/* Whether a fixed window other than `except` touches chunk c (fixed_lock). */
static int fixed_in_chunk(uintptr_t c, const fixed_range *except) {
  for (unsigned i = 0; i < fixed_used; i++) {
    const fixed_range *r = &fixed_ranges[i];
    if (r != except && r->arena != NULL && r->base >> SC_CHUNK_SHIFT <= c &&
        (r->end - 1) >> SC_CHUNK_SHIFT >= c)
      return 1;
  }
  return 0;
}

/* Whether [lo, hi) meets a window of the arena whose chunk-table entry is
 * `owner` (a full chunk always does).  Lock-free: windows are published
 * before the entry and never change while it names them. */
static int window_meets(unsigned owner, uintptr_t lo, uintptr_t hi) {
  if (!(owner & SC_CHUNK_PARTIAL))
    return 1;
  const sc_arena *a = __atomic_load_n(&sc_arena_slots[(owner & ~SC_CHUNK_PARTIAL) - 1],
                                      __ATOMIC_ACQUIRE);
  unsigned n = a ? __atomic_load_n(&a->nwindows, __ATOMIC_ACQUIRE) : 0;
  for (unsigned i = 0; i < n; i++) {
    uintptr_t base = (uintptr_t)a->windows[i].base;
    if (lo < base + a->windows[i].size && base < hi)
      return 1;
  }
  return 0;
}

/* Zeroes the page tags of [base, end): blocks of the caller's memory must
 * not be read as blocks of a private window that left its tags there. */
static void fixed_tags_clear(uintptr_t base, uintptr_t end) {
  for (uintptr_t p = base; p < end;) {
    uintptr_t chunk_end = ((p >> SC_CHUNK_SHIFT) + 1) << SC_CHUNK_SHIFT;
    uintptr_t stop = end < chunk_end ? end : chunk_end;
    uint8_t *tag = sc_page_tag_of((void *)p);
    if (tag != NULL)
      memset(tag, 0, (stop - p + (1u << SC_PAGE_TAG_SHIFT) - 1) >> SC_PAGE_TAG_SHIFT);
    p = stop;
  }
}

int sc_window_lend(sc_arena *a, void *base, size_t size) {
  uintptr_t lo = (uintptr_t)base, hi = lo + size;
  if (hi < lo || (hi - 1) >> SC_ADDRESS_BITS)
    return sc_fail(EINVAL, "the memory at %p is beyond the %d-bit address space", base,
                   SC_ADDRESS_BITS);
  pthread_mutex_lock(&fixed_lock);
  fixed_range *slot = NULL;
  int err = 0;
  for (unsigned i = 0; i < fixed_used && !err; i++) {
    fixed_range *r = &fixed_ranges[i];
    if (r->arena == NULL)
      slot = slot ? slot : r;
    else if (lo < r->end && r->base < hi)
      err = sc_fail(EINVAL, "the memory at %p overlaps another fixed arena's", base);
  }
  for (uintptr_t c = lo >> SC_CHUNK_SHIFT; !err && c <= (hi - 1) >> SC_CHUNK_SHIFT; c++) {
    unsigned owner = __atomic_load_n(&sc_chunk_owner[c], __ATOMIC_ACQUIRE);
    if (owner == SC_CHUNK_LOST)
      err = sc_fail(EINVAL, "the memory at %p lies where an arena lost at fork() was", base);
    else if (owner != 0 && owner != SC_CHUNK_MANY && window_meets(owner, lo, hi))
      err = sc_fail(EINVAL, "the memory at %p lies in another arena's address window", base);
  }
  if (!err && slot == NULL && fixed_used == FIXED_MAX)
    err = sc_fail(ENOMEM, "%d fixed arenas exist already", FIXED_MAX);
  if (err) {
    pthread_mutex_unlock(&fixed_lock);
    return -1;
  }
  if (slot == NULL)
    slot = &fixed_ranges[fixed_used];
  __atomic_store_n(&slot->base, lo, __ATOMIC_RELAXED);
  __atomic_store_n(&slot->end, hi, __ATOMIC_RELAXED);
  __atomic_store_n(&slot->arena, a, __ATOMIC_RELEASE);
  if (slot == &fixed_ranges[fixed_used])
    __atomic_store_n(&fixed_used, fixed_used + 1, __ATOMIC_RELEASE);
  /* A chunk a window ends in keeps its owner: lookups that miss the
   * window there look in the fixed list. */
  for (uintptr_t c = lo >> SC_CHUNK_SHIFT; c <= (hi - 1) >> SC_CHUNK_SHIFT; c++)
    if (__atomic_load_n(&sc_chunk_owner[c], __ATOMIC_ACQUIRE) == 0)
      __atomic_store_n(&sc_chunk_owner[c], (uint16_t)SC_CHUNK_MANY, __ATOMIC_RELEASE);
  /* The whole range is the caller's, touched or not through the arena:
   * residency and moves reach all of it. */
  sc_window w = {base, size, 0, size, size, NULL, 1};
  page_tags_make(&w);
  fixed_tags_clear(lo, hi);
  pthread_mutex_unlock(&fixed_lock);
  a->windows[0] = w;
  __atomic_store_n(&a->nwindows, 1, __ATOMIC_RELEASE);
  return 0;
}

static void window_unlend(const sc_window *w) {
  uintptr_t lo = (uintptr_t)w->base, hi = lo + w->size;
  pthread_mutex_lock(&fixed_lock);
  for (unsigned i = 0; i < fixed_used; i++) {
    fixed_range *r = &fixed_ranges[i];
    if (r->arena == NULL || r->base != lo)
      continue;
    __atomic_store_n(&r->arena, NULL, __ATOMIC_RELEASE);
    for (uintptr_t c = lo >> SC_CHUNK_SHIFT; c <= (hi - 1) >> SC_CHUNK_SHIFT; c++)
      if (!fixed_in_chunk(c, r) &&
          __atomic_load_n(&sc_chunk_owner[c], __ATOMIC_ACQUIRE) == SC_CHUNK_MANY)
        __atomic_store_n(&sc_chunk_owner[c], 0, __ATOMIC_RELEASE);
    fixed_tags_clear(lo, hi);
    break;
  }
  pthread_mutex_unlock(&fixed_lock);
}

sc_window *sc_window_of(sc_arena *a, const void *p) {
  for (unsigned i = 0; i < a->nwindows; i++)
    if ((uintptr_t)p - (uintptr_t)a->windows[i].base < a->windows[i].size)
      return &a->windows[i];
  return NULL;
}

int sc_window_contains(const sc_arena *a, uintptr_t p) {
  unsigned n = __atomic_load_n(&a->nwindows, __ATOMIC_ACQUIRE);
  for (unsigned i = 0; i < n; i++)
    if (p - (uintptr_t)a->windows[i].base < a->windows[i].size)
      return 1;
  return 0;
}

/* Unless the arena refused huge pages, a transparent huge page may back
 * the whole 2 MiB block around a committed page, so the reach goes to the
 * end of that block.  Under window_lock, as snapshots copy the windows:
 * commits are rare (jemalloc reuses what it committed). */
void sc_window_reach(sc_arena *a, void *p, size_t len) {
  uintptr_t last = (uintptr_t)p + len;
  if (a->huge_page)
    last = sc_round_up(last, a->huge_page);
  else if (!(a->flags & SICM_ARENA_NOHUGEPAGES))
    last = sc_round_up(last, (size_t)2 << 20);
  pthread_mutex_lock(&a->window_lock);
  for (unsigned i = 0; i < a->nwindows; i++) {
    sc_window *w = &a->windows[i];
    if ((uintptr_t)p - (uintptr_t)w->base < w->size) {
      size_t end = last - (uintptr_t)w->base;
      end = end < w->size ? end : w->size;
      w->reach = end > w->reach ? end : w->reach;
      break;
    }
  }
  pthread_mutex_unlock(&a->window_lock);
}

/* Fixed arenas' ranges may share a window's last chunk (the part it does
 * not fill): that chunk is marked partial while the window lives, and goes
 * back to SC_CHUNK_MANY, not to 0, when it leaves. */
static void window_set_owner(const sc_window *w, unsigned value) {
  uintptr_t first = (uintptr_t)w->base >> SC_CHUNK_SHIFT;
  uintptr_t end = ((uintptr_t)w->base + w->size + SC_CHUNK_SIZE - 1) >> SC_CHUNK_SHIFT;
  pthread_mutex_lock(&fixed_lock);
  for (uintptr_t c = first; c < end; c++) {
    int shared = fixed_in_chunk(c, NULL);
    unsigned v = value != 0 ? value : shared ? SC_CHUNK_MANY : 0;
    if (value != 0 && ((c + 1 == end && w->size % SC_CHUNK_SIZE != 0) || shared))
      v |= SC_CHUNK_PARTIAL;
    __atomic_store_n(&sc_chunk_owner[c], (uint16_t)v, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&fixed_lock);
}

static void window_publish(sc_arena *a, const sc_window *w) {
  a->windows[a->nwindows] = *w;
  window_set_owner(w, a->slot + 1);
  /* Readers (lookups, residency, migration) see nwindows only after the
   * window is set. */
  __atomic_store_n(&a->nwindows, a->nwindows + 1, __ATOMIC_RELEASE);
}

static int pages_open;
static pthread_once_t pages_open_once = PTHREAD_ONCE_INIT;

static void pages_open_read(void) {
  FILE *f = fopen("/proc/sys/vm/overcommit_memory", "r");
  int mode = 0;
  if (f != NULL) {
    if (fscanf(f, "%d", &mode) != 1)
      mode = 2; /* unreadable: assume the strict mode, which is always correct */
    fclose(f);
  }
  pages_open = mode != 2;
}

int sc_window_pages_open(void) {
  pthread_once(&pages_open_once, pages_open_read);
  return pages_open;
}

static size_t huge_bits_bytes(const sc_arena *a, size_t window_size) {
  return sc_round_up(window_size / a->huge_page * sizeof(uint32_t), sc_page_size());
}

/* Replaces the reserved range [base, base + size) with a hugetlb mapping
 * of the arena's page size and gives it its page counts.  NORESERVE: the kernel
 * reserves nothing for the window; each page is taken from the node's
 * pool when the hooks populate it. */
static int window_map_huge(const sc_arena *a, char *base, size_t size, sc_window *w) {
  int shift = __builtin_ctzl(a->huge_page);
  void *h = mmap(base, size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED | MAP_HUGETLB |
                     (shift << MAP_HUGE_SHIFT), -1, 0);
  if (h == MAP_FAILED)
    return sc_fail(errno == EINVAL ? ENOMEM : errno, "no hugetlb mapping of %zu KiB pages: %s",
                   a->huge_page >> 10, strerror(errno));
  /* Not inherited by a child of fork(): a huge page both processes map is
   * copied at the first write, and with no free huge page for the copy
   * the kernel ends the writer (either one) with SIGBUS. */
  madvise(h, size, MADV_DONTFORK);
  void *bits = mmap(NULL, huge_bits_bytes(a, size), PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (bits == MAP_FAILED)
    return sc_fail(ENOMEM, "out of memory for a hugetlb window's page counts");
  w->populated = bits;
  w->room = size;
  return 0;
}

/* Where windows go first: a region low in the address space, above
 * AddressSanitizer's shadow and below where the kernel puts programs,
 * libraries and its own choice of mappings, filled from a point chosen
 * per process.  /proc/self/smaps lists mappings by address, so the
 * placer's monitor stops reading past the last window and the rest of the
 * process, however large, costs it nothing (autoplace_monitor.c).  Where
 * the region is taken (by anything: MAP_FIXED_NOREPLACE never replaces a
 * mapping) or refused, the kernel picks; and always in a process that
 * runs ThreadSanitizer, whose mmap turns a hint outside its application
 * ranges into address 0, which MAP_FIXED_NOREPLACE would then map. */
#define REGION_FIRST_CHUNK ((uintptr_t)0x100400000000 >> SC_CHUNK_SHIFT)
#define REGION_END_CHUNK ((uintptr_t)0x540000000000 >> SC_CHUNK_SHIFT)
#define REGION_SPREAD_CHUNKS 1024 /* the start varies over this many */
#define REGION_TRIES 16           /* mappings of others met before giving up */

static uintptr_t region_start; /* 0: no region in this process */
static pthread_once_t region_once = PTHREAD_ONCE_INIT;

/* The start varies with the stack's randomized address, so arenas do not
 * land at one address in every process. */
static void region_choose(void) {
  if (dlsym(RTLD_DEFAULT, "__tsan_init") != NULL)
    return;
  uintptr_t bits = (uintptr_t)&bits >> 12;
  bits ^= bits >> 17;
  region_start = REGION_FIRST_CHUNK + (bits * 0x9e3779b97f4a7c15ull >> 40) % REGION_SPREAD_CHUNKS;
}

/* A reservation of `size` bytes (chunks) in the region, or MAP_FAILED. */
static char *region_map(size_t size, int prot) {
  pthread_once(&region_once, region_choose);
  if (region_start == 0)
    return MAP_FAILED;
  uintptr_t need = size >> SC_CHUNK_SHIFT, run = 0, tries = 0;
  for (uintptr_t c = region_start; c < REGION_END_CHUNK && tries < REGION_TRIES; c++) {
    run = __atomic_load_n(&sc_chunk_owner[c], __ATOMIC_ACQUIRE) == 0 ? run + 1 : 0;
    if (run < need)
      continue;
    char *want = (char *)((c + 1 - need) << SC_CHUNK_SHIFT);
    char *got = mmap(want, size, prot,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (got == want)
      return got;
    if (got != MAP_FAILED) { /* a kernel without MAP_FIXED_NOREPLACE took it as a hint */
      munmap(got, size);
      return MAP_FAILED;
    }
    if (errno != EEXIST)
      return MAP_FAILED;
    tries++;
    run = 0;
  }
  return MAP_FAILED;
}

/* Reserves a new window of at least min_size bytes; 0 or -1 with errno. */
static int window_reserve(sc_arena *a, size_t min_size) {
  if (a->nwindows == SC_WINDOWS_MAX)
    return sc_fail(ENOMEM, "the arena has all %d windows of address space", SC_WINDOWS_MAX);
  if (min_size > ((size_t)1 << 46))
    return sc_fail(ENOMEM, "%zu bytes exceed any window", min_size);
  size_t size = sc_round_up(min_size > SC_CHUNK_SIZE ? min_size : SC_CHUNK_SIZE, SC_CHUNK_SIZE);
  size_t span = size + SC_CHUNK_SIZE;
  int prot = sc_window_pages_open() || a->huge_page ? PROT_READ | PROT_WRITE : PROT_NONE;
  char *base = region_map(size, prot);
  if (base == MAP_FAILED) {
    char *raw = mmap(NULL, span, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED)
      return sc_fail(ENOMEM, "no %zu bytes of address space for a window: %s", span,
                     strerror(errno));
    base = (char *)sc_round_up((uintptr_t)raw, SC_CHUNK_SIZE);
    if (base > raw)
      munmap(raw, (size_t)(base - raw));
    if (raw + span > base + size)
      munmap(base + size, (size_t)(raw + span - (base + size)));
  }
  if (((uintptr_t)base + size - 1) >> SC_ADDRESS_BITS) {
    munmap(base, size);
    return sc_fail(ENOMEM, "the kernel placed a window above the %d-bit address space",
                   SC_ADDRESS_BITS);
  }
  /* Where a fork() child could not hold a lost window's range, the kernel
   * may offer it: it is never a window (sc_window_lose_all). */
  uintptr_t first = (uintptr_t)base >> SC_CHUNK_SHIFT;
  for (uintptr_t c = first; c < first + size / SC_CHUNK_SIZE; c++)
    if (__atomic_load_n(&sc_chunk_owner[c], __ATOMIC_ACQUIRE) == SC_CHUNK_LOST) {
      munmap(base, size);
      return sc_fail(ENOMEM, "the kernel offered a window where an arena lost at fork() was");
    }
  sc_window w = {base, size, 0, 0, size - sc_page_size(), NULL, 0};
  if (a->huge_page && window_map_huge(a, base, size, &w) != 0) {
    int err = errno;
    munmap(base, size);
    errno = err;
    return -1;
  }
  if (mbind(base, size, a->binding.policy, a->binding.nodes.bits, SC_NODES_MAX, 0) != 0) {
    int err = errno;
    munmap(base, size);
    if (w.populated)
      munmap(w.populated, huge_bits_bytes(a, size));
    return sc_fail(err, "mbind of a new window to the arena's nodes failed: %s", strerror(err));
  }
  /* The guard page: no two windows are one mapping, even when adjacent
   * and bound alike, so /proc/self/smaps tells arenas apart (the placer's
   * monitor reads it per mapping).  Hugetlb mappings never merge. */
  if (!a->huge_page && prot != PROT_NONE &&
      mprotect(base + size - sc_page_size(), sc_page_size(), PROT_NONE) != 0) {
    int err = errno;
    munmap(base, size);
    return sc_fail(err, "mprotect of a new window's guard page failed: %s", strerror(err));
  }
  if ((a->flags & SICM_ARENA_HUGEPAGES) && !a->huge_page)
    madvise(base, size, MADV_HUGEPAGE); /* advice: a kernel without THP keeps base pages */
  else if (a->flags & SICM_ARENA_NOHUGEPAGES)
    madvise(base, size, MADV_NOHUGEPAGE);
  page_tags_make(&w);
  window_publish(a, &w);
  return 0;
}

void sc_window_adopt(sc_arena *a, void *base, size_t size) {
  window_publish(a, &(sc_window){base, size, size, size, size, NULL, 0});
}

static void *window_bump(sc_window *w, size_t size, size_t alignment) {
  uintptr_t start = sc_round_up((uintptr_t)w->base + w->used, alignment);
  if (start + size > (uintptr_t)w->base + w->room)
    return NULL;
  w->used = start + size - (uintptr_t)w->base;
  return (void *)start;
}

void *sc_window_take(sc_arena *a, void *new_addr, size_t size, size_t alignment) {
  if (alignment < sc_page_size())
    alignment = sc_page_size();
  if (new_addr != NULL) {
    /* jemalloc asks for the bytes right after an extent to grow it in place. */
    for (unsigned i = 0; i < a->nwindows; i++) {
      sc_window *w = &a->windows[i];
      if (w->base + w->used == (char *)new_addr && w->room - w->used >= size) {
        w->used += size;
        return new_addr;
      }
    }
    return sc_fail_null(ENOMEM, "no room to grow the extent at %p in place", new_addr);
  }
  void *p = a->nwindows ? window_bump(&a->windows[a->nwindows - 1], size, alignment) : NULL;
  if (p == NULL && a->borrowed)
    return sc_fail_null(ENOMEM, "the fixed arena's %zu bytes are all taken",
                        a->windows[0].size);
  if (p == NULL && window_reserve(a, size + alignment + sc_page_size()) == 0)
    p = window_bump(&a->windows[a->nwindows - 1], size, alignment);
  return p;
}

unsigned sc_window_snapshot(sc_arena *a, sc_window *out) {
  pthread_mutex_lock(&a->window_lock);
  unsigned n = a->nwindows;
  memcpy(out, a->windows, n * sizeof *out);
  pthread_mutex_unlock(&a->window_lock);
  return n;
}

void sc_window_release_all(sc_arena *a) {
  for (unsigned i = 0; i < a->nwindows; i++) {
    if (a->windows[i].borrowed) {
      window_unlend(&a->windows[i]);
      continue;
    }
    window_set_owner(&a->windows[i], 0);
    page_tags_clear(&a->windows[i]);
    munmap(a->windows[i].base, a->windows[i].size);
    if (a->windows[i].populated)
      munmap(a->windows[i].populated, huge_bits_bytes(a, a->windows[i].size));
  }
  __atomic_store_n(&a->nwindows, 0, __ATOMIC_RELEASE);
}

/* The child did not inherit the windows (MADV_DONTFORK) but did inherit
 * jemalloc's map from addresses to extents, which still names the lost
 * arena's extents there: an extent of another arena at those addresses
 * would merge with them.  So the addresses are never used again, neither
 * by a window (the chunk table) nor by the kernel's choice (a mapping that
 * reserves them, at no cost).  The child has one thread: no lock is
 * taken (fixed_lock may have been held by a thread of the parent). */
void sc_window_lose_all(sc_arena *a) {
  for (unsigned i = 0; i < a->nwindows; i++) {
    const sc_window *w = &a->windows[i];
    uintptr_t first = (uintptr_t)w->base >> SC_CHUNK_SHIFT;
    page_tags_clear(w);
    for (uintptr_t c = first; c < first + w->size / SC_CHUNK_SIZE; c++)
      __atomic_store_n(&sc_chunk_owner[c], (uint16_t)SC_CHUNK_LOST, __ATOMIC_RELEASE);
    void *held = mmap(w->base, w->size, PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (held != MAP_FAILED && held != w->base) /* a kernel without NOREPLACE: a hint */
      munmap(held, w->size);
    if (w->populated)
      munmap(w->populated, huge_bits_bytes(a, w->size));
  }
  __atomic_store_n(&a->nwindows, 0, __ATOMIC_RELEASE);
}
