/* SPDX-License-Identifier: BSD-3-Clause */
/* mpi_check.h: what the MPI check programs share: an info object with up
 * to two keys (NULL: none), for the caller to free; the pages of a range
 * off a node. */
#ifndef MPI_CHECK_H
#define MPI_CHECK_H

#include <mpi.h>
#include <numaif.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

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

#endif
