/* SPDX-License-Identifier: BSD-3-Clause */
/* mpi_info_of.h: what the MPI check programs share: an info object with up
 * to two keys (NULL: none), for the caller to free. */
#ifndef MPI_INFO_OF_H
#define MPI_INFO_OF_H

#include <mpi.h>

static inline MPI_Info info_of(const char *k1, const char *v1, const char *k2, const char *v2) {
  MPI_Info info;
  MPI_Info_create(&info);
  if (k1)
    MPI_Info_set(info, k1, v1);
  if (k2)
    MPI_Info_set(info, k2, v2);
  return info;
}

#endif
