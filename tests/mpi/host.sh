#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# host.sh: the `make check` entry for libsicm-mpi — for each MPI it was built
# for, tests/mpi/mpi_alloc_check-MPI in 2 ranks on this node (hints, errors,
# error strings, frees, one-sided and node-shared windows, 10,000 arena
# names; placement is the guest's, tests/mpi/guest.sh).
set -u
build=${SICM_TOP_BUILDDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$(dirname "$0")/mpi_env.sh"
mpi_each 180 2 "$build/tests/mpi/mpi_alloc_check"
