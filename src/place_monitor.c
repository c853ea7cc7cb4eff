/* SPDX-License-Identifier: BSD-3-Clause */
/* place_monitor.c: how hot each arena is, measured without touching its
 * data.  Linux keeps an accessed bit per page-table entry; writing 1 to
 * /proc/self/clear_refs clears those of every private page of the process,
 * and /proc/self/smaps then shows, per mapping, `Referenced:` — the bytes
 * whose pages were accessed since.  Arena windows are mappings of their
 * own (arena_window.c ends each with a page no access may reach, so two
 * arenas' windows never merge into one mapping), so each mapping's bytes
 * belong to the arena that owns its addresses.  Needs no privilege; the
 * cost is the kernel's walk of the page tables, twice per interval. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "place.h"

/* Calls fn(ctx, start, end, field, kib) for every Rss or Referenced line
 * of /proc/self/smaps, with the range of the mapping it belongs to. */
typedef void (*smaps_fn)(void *ctx, uintptr_t start, uintptr_t end, int referenced,
                         uint64_t kib);

static uint64_t field_kib(const char *p) {
  while (*p == ' ')
    p++;
  return strtoull(p, NULL, 10);
}

static void smaps_line(char *line, uintptr_t *start, uintptr_t *end, smaps_fn fn, void *ctx) {
  if (strncmp(line, "Rss:", 4) == 0) {
    fn(ctx, *start, *end, 0, field_kib(line + 4));
  } else if (strncmp(line, "Referenced:", 11) == 0) {
    fn(ctx, *start, *end, 1, field_kib(line + 11));
  } else if ((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f')) {
    char *dash;
    unsigned long long s = strtoull(line, &dash, 16);
    if (*dash == '-') {
      *start = (uintptr_t)s;
      *end = (uintptr_t)strtoull(dash + 1, NULL, 16);
    }
  }
}

static int smaps_read(smaps_fn fn, void *ctx) {
  int fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return sc_fail(errno == ENOENT ? ENOTSUP : errno, "cannot open /proc/self/smaps: %s",
                   strerror(errno));
  enum { BUF = 65536 };
  char *buf = malloc(BUF);
  if (buf == NULL) {
    close(fd);
    return sc_fail(ENOMEM, "out of memory");
  }
  size_t have = 0;
  uintptr_t start = 0, end = 0;
  int rc = 0;
  for (;;) {
    ssize_t got = read(fd, buf + have, BUF - 1 - have);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      rc = sc_fail(errno, "reading /proc/self/smaps failed: %s", strerror(errno));
      break;
    }
    have += (size_t)got;
    buf[have] = '\0';
    char *line = buf, *nl;
    while ((nl = strchr(line, '\n')) != NULL) {
      *nl = '\0';
      smaps_line(line, &start, &end, fn, ctx);
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
  return rc;
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

static void sample_add(void *ctx, uintptr_t start, uintptr_t end, int referenced, uint64_t kib) {
  sc_monitor_bytes *s = ctx;
  if (kib == 0)
    return;
  sc_arena *a = sc_window_owner((const void *)start);
  if (a == NULL)
    return;
  if (sc_window_owner((const void *)(end - 1)) != a) {
    if (referenced)
      s->unattributed += kib << 10;
    return;
  }
  (referenced ? s->referenced : s->resident)[a->slot] += kib << 10;
}

int sc_monitor_sample(sc_monitor_bytes *out) {
  memset(out, 0, sizeof *out);
  if (smaps_read(sample_add, out) != 0)
    return -1;
  return refs_clear();
}

/* ---- the probe ---- */

typedef struct probe {
  uintptr_t start;
  uint64_t referenced, resident;
} probe;

static void probe_add(void *ctx, uintptr_t start, uintptr_t end, int referenced, uint64_t kib) {
  (void)end;
  probe *p = ctx;
  if (start == p->start)
    *(referenced ? &p->referenced : &p->resident) = kib << 10;
}

/* The probe: half its pages are touched before a clear and never after,
 * the other half first touched after it.  A kernel that reports referenced
 * pages and clears them shows exactly that second half.  (Pages touched
 * again after a clear would not do: some virtual machines, a KVM guest or
 * QEMU's TCG, let a CPU keep translations across the clear, and accesses
 * through them set no accessed bit, so a working set that fits the TLB
 * reads colder than it is for an interval; a page faulted in is always
 * referenced.) */
int sc_monitor_check(void) {
  enum { PAGES = 256 };
  size_t page = sc_page_size(), half = PAGES / 2 * page;
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
  for (size_t i = 0; i < PAGES / 2; i++)
    ((volatile char *)pages)[i * page] = 1;
  probe p = {(uintptr_t)pages, 0, 0};
  if ((rc = refs_clear()) != 0)
    goto out;
  for (size_t i = PAGES / 2; i < PAGES; i++)
    ((volatile char *)pages)[i * page] = 2;
  if ((rc = smaps_read(probe_add, &p)) != 0)
    goto out;
  if (p.resident != PAGES * page)
    rc = sc_fail(ENOTSUP, "the monitor's probe: /proc/self/smaps shows %llu of its %zu resident "
                          "bytes", (unsigned long long)p.resident, PAGES * page);
  else if (p.referenced == 0)
    rc = sc_fail(ENOTSUP, "this kernel does not report referenced pages to the process "
                          "(/proc/self/smaps shows 0 referenced bytes for pages just written)");
  else if (p.referenced != half)
    rc = sc_fail(ENOTSUP, "/proc/self/clear_refs does not clear what /proc/self/smaps counts "
                          "(%llu referenced bytes where %zu were touched since the clear)",
                 (unsigned long long)p.referenced, half);
out:
  munmap(map, (PAGES + 2) * page);
  return rc;
}
