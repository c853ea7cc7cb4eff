/* arena_stats.c: what an arena holds — jemalloc's statistics, and where
 * its pages are (move_pages over its windows). */
#include <errno.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "shm.h"

static int stat_read(unsigned index, const char *name, size_t *out) {
  char cmd[96];
  size_t len = sizeof *out;
  snprintf(cmd, sizeof cmd, "stats.arenas.%u.%s", index, name);
  return mallctl(cmd, out, &len, NULL, 0);
}

int sicm_arena_stats_get(sicm_arena sa, sicm_arena_stats *out) {
  sicm_arena_rec *rec = sicm_arena_resolve(sa);
  if (rec == NULL)
    return -1;
  if (out == NULL)
    return sicm_fail(EINVAL, "sicm_arena_stats_get: out is NULL");
  if (rec->shm != NULL)
    return shm_segment_stats(rec, out);
  uint64_t epoch = 1;
  size_t small = 0, large = 0, pactive = 0;
  if (mallctl("epoch", &epoch, &(size_t){sizeof epoch}, &epoch, sizeof epoch) != 0 ||
      stat_read(rec->je_index, "small.allocated", &small) != 0 ||
      stat_read(rec->je_index, "large.allocated", &large) != 0 ||
      stat_read(rec->je_index, "pactive", &pactive) != 0 ||
      stat_read(rec->je_index, "resident", &out->resident) != 0 ||
      stat_read(rec->je_index, "mapped", &out->mapped) != 0)
    return sicm_fail(EIO, "jemalloc statistics are unavailable");
  out->allocated = small + large;
  out->active = pactive * (size_t)sysconf(_SC_PAGESIZE);
  out->held = __atomic_load_n(&rec->held, __ATOMIC_RELAXED);
  out->maxsize = rec->maxsize;
  return 0;
}

/* Counts the resident pages of [base, base+len) per node into bytes. */
static int range_residency(char *base, size_t len, size_t *bytes, size_t nnodes) {
  enum { BATCH = 4096 };
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  void **pages = malloc(BATCH * sizeof *pages);
  int *status = malloc(BATCH * sizeof *status);
  int rc = 0;
  if (pages == NULL || status == NULL)
    rc = sicm_fail(ENOMEM, "out of memory");
  for (size_t off = 0; rc == 0 && off < len; off += BATCH * page) {
    size_t n = (len - off) / page < BATCH ? (len - off) / page : BATCH;
    for (size_t i = 0; i < n; i++)
      pages[i] = base + off + i * page;
    if (move_pages(0, n, pages, NULL, status, 0) != 0) {
      rc = sicm_fail(errno, "move_pages failed");
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
  sicm_arena_rec *rec = sicm_arena_resolve(sa);
  if (rec == NULL)
    return -1;
  if (bytes == NULL && nnodes > 0)
    return sicm_fail(EINVAL, "sicm_arena_residency: bytes is NULL");
  if (rec->shm != NULL) /* pages only other processes touched count too */
    shm_segment_map_resident(rec);
  sicm_window windows[SICM_WINDOWS_MAX];
  pthread_mutex_lock(&rec->window_lock);
  unsigned n = rec->nwindows;
  for (unsigned i = 0; i < n; i++)
    windows[i] = rec->windows[i];
  pthread_mutex_unlock(&rec->window_lock);
  for (unsigned i = 0; i < n; i++)
    if (range_residency(windows[i].base, windows[i].used, bytes, nnodes) != 0)
      return -1;
  return 0;
}

int sicm_node_of_ptr(const void *ptr) {
  void *page = (void *)((uintptr_t)ptr & ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1));
  int status = -1;
  if (move_pages(0, 1, &page, NULL, &status, 0) != 0)
    return sicm_fail(errno, "move_pages failed");
  if (status < 0)
    return sicm_fail(-status == ENOENT ? EFAULT : -status, "no page at %p", ptr);
  return status;
}
