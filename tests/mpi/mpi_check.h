/* SPDX-License-Identifier: BSD-3-Clause */
/* mpi_check.h: what the MPI check programs share: an info object with up
 * to two keys (NULL: none), for the caller to free; the pages of a range
 * off a node; a window's flavour and the arena of a rank's part. */
#ifndef MPI_CHECK_H
#define MPI_CHECK_H

#include <mpi.h>
#include <numaif.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "sicm.h"

static inline MPI_Info info_of(const char *k1, const char *v1, const char *k2, const char *v2) {
  MPI_Info info;
  MPI_Info_create(&info);
  if (k1)
    MPI_Info_set(info, k1, v1);
  if (k2)
    MPI_Info_set(info, k2, v2);
  return info;
}

/* Pages of [p, p + len) not on `node` (a page not present counts). */
static inline size_t pages_off(const void *p, size_t len, int node) {
  long page = sysconf(_SC_PAGESIZE);
  uintptr_t first = (uintptr_t)p & ~(uintptr_t)(page - 1), end = (uintptr_t)p + len;
  size_t off = 0;
  for (uintptr_t a = first; a < end; a += (uintptr_t)page) {
    void *addr = (void *)a;
    int status = -1;
    if (move_pages(0, 1, &addr, NULL, &status, 0) != 0 || status != node)
      off++;
  }
  return off;
}

/* The flavour MPI_Win_get_attr gives the window (through libsicm-mpi). */
static inline int flavor_of(MPI_Win win) {
  int *flavor = NULL, flag = 0;
  MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
  return flag && flavor ? *flavor : -1;
}

/* The flavour the MPI library itself gives the window, past libsicm-mpi's
 * MPI_Win_get_attr: CREATE for a window over an arena's memory. */
static inline int mpi_flavor_of(MPI_Win win) {
  int *flavor = NULL, flag = 0;
  PMPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
  return flag && flavor ? *flavor : -1;
}

/* The arena of a window's part: of its memory from an arena, the arena of
 * its base; of the MPI library's own window, the fixed arena of the part's
 * first whole page (the partial first page is bound, not in the arena). */
static inline sicm_arena part_arena(const void *base, size_t size, int mpi_window) {
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t first = ((uintptr_t)base + page - 1) & ~(page - 1);
  if (!mpi_window)
    return sicm_arena_lookup(base);
  return first + page <= (uintptr_t)base + size ? sicm_arena_lookup((void *)first) : NULL;
}

#endif
