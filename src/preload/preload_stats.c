/* SPDX-License-Identifier: BSD-3-Clause */
/* preload_stats.c: what the preload tells people — the statistics it
 * keeps beside placement (blocks left to the process allocator, where
 * freed blocks' pages were) and prints at exit or on a signal, and the
 * small formatting it prints them with: no malloc, so safe in a signal
 * handler and before the process allocator is known. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload.h"

static size_t fallback_count, fallback_bytes;
/* With statistics on: bytes of freed blocks' pages per node, when freed. */
#define PL_NODES_MAX 64
static size_t freed_resident[PL_NODES_MAX];

void pl_stats_fallback(size_t size) {
  pl_stat_add(&fallback_count, 1);
  pl_stat_add(&fallback_bytes, size);
}

void pl_stats_freed(const void *ptr, size_t size) {
  enum { BATCH = 512 };
  const size_t page = 4096;
  uintptr_t first = (uintptr_t)ptr & ~(page - 1), end = (uintptr_t)ptr + size;
  void *pages[BATCH];
  int status[BATCH];
  for (uintptr_t at = first; at < end;) {
    unsigned n = 0;
    for (; n < BATCH && at < end; n++, at += page)
      pages[n] = (void *)at;
    if (syscall(SYS_move_pages, 0, (unsigned long)n, pages, NULL, status, 0) != 0)
      return;
    for (unsigned i = 0; i < n; i++)
      if (status[i] >= 0 && status[i] < PL_NODES_MAX)
        pl_stat_add(&freed_resident[status[i]], page);
  }
}

/* ---------------------------------------------------------------- statistics */

static void nodes_write(pl_text *t, int fd, const char *what, size_t *bytes) {
  pl_text_str(t, "libsicm-preload: ");
  pl_text_str(t, what);
  for (unsigned n = 0; n < PL_NODES_MAX; n++) {
    size_t v = __atomic_load_n(&bytes[n], __ATOMIC_RELAXED);
    if (v == 0)
      continue;
    pl_text_str(t, " node ");
    pl_text_num(t, n);
    pl_text_str(t, " ");
    pl_text_size(t, v);
  }
  pl_text_str(t, "\n");
  pl_text_flush(t, fd);
}

/* "<label>N (size)" from two counters. */
static void count_and_size(pl_text *t, const char *label, size_t *count, size_t *bytes) {
  pl_text_str(t, label);
  pl_text_num(t, __atomic_load_n(count, __ATOMIC_RELAXED));
  pl_text_str(t, " (");
  pl_text_size(t, __atomic_load_n(bytes, __ATOMIC_RELAXED));
  pl_text_str(t, ")");
}

void pl_stats_write(int with_residency) {
  int fd = 2;
  if (pl_conf.stats_path[0] != '\0') {
    fd = open(pl_conf.stats_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
      return;
  }
  pl_text t = {.len = 0};
  pl_text_str(&t, "libsicm-preload: pid ");
  pl_text_num(&t, (uint64_t)getpid());
  pl_text_str(&t, ", device=");
  pl_text_str(&t, pl_conf.device_spec);
  pl_text_str(&t, ", min ");
  pl_text_size(&t, pl_conf.min);
  pl_text_str(&t, ", reserve ");
  pl_text_size(&t, pl_conf.reserve);
  pl_text_str(&t, "\n");
  pl_text_flush(&t, fd);
  size_t resident[PL_NODES_MAX] = {0};
  for (unsigned i = 0; i < pl_conf.ntiers; i++) {
    pl_tier *tier = &pl_conf.tiers[i];
    pl_text_str(&t, tier->ndevices > 1 ? "libsicm-preload: nodes " : "libsicm-preload: node ");
    for (unsigned d = 0; d < tier->ndevices; d++) {
      if (d > 0)
        pl_text_str(&t, "/");
      pl_text_num(&t, (uint64_t)tier->devices[d]->node);
    }
    pl_text_str(&t, " ");
    pl_text_str(&t, tier->flags & SICM_ARENA_WEIGHTED     ? "weighted"
                    : tier->flags & SICM_ARENA_INTERLEAVE ? "interleaved"
                                                          : sicm_device_kind_name(
                                                                tier->devices[0]->kind));
    count_and_size(&t, ": placed ", &tier->placed_count, &tier->placed_bytes);
    count_and_size(&t, ", spilled here ", &tier->spilled_count, &tier->spilled_bytes);
    pl_text_str(&t, ", live ");
    pl_text_size(&t, __atomic_load_n(&tier->live, __ATOMIC_RELAXED));
    pl_text_str(&t, ", peak ");
    pl_text_size(&t, __atomic_load_n(&tier->peak, __ATOMIC_RELAXED));
    if (tier->budget != SIZE_MAX) {
      pl_text_str(&t, ", budget ");
      pl_text_size(&t, tier->budget);
    }
    pl_text_str(&t, "\n");
    pl_text_flush(&t, fd);
    sicm_arena arena = __atomic_load_n(&tier->arena, __ATOMIC_ACQUIRE);
    if (with_residency && arena != NULL)
      sicm_arena_residency(arena, resident, PL_NODES_MAX);
  }
  count_and_size(&t, "libsicm-preload: to the process allocator, no device having room: ",
                 &fallback_count, &fallback_bytes);
  pl_text_str(&t, "\n");
  pl_text_flush(&t, fd);
  nodes_write(&t, fd, "pages of blocks when they were freed:", freed_resident);
  if (with_residency)
    nodes_write(&t, fd, "pages in the arenas now:", resident);
  if (fd != 2)
    close(fd);
}

/* ---------------------------------------------------------------- text */

void pl_text_str(pl_text *t, const char *s) {
  while (*s != '\0' && t->len < sizeof t->buf)
    t->buf[t->len++] = *s++;
}

void pl_text_num(pl_text *t, uint64_t v) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (n > 0 && t->len < sizeof t->buf)
    t->buf[t->len++] = digits[--n];
}

void pl_text_hex(pl_text *t, uint64_t v) {
  pl_text_str(t, "0x");
  for (int shift = 60; shift >= 0; shift -= 4)
    if (t->len < sizeof t->buf && (v >> shift != 0 || shift == 0))
      t->buf[t->len++] = "0123456789abcdef"[(v >> shift) & 15];
}

void pl_text_size(pl_text *t, uint64_t bytes) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  unsigned u = 0;
  uint64_t scaled = bytes * 10; /* one decimal */
  while (u < 4 && bytes >= 1024ull << (10 * u))
    u++;
  if (u > 0)
    scaled = (uint64_t)((double)bytes * 10 / (double)(1ull << (10 * u)) + 0.5);
  pl_text_num(t, scaled / 10);
  if (u > 0) {
    pl_text_str(t, ".");
    pl_text_num(t, scaled % 10);
  }
  pl_text_str(t, " ");
  pl_text_str(t, units[u]);
}

void pl_text_flush(pl_text *t, int fd) {
  size_t off = 0;
  while (off < t->len) {
    ssize_t n = write(fd, t->buf + off, t->len - off);
    if (n <= 0 && errno != EINTR)
      break;
    if (n > 0)
      off += (size_t)n;
  }
  t->len = 0;
}

void pl_warn(const char *message, const char *detail) {
  pl_text t = {.len = 0};
  pl_text_str(&t, "libsicm-preload: ");
  pl_text_str(&t, message);
  pl_text_str(&t, detail ? detail : "");
  pl_text_str(&t, "\n");
  pl_text_flush(&t, 2);
}
