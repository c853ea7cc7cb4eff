#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# run-in-cluster.sh: the `make check-cluster` entry.  Boots a cluster of two
# 4-node guests (tests/guest/sicm-cluster) and runs the jobs that span them
# (tests/mpi/cluster.sh) on its first node.
set -u
src=${SICM_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${SICM_TOP_BUILDDIR:-$src}
exec "$src/tests/guest/sicm-cluster" --nodes 2 --timeout 1500 -C "$build" \
  --env "SICM_TOP_SRCDIR=$src" --env "SICM_TOP_BUILDDIR=$build" \
  --env "MPI_OPENMPI_RUN=${MPI_OPENMPI_RUN:-}" --env "MPI_MPICH_RUN=${MPI_MPICH_RUN:-}" \
  --env "SICM_MPI_REQUIRED=${SICM_MPI_REQUIRED:-0}" --env "SICM_PYTHON=${SICM_PYTHON:-python3}" \
  -- sh "$src/tests/mpi/cluster.sh"
