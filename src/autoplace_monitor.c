/* SPDX-License-Identifier: BSD-3-Clause */
/* autoplace_monitor.c: how hot each arena is, measured without touching its
 * data.  Linux keeps an accessed bit per page-table entry;
 * madvise(MADV_COLD) clears those of a range and drops their translations,
 * so the next access sets the bit again, and /proc/self/smaps shows, per
 * mapping, `Referenced:` — the bytes whose bits are set.  Arena windows are
 * mappings of their own (arena_window.c ends each with a page no access may
 * reach, so two arenas' windows never merge into one mapping), so each
 * mapping's bytes belong to the arena that owns its addresses.  Needs no
 * privilege.
 *
 * Sampling.  Each bit cleared costs the program a page walk that sets it
 * again, and under some virtual machines that walk costs as much as a
 * fault.  So each interval only a sample of each arena is cleared: every
 * k-th chunk (see CHUNK_BASE), from an offset that turns each interval,
 * with k the smallest power of two that keeps the walks under COST_SHARE
 * of the interval.  Its pages untouched since are then the arena's only
 * unreferenced ones, once the previous sample's untouched pages read as
 * referenced again: MADV_POPULATE_READ over its resident pages marks them
 * accessed (the page flag smaps counts; no data is read, no bit set).
 * Where that does not hold, every chunk is cleared each interval.  An
 * arena too small to sample is cleared whole, and whole arenas side by
 * side in one call.
 *
 * What it costs grows with the arenas, not with the process: smaps is
 * read only up to the arenas' last window, and windows lie below the
 * program's other mappings (arena_window.c).  Each mapping read costs the
 * kernel a walk of its page tables, a step per resident base page.
 *
 * Where MADV_COLD is refused, or a shared arena takes part (MADV_COLD may
 * skip pages other processes map), the whole process is cleared through
 * /proc/self/clear_refs instead, at the full cost. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "autoplace.h"

/* The lines of /proc/self/smaps read. */
enum { FIELD_RSS, FIELD_REFERENCED, FIELD_HUGE };
/* Calls fn(ctx, start, end, field, kib) for every such line, with the
 * range of the mapping it belongs to. */
typedef void (*smaps_fn)(void *ctx, uintptr_t start, uintptr_t end, int field, uint64_t kib);

static uint64_t field_kib(const char *p) {
  while (*p == ' ')
    p++;
  return strtoull(p, NULL, 10);
}

/* At the header of a mapping: 2 when it starts at or past `stop`, else
 * 1; 0 at other lines. */
static int smaps_line(char *line, uintptr_t *start, uintptr_t *end, uintptr_t stop, smaps_fn fn,
                      void *ctx) {
  if (strncmp(line, "Rss:", 4) == 0) {
    fn(ctx, *start, *end, FIELD_RSS, field_kib(line + 4));
  } else if (strncmp(line, "Referenced:", 11) == 0) {
    fn(ctx, *start, *end, FIELD_REFERENCED, field_kib(line + 11));
  } else if (strncmp(line, "AnonHugePages:", 14) == 0) {
    fn(ctx, *start, *end, FIELD_HUGE, field_kib(line + 14));
  } else if ((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f')) {
    char *dash;
    unsigned long long s = strtoull(line, &dash, 16);
    if (*dash == '-') {
      *start = (uintptr_t)s;
      *end = (uintptr_t)strtoull(dash + 1, NULL, 16);
      return *start >= stop ? 2 : 1;
    }
  }
  return 0;
}

/* Reads the mappings below `stop`.  The kernel walks the page tables of
 * each mapping only when a read reaches it, so the mappings past `stop`
 * cost nothing but the few one read buffer holds beyond it.  The number
 * of mappings read, or -1 with errno. */
static int smaps_read(uintptr_t stop, smaps_fn fn, void *ctx) {
  int fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return sc_fail(errno == ENOENT ? ENOTSUP : errno, "cannot open /proc/self/smaps: %s",
                   strerror(errno));
  enum { BUF = 65536, READ = 16384 };
  char *buf = malloc(BUF);
  if (buf == NULL) {
    close(fd);
    return sc_fail(ENOMEM, "out of memory");
  }
  size_t have = 0;
  uintptr_t start = 0, end = 0;
  int rc = 0, past = 0, mappings = 0;
  while (!past) {
    size_t want = BUF - 1 - have < READ ? BUF - 1 - have : READ;
    ssize_t got = read(fd, buf + have, want);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      rc = sc_fail(errno, "reading /proc/self/smaps failed: %s", strerror(errno));
      break;
    }
    have += (size_t)got;
    buf[have] = '\0';
    char *line = buf, *nl;
    while (!past && (nl = strchr(line, '\n')) != NULL) {
      *nl = '\0';
      int header = smaps_line(line, &start, &end, stop, fn, ctx);
      past = header == 2;
      mappings += header != 0;
      line = nl + 1;
    }
    size_t rest = have - (size_t)(line - buf);
    memmove(buf, line, rest);
    have = rest;
    if (got == 0 || have == BUF - 1) /* the end, or a line longer than the buffer */
      break;
  }
  free(buf);
  close(fd);
  return rc < 0 ? rc : mappings;
}

static int refs_clear(void) {
  int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return sc_fail(errno == ENOENT ? ENOTSUP : errno, "cannot open /proc/self/clear_refs: %s",
                   strerror(errno));
  ssize_t n = write(fd, "1", 1);
  int err = errno;
  close(fd);
  return n == 1 ? 0 : sc_fail(err, "writing /proc/self/clear_refs failed: %s", strerror(err));
}

static void sample_add(void *ctx, uintptr_t start, uintptr_t end, int field, uint64_t kib) {
  sc_monitor_bytes *s = ctx;
  if (kib == 0)
    return;
  sc_arena *a = sc_window_owner((const void *)start);
  if (a == NULL)
    return;
  if (sc_window_owner((const void *)(end - 1)) != a) {
    if (field == FIELD_REFERENCED)
      s->unattributed += kib << 10;
    return;
  }
  uint64_t *to = field == FIELD_RSS ? s->resident : field == FIELD_REFERENCED ? s->referenced
                                                                                : s->huge;
  to[a->slot] += kib << 10;
}

/* ---- the sample ---- */

/* The unit of the sample.  An arena with transparent huge pages is
 * cleared by whole huge pages, which MADV_COLD would split otherwise.
 * Others by 32 pages: the kernel drops the translations of a range of up
 * to 33 pages one by one and flushes the whole TLB for more, which costs
 * every page the program touches a walk again (dearest under QEMU's TCG,
 * whose TLB holds them all; BENCHMARKS.md). */
enum {
  CHUNK_HUGE = 2 << 20,
  CHUNK_BASE = 32 << 12,
  EVERY_MAX = 64,    /* the sparsest sample: one chunk in this many */
};
/* What clearing costs the program, at the dearest measured
 * (BENCHMARKS.md): setting a cleared bit again, a page walk (under nested
 * paging; no probe of a few pages can tell, because the cost grows with
 * the working set); and each call that clears one, a TLB-flush interrupt
 * to every CPU that runs the program (under TCG).  k keeps the two under
 * COST_SHARE of the interval where it can, and the sample at WHOLE_BYTES
 * at least: a sample of so few chunks would misread arenas touched in
 * part.  Where no k keeps the share, the cheapest does. */
static const double COST_SHARE = 1.0 / 100, RESET_NS = 200, CALL_NS = 40000;
static const uint64_t WHOLE_BYTES = 16 << 20;

/* The arena in slot if it is live and takes part, else NULL. */
static sc_arena *taking_part(unsigned slot, sc_monitor_takes_part takes_part,
                             uint64_t *generation) {
  sc_arena *a = __atomic_load_n(&sc_arena_slots[slot], __ATOMIC_ACQUIRE);
  *generation = a ? __atomic_load_n(&a->live_generation, __ATOMIC_ACQUIRE) : 0;
  return *generation && takes_part(a) ? a : NULL;
}

/* The phase's bits reversed within the stride: consecutive intervals
 * sample chunks far apart, so an arena touched only in its first part
 * does not read hot for several intervals in a row. */
static uint64_t spread(uint64_t phase, uint64_t stride) {
  uint64_t out = 0;
  for (uint64_t bit = 1; bit < stride; bit <<= 1, phase >>= 1)
    out = out << 1 | (phase & 1);
  return out < stride ? out : out % stride;
}

/* Calls fn(ctx, start, len) for each sampled chunk of the arena's windows
 * (clipped to the window, its guard page excluded): chunks j of the
 * arena's used ranges, counted across its windows, with j % stride ==
 * spread(phase, stride), where stride is `every` or the arena's chunk
 * count if smaller (then one chunk). */
static void sample_chunks(const sc_arena *a, uintptr_t chunk, unsigned every, uint64_t phase,
                          void (*fn)(void *, char *, size_t), void *ctx) {
  unsigned nw = __atomic_load_n(&a->nwindows, __ATOMIC_ACQUIRE);
  uint64_t nchunks = 0;
  for (unsigned i = 0; i < nw; i++) {
    uintptr_t lo = (uintptr_t)a->windows[i].base & ~(chunk - 1);
    uintptr_t hi = (uintptr_t)a->windows[i].base + __atomic_load_n(&a->windows[i].used,
                                                                   __ATOMIC_RELAXED);
    if (hi > (uintptr_t)a->windows[i].base)
      nchunks += (sc_round_up(hi, chunk) - lo) / chunk;
  }
  if (nchunks == 0)
    return;
  uint64_t stride = nchunks < every ? nchunks : every, pick = spread(phase, stride), j = 0;
  for (unsigned i = 0; i < nw; i++) {
    uintptr_t base = (uintptr_t)a->windows[i].base;
    uintptr_t room = base + a->windows[i].size - sc_page_size();
    uintptr_t hi = base + __atomic_load_n(&a->windows[i].used, __ATOMIC_RELAXED);
    if (every == 1) { /* all of it: one call a window */
      uintptr_t to = sc_round_up(hi, chunk) < room ? sc_round_up(hi, chunk) : room;
      if (to > base)
        fn(ctx, (char *)base, to - base);
      continue;
    }
    for (uintptr_t c = base & ~(chunk - 1); c < hi; c += chunk, j++) {
      if (j % stride != pick)
        continue;
      uintptr_t from = c < base ? base : c, to = c + chunk < room ? c + chunk : room;
      if (to > from)
        fn(ctx, (char *)from, to - from);
    }
  }
}

static void chunk_clear(void *ctx, char *p, size_t len) {
  /* ENOMEM: the window went with its arena meanwhile; nothing to clear. */
  if (madvise(p, len, MADV_COLD) != 0 && errno == EINVAL)
    *(int *)ctx = 1; /* refused: clear the whole process */
}

/* ---- whole arenas, cleared together ---- */
/* Each call that clears costs every CPU running the program a TLB flush,
 * so the windows cleared whole are gathered, and adjacent ones (windows
 * lie side by side in their region, arena_window.c) cleared in one call:
 * what lies between two of them is the first one's unused room and guard
 * page. */
typedef struct clear_gather {
  sc_monitor *m;
  unsigned slot;
  uint64_t generation;
  int *refused;
} clear_gather;

static int range_cmp(const void *x, const void *y) {
  const sc_monitor_range *a = x, *b = y;
  return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* Whether the addresses between r and the later range `next` hold nothing
 * but r's own window: every chunk between is r's arena's, whole. */
static int ranges_join(const sc_monitor_range *r, const sc_monitor_range *next) {
  uintptr_t last = (r->hi - 1) >> SC_CHUNK_SHIFT, first = next->lo >> SC_CHUNK_SHIFT;
  if (first <= last)
    return 0;
  for (uintptr_t c = last; c < first; c++)
    if (__atomic_load_n(&sc_chunk_owner[c], __ATOMIC_ACQUIRE) != r->slot + 1)
      return 0;
  return 1;
}

/* Whether the range's arena is still the one gathered and still owns it:
 * an arena destroyed meanwhile leaves its addresses to the next window. */
static int range_current(const sc_monitor_range *r) {
  const sc_arena *a = __atomic_load_n(&sc_arena_slots[r->slot], __ATOMIC_ACQUIRE);
  return a != NULL && __atomic_load_n(&a->live_generation, __ATOMIC_ACQUIRE) == r->generation &&
         __atomic_load_n(&sc_chunk_owner[r->lo >> SC_CHUNK_SHIFT], __ATOMIC_ACQUIRE) ==
             r->slot + 1;
}

static void clear_flush(sc_monitor *m, int *refused) {
  unsigned kept = 0;
  for (unsigned i = 0; i < m->nclear; i++)
    if (range_current(&m->clear[i]))
      m->clear[kept++] = m->clear[i];
  m->nclear = kept;
  qsort(m->clear, m->nclear, sizeof m->clear[0], range_cmp);
  for (unsigned i = 0; i < m->nclear;) {
    unsigned j = i;
    while (j + 1 < m->nclear && ranges_join(&m->clear[j], &m->clear[j + 1]))
      j++;
    chunk_clear(refused, (char *)m->clear[i].lo, m->clear[j].hi - m->clear[i].lo);
    m->runs_counted++;
    i = j + 1;
  }
  m->nclear = 0;
}

static void chunk_gather(void *ctx, char *p, size_t len) {
  clear_gather *g = ctx;
  if (g->m->nclear == SC_ARENA_SLOTS)
    clear_flush(g->m, g->refused);
  g->m->clear[g->m->nclear++] =
      (sc_monitor_range){(uintptr_t)p, (uintptr_t)p + len, g->slot, g->generation};
}

/* Calls fn(ctx, start, len) for each run of resident pages of a range. */
static void resident_runs(char *p, size_t len, void (*fn)(void *, char *, size_t), void *ctx) {
  size_t page = sc_page_size();
  unsigned char vec[CHUNK_HUGE / 4096];
  for (size_t done = 0; done < len; done += sizeof vec * page) {
    size_t part = len - done < sizeof vec * page ? len - done : sizeof vec * page;
    size_t n = part / page, run = 0;
    if (mincore(p + done, part, vec) != 0)
      continue;
    for (size_t i = 0; i <= n; i++) {
      if (i < n && (vec[i] & 1)) {
        run++;
      } else if (run) {
        fn(ctx, p + done + (i - run) * page, run * page);
        run = 0;
      }
    }
  }
}

static void add_bytes(void *ctx, char *p, size_t len) {
  (void)p;
  *(uint64_t *)ctx += len;
}

static void chunk_count(void *ctx, char *p, size_t len) { resident_runs(p, len, add_bytes, ctx); }

/* Marks resident pages accessed, so that they read as referenced; never
 * faults one in (mincore first): a read fault would map the zero page. */
static void run_restore(void *ctx, char *p, size_t len) {
  (void)ctx;
  madvise(p, len, MADV_POPULATE_READ);
}

static void chunk_restore(void *ctx, char *p, size_t len) { resident_runs(p, len, run_restore, ctx); }

/* The bytes each arena referenced since its sample was cleared, scaled
 * from the sample to the arena: its unreferenced bytes are the sample's
 * untouched ones. */
static void estimate(const sc_monitor *m, sc_monitor_bytes *out) {
  for (unsigned slot = 0; slot < SC_ARENA_SLOTS; slot++) {
    const sc_monitor_slot *st = &m->slots[slot];
    uint64_t resident = out->resident[slot], referenced = out->referenced[slot];
    if (st->generation == 0 || st->whole || st->every <= 1)
      continue; /* never cleared (all its pages read as new), or all of it cleared:
                 * the reading is exact */
    sc_arena *a = __atomic_load_n(&sc_arena_slots[slot], __ATOMIC_ACQUIRE);
    if (a == NULL || __atomic_load_n(&a->live_generation, __ATOMIC_ACQUIRE) != st->generation)
      continue;
    uint64_t untouched = resident > referenced ? resident - referenced : 0;
    if (untouched > st->sample)
      untouched = st->sample;
    out->referenced[slot] =
        st->sample ? (uint64_t)((double)(st->sample - untouched) / (double)st->sample *
                                (double)resident)
                   : 0;
  }
}

/* The k of this interval: see COST_SHARE.  Arenas of fewer than
 * WHOLE_BYTES resident are cleared whole, and all of them together take
 * `runs` calls (the last interval's count: windows side by side take
 * one); the others are sampled, a call a chunk, or cleared whole too when
 * k is 1. */
static unsigned stride_choose(const sc_monitor *m, uint64_t hot_sampled, uint64_t hot_whole,
                              uint64_t chunks, uint64_t runs) {
  double budget_ns = COST_SHARE * (double)m->interval_ms * 1e6, best_ns = 0;
  unsigned best = 1;
  for (unsigned every = 1; every <= EVERY_MAX; every *= 2) {
    if (every > 1 && hot_sampled / every < WHOLE_BYTES)
      break;
    double ns = (double)((hot_sampled / every + hot_whole) / sc_page_size()) * RESET_NS +
                (double)(every == 1 ? runs : chunks / every + runs) * CALL_NS;
    if (ns <= budget_ns)
      return every;
    if (every == 1 || ns < best_ns) {
      best = every;
      best_ns = ns;
    }
  }
  return best;
}

/* The end of the highest window of any arena: smaps is read up to there.
 * Windows lie low in the address space where they can (arena_window.c). */
static uintptr_t windows_end(void) {
  uintptr_t end = 0;
  for (unsigned slot = 0; slot < SC_ARENA_SLOTS; slot++) {
    const sc_arena *a = __atomic_load_n(&sc_arena_slots[slot], __ATOMIC_ACQUIRE);
    unsigned n = a ? __atomic_load_n(&a->nwindows, __ATOMIC_ACQUIRE) : 0;
    for (unsigned i = 0; i < n; i++) {
      uintptr_t e = (uintptr_t)a->windows[i].base + a->windows[i].size;
      end = e > end ? e : end;
    }
  }
  return end;
}

int sc_monitor_sample(sc_monitor *m, sc_monitor_takes_part takes_part, sc_monitor_bytes *out) {
  memset(out, 0, sizeof *out);
  int mappings = smaps_read(windows_end(), sample_add, out);
  if (mappings < 0)
    return -1;
  m->mappings = (unsigned)mappings;
  estimate(m, out);
  int whole = m->refused;
  uint64_t hot_sampled = 0, hot_whole = 0, chunks = 0, arenas = 0, generation;
  for (unsigned slot = 0; slot < SC_ARENA_SLOTS; slot++) {
    sc_arena *a = taking_part(slot, takes_part, &generation);
    if (a == NULL)
      continue;
    if (out->resident[slot] >= WHOLE_BYTES) {
      hot_sampled += out->referenced[slot];
      chunks += out->resident[slot] / (out->huge[slot] ? CHUNK_HUGE : CHUNK_BASE) + 1;
    } else {
      hot_whole += out->referenced[slot];
    }
    arenas++;
    whole |= a->ops->pages_map != NULL; /* shared */
  }
  unsigned every = 1;
  if (!whole && m->restores)
    every = m->every_fixed ? m->every_fixed
                           : stride_choose(m, hot_sampled, hot_whole, chunks,
                                           m->runs ? m->runs : arenas);
  m->every = every;
  if (whole && refs_clear() != 0)
    return -1;
  int refused = 0;
  m->runs_counted = 0;
  for (unsigned slot = 0; slot < SC_ARENA_SLOTS; slot++) {
    sc_monitor_slot *st = &m->slots[slot];
    sc_arena *a = taking_part(slot, takes_part, &generation);
    /* Cleared whole last time and nothing of it touched since: it stays
     * cleared, and the next reading covers both intervals.  A cold arena
     * costs no clearing, only its reading.  (A sample is cleared anew
     * each interval: it turns, so that every part is read in time.) */
    if (a != NULL && !whole && generation == st->generation && !st->whole && st->every == 1 &&
        out->referenced[slot] == 0)
      continue;
    int sampled = a != NULL && every > 1 && out->resident[slot] >= WHOLE_BYTES;
    /* The last sample's untouched pages read as referenced again, unless
     * every chunk is cleared now anyway. */
    if (sampled && generation == st->generation && st->every != 0)
      sample_chunks(a, st->chunk, st->every, st->phase, chunk_restore, NULL);
    *st = (sc_monitor_slot){0};
    if (a == NULL)
      continue;
    st->generation = generation;
    st->whole = whole;
    if (whole) { /* what the next sample restores: all of it */
      st->chunk = CHUNK_HUGE;
      st->every = 1;
      continue;
    }
    st->chunk = out->huge[slot] ? CHUNK_HUGE : CHUNK_BASE;
    st->every = every;
    st->phase = m->phase;
    clear_gather gather = {m, slot, generation, &refused};
    if (sampled) {
      sample_chunks(a, st->chunk, every, m->phase, chunk_clear, &refused);
      sample_chunks(a, st->chunk, every, m->phase, chunk_count, &st->sample);
    }
    if (st->sample == 0) { /* all of it: every chunk, or nothing of it in the sample */
      sample_chunks(a, st->chunk, 1, 0, chunk_gather, &gather);
      st->every = 1;
      st->sample = out->resident[slot];
    }
  }
  clear_flush(m, &refused);
  m->runs = m->runs_counted;
  if (refused) /* from the next interval on; this one's estimate is off once */
    m->refused = 1;
  m->phase++;
  return 0;
}

/* ---- the probe ---- */

typedef struct probe {
  uintptr_t start;
  uint64_t referenced, resident;
} probe;

static void probe_add(void *ctx, uintptr_t start, uintptr_t end, int field, uint64_t kib) {
  (void)end;
  probe *p = ctx;
  if (start == p->start && field != FIELD_HUGE)
    *(field == FIELD_REFERENCED ? &p->referenced : &p->resident) = kib << 10;
}

static int probe_clear(char *pages, size_t len, int cold) {
  if (!cold)
    return refs_clear();
  if (madvise(pages, len, MADV_COLD) == 0)
    return 0;
  return sc_fail(errno == EINVAL ? ENOTSUP : errno, "madvise(MADV_COLD) failed: %s",
                 strerror(errno));
}

/* Half the probe's pages are touched before a clear and never after, the
 * other half first touched after it.  A kernel that reports referenced
 * pages and clears them shows exactly that second half.  (Pages touched
 * again after a clear would not do: /proc/self/clear_refs leaves
 * translations in the TLB, and accesses through them set no bit.) */
static int probe_check(char *pages, unsigned npages, int cold) {
  size_t page = sc_page_size(), half = npages / 2 * page;
  for (size_t i = 0; i < npages / 2; i++)
    ((volatile char *)pages)[i * page] = 1;
  probe p = {(uintptr_t)pages, 0, 0};
  if (probe_clear(pages, npages * page, cold) != 0)
    return -1;
  for (size_t i = npages / 2; i < npages; i++)
    ((volatile char *)pages)[i * page] = 2;
  if (smaps_read(UINTPTR_MAX, probe_add, &p) < 0)
    return -1;
  if (p.resident != npages * page)
    return sc_fail(ENOTSUP, "the monitor's probe: /proc/self/smaps shows %llu of its %zu "
                            "resident bytes", (unsigned long long)p.resident, npages * page);
  if (p.referenced == 0)
    return sc_fail(ENOTSUP, "this kernel does not report referenced pages to the process "
                            "(/proc/self/smaps shows 0 referenced bytes for pages just written)");
  if (p.referenced != half)
    return sc_fail(ENOTSUP, "%s does not clear what /proc/self/smaps counts (%llu referenced "
                            "bytes where %zu were touched since the clear)",
                   cold ? "madvise(MADV_COLD)" : "/proc/self/clear_refs",
                   (unsigned long long)p.referenced, half);
  return 0;
}

/* 1 when marking the probe's cleared pages accessed makes them read as
 * referenced (not so where the kernel counts accesses otherwise, as under
 * the multi-generational LRU). */
static int probe_restore(char *pages, unsigned npages) {
  size_t len = npages * sc_page_size();
  probe p = {(uintptr_t)pages, 0, 0};
  if (madvise(pages, len, MADV_COLD) != 0 || madvise(pages, len, MADV_POPULATE_READ) != 0 ||
      smaps_read(UINTPTR_MAX, probe_add, &p) < 0)
    return 0;
  return p.referenced == len && p.resident == len;
}

int sc_monitor_check(sc_monitor *m, unsigned interval_ms) {
  enum { PAGES = 512 };
  size_t page = sc_page_size();
  memset(m, 0, sizeof *m);
  m->interval_ms = interval_ms;
  m->every = 1;
  /* Guard pages on both sides: the probe is a mapping of its own. */
  char *map = mmap(NULL, (PAGES + 2) * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED)
    return sc_fail(errno, "no memory for the monitor's probe: %s", strerror(errno));
  char *pages = map + page;
  int rc = mprotect(pages, PAGES * page, PROT_READ | PROT_WRITE);
  if (rc != 0) {
    rc = sc_fail(errno, "mprotect of the monitor's probe failed: %s", strerror(errno));
    goto out;
  }
  madvise(pages, PAGES * page, MADV_NOHUGEPAGE);
  /* MADV_COLD first: the whole-process clear would cost the program a
   * walk of every page it touches next. */
  if (probe_check(pages, PAGES, 1) != 0) {
    m->refused = 1; /* no sampling: the whole process each interval */
    madvise(pages, PAGES * page, MADV_DONTNEED); /* the halves start unfaulted again */
    rc = probe_check(pages, PAGES, 0);
  } else {
    m->restores = probe_restore(pages, PAGES);
  }
out:
  munmap(map, (PAGES + 2) * page);
  return rc;
}
