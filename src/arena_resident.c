/* SPDX-License-Identifier: BSD-3-Clause */
/* arena_resident.c: the pages of a range that are in memory, handed out in
 * batches.  mincore(2) walks the page tables and skips what was never
 * touched, so counting and moving an arena costs what its resident pages
 * cost, not what the address range it ever used costs: asking
 * move_pages(2) for the node of every page of that range cost a system
 * call's lookup per page, resident or not (docs/bench-history.md, "The fixed cost
 * of a move").  Shared arenas walk their segment's runs with it too, and
 * an mbind that may move pages asks it first whether there are any. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <numaif.h>
#include <sys/mman.h>

#include "arena.h"

int sc_page_list_init(sc_page_list *l, size_t max_pages, sc_page_list_flush flush, void *ctx) {
  size_t cap = max_pages < SC_PAGE_LIST_MAX ? max_pages : SC_PAGE_LIST_MAX;
  if (cap == 0)
    cap = 1;
  *l = (sc_page_list){.cap = cap, .flush = flush, .ctx = ctx};
  l->pages = malloc(cap * sizeof *l->pages);
  l->nodes = malloc(cap * sizeof *l->nodes);
  l->status = malloc(cap * sizeof *l->status);
  if (l->pages && l->nodes && l->status)
    return 0;
  sc_page_list_free(l);
  return sc_fail(ENOMEM, "out of memory for a list of %zu pages", cap);
}

void sc_page_list_free(sc_page_list *l) {
  free(l->pages);
  free(l->nodes);
  free(l->status);
  l->pages = NULL;
  l->nodes = l->status = NULL;
}

int sc_page_list_flush_now(sc_page_list *l) {
  if (l->n == 0)
    return 0;
  int rc = l->flush(l, l->ctx);
  l->n = 0;
  return rc;
}

int sc_page_list_append_run(void *ctx, char *start, size_t npages) {
  sc_page_list *l = ctx;
  size_t page = sc_page_size();
  for (size_t i = 0; i < npages; i++) {
    if (l->n == l->cap && sc_page_list_flush_now(l) != 0)
      return -1;
    l->pages[l->n++] = start + i * page;
  }
  return 0;
}

long sc_resident_pages(char *base, size_t len, sc_page_list *l) {
  return sc_resident_runs(base, len, l != NULL ? sc_page_list_append_run : NULL, l);
}

long sc_resident_runs(char *base, size_t len, sc_resident_run_fn fn, void *ctx) {
  enum { STEP = 4096 }; /* pages per mincore call: 16 MiB, a vector on the stack */
  unsigned char vec[STEP];
  size_t page = sc_page_size(), npages = len / page;
  long total = 0;
  for (size_t first = 0; first < npages; first += STEP) {
    size_t n = npages - first < STEP ? npages - first : STEP;
    if (mincore(base + first * page, n * page, vec) != 0)
      return sc_fail(errno, "mincore over %zu bytes at %p failed: %s", n * page,
                     (void *)(base + first * page), strerror(errno));
    for (size_t i = 0; i < n;) {
      size_t run = 0;
      while (i + run < n && (vec[i + run] & 1))
        run++;
      if (run > 0 && fn != NULL && fn(ctx, base + (first + i) * page, run) != 0)
        return -1;
      total += (long)run;
      i += run ? run : 1;
    }
  }
  return total;
}

int sc_populate_run(void *ctx, char *start, size_t npages) {
  (void)ctx;
  size_t page = sc_page_size();
  if (madvise(start, npages * page, MADV_POPULATE_READ) != 0)
    for (size_t k = 0; k < npages; k++) /* kernels before 5.14 */
      (void)*(volatile char *)(start + k * page);
  return 0;
}

long sc_windows_resident_pages(const sc_window *w, unsigned n) {
  long total = 0;
  for (unsigned i = 0; i < n; i++) {
    long pages = sc_resident_pages(w[i].base, w[i].reach, NULL);
    if (pages < 0)
      return -1;
    total += pages;
  }
  return total;
}

/* Stops the walk (-1, errno 0) at the first resident page off mask. */
typedef struct off_mask_probe {
  const sc_nodemask *mask;
  int found;
} off_mask_probe;

static int run_off_mask(void *ctx, char *start, size_t npages) {
  enum { BATCH = 256 };
  off_mask_probe *probe = ctx;
  void *pages[BATCH];
  int status[BATCH];
  size_t page = sc_page_size();
  for (size_t done = 0; done < npages; done += BATCH) {
    size_t n = npages - done < BATCH ? npages - done : BATCH;
    for (size_t i = 0; i < n; i++)
      pages[i] = start + (done + i) * page;
    if (move_pages(0, (unsigned long)n, pages, NULL, status, 0) != 0)
      return probe->found = 1, -1; /* unknown: moving is the safe answer */
    for (size_t i = 0; i < n; i++)
      if (status[i] >= 0 && !sc_nodemask_has(probe->mask, status[i]))
        return probe->found = 1, -1;
  }
  return 0;
}

int sc_mbind_resident(void *addr, size_t len, const sc_binding *b, unsigned move_flag) {
  if (mbind(addr, len, b->policy, b->nodes.bits, SC_NODES_MAX, 0) != 0)
    return -1;
  off_mask_probe probe = {.mask = &b->nodes};
  if (sc_resident_runs(addr, len, run_off_mask, &probe) >= 0 && !probe.found)
    return 0;
  return mbind(addr, len, b->policy, b->nodes.bits, SC_NODES_MAX, move_flag);
}
