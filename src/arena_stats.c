/* SPDX-License-Identifier: BSD-3-Clause */
/* arena_stats.c: what an arena holds — its kind's statistics, and where
 * its pages are (move_pages over the resident pages of its windows) — and
 * the migrations of arenas destroyed before, for the report. */
#include <errno.h>
#include <numaif.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"

int sicm_arena_get_stats(sicm_arena sa, sicm_arena_stats *out) {
  sc_arena *a = sc_arena_resolve(sa);
  if (a == NULL)
    return -1;
  if (out == NULL)
    return sc_fail(EINVAL, "sicm_arena_get_stats: out is NULL");
  return a->ops->stats(a, out);
}

typedef struct residency_count {
  size_t *bytes, nnodes;
} residency_count;

static int residency_flush(sc_page_list *l, void *ctx) {
  residency_count *c = ctx;
  if (move_pages(0, l->n, l->pages, NULL, l->status, 0) != 0)
    return sc_fail(errno, "move_pages failed: %s", strerror(errno));
  for (size_t i = 0; i < l->n; i++)
    if (l->status[i] >= 0 && (size_t)l->status[i] < c->nnodes)
      c->bytes[l->status[i]] += sc_page_size();
  return 0;
}

int sc_windows_residency(const sc_window *w, unsigned n, size_t *bytes, size_t nnodes) {
  size_t most = 0;
  for (unsigned i = 0; i < n; i++)
    most += w[i].reach / sc_page_size();
  residency_count count = {bytes, nnodes};
  sc_page_list list;
  if (sc_page_list_init(&list, most, residency_flush, &count) != 0)
    return -1;
  int rc = 0;
  for (unsigned i = 0; i < n && rc == 0; i++)
    if (sc_resident_pages(w[i].base, w[i].reach, &list) < 0)
      rc = -1;
  if (rc == 0)
    rc = sc_page_list_flush_now(&list);
  sc_page_list_free(&list);
  return rc;
}

int sicm_arena_residency(sicm_arena sa, size_t *bytes, size_t nnodes) {
  sc_arena *a = sc_arena_resolve(sa);
  if (a == NULL)
    return -1;
  if (bytes == NULL)
    return sc_fail(EINVAL, "sicm_arena_residency: bytes is NULL");
  /* Pages only other processes touched count too. */
  if (a->ops->pages_map != NULL && a->ops->pages_map(a) != 0)
    return -1;
  sc_window windows[SC_WINDOWS_MAX];
  unsigned n = sc_window_snapshot(a, windows);
  return sc_windows_residency(windows, n, bytes, nnodes);
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

/* Totals of destroyed arenas (atomic). */
static sc_arenas_gone gone;

void sc_arenas_gone_add(const sc_arena *a) {
  __atomic_fetch_add(&gone.arenas, 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&gone.migrations, a->migrations_done, __ATOMIC_RELAXED);
  __atomic_fetch_add(&gone.failed, a->migrations_failed, __ATOMIC_RELAXED);
  __atomic_fetch_add(&gone.nanoseconds, a->migration_ns, __ATOMIC_RELAXED);
  __atomic_fetch_add(&gone.bytes_moved, a->migration_bytes, __ATOMIC_RELAXED);
}

void sc_arenas_gone_read(sc_arenas_gone *out) {
  out->arenas = __atomic_load_n(&gone.arenas, __ATOMIC_RELAXED);
  out->migrations = __atomic_load_n(&gone.migrations, __ATOMIC_RELAXED);
  out->failed = __atomic_load_n(&gone.failed, __ATOMIC_RELAXED);
  out->nanoseconds = __atomic_load_n(&gone.nanoseconds, __ATOMIC_RELAXED);
  out->bytes_moved = __atomic_load_n(&gone.bytes_moved, __ATOMIC_RELAXED);
}
