/* arena_stats.c: what an arena holds — its kind's statistics, and where
 * its pages are (move_pages over its windows). */
#include <errno.h>
#include <numaif.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"

int sicm_arena_stats_get(sicm_arena sa, sicm_arena_stats *out) {
  sc_arena *a = sc_arena_resolve(sa);
  if (a == NULL)
    return -1;
  if (out == NULL)
    return sc_fail(EINVAL, "sicm_arena_stats_get: out is NULL");
  return a->ops->stats(a, out);
}

/* Counts the resident pages of [base, base+len) per node into bytes. */
static int range_residency(char *base, size_t len, size_t *bytes, size_t nnodes) {
  enum { BATCH = 4096 };
  size_t page = sc_page_size();
  void **pages = malloc(BATCH * sizeof *pages);
  int *status = malloc(BATCH * sizeof *status);
  int rc = 0;
  if (pages == NULL || status == NULL)
    rc = sc_fail(ENOMEM, "out of memory");
  for (size_t off = 0; rc == 0 && off < len; off += BATCH * page) {
    size_t n = (len - off) / page < BATCH ? (len - off) / page : BATCH;
    for (size_t i = 0; i < n; i++)
      pages[i] = base + off + i * page;
    if (move_pages(0, n, pages, NULL, status, 0) != 0) {
      rc = sc_fail(errno, "move_pages failed: %s", strerror(errno));
      break;
    }
    for (size_t i = 0; i < n; i++)
      if (status[i] >= 0 && (size_t)status[i] < nnodes)
        bytes[status[i]] += page;
  }
  free(pages);
  free(status);
  return rc;
}

int sicm_arena_residency(sicm_arena sa, size_t *bytes, size_t nnodes) {
  sc_arena *a = sc_arena_resolve(sa);
  if (a == NULL)
    return -1;
  if (bytes == NULL && nnodes > 0)
    return sc_fail(EINVAL, "sicm_arena_residency: bytes is NULL");
  /* Pages only other processes touched count too. */
  if (a->ops->pages_map != NULL && a->ops->pages_map(a) != 0)
    return -1;
  sc_window windows[SC_WINDOWS_MAX];
  unsigned n = sc_window_snapshot(a, windows);
  for (unsigned i = 0; i < n; i++)
    if (range_residency(windows[i].base, windows[i].used, bytes, nnodes) != 0)
      return -1;
  return 0;
}

int sicm_node_of_ptr(const void *ptr) {
  void *page = (void *)((uintptr_t)ptr & ~((uintptr_t)sc_page_size() - 1));
  int status = -1;
  if (move_pages(0, 1, &page, NULL, &status, 0) != 0)
    return sc_fail(errno, "move_pages failed: %s", strerror(errno));
  if (status < 0)
    return sc_fail(-status == ENOENT ? EFAULT : -status, "no page at %p", ptr);
  return status;
}
