#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# host.sh: the `make check` entry for libsicm-mpi — tests/mpi/mpi_alloc_check
# in 2 Open MPI ranks on this node (hints, errors, frees, one-sided and
# node-shared windows; placement is the guest's, tests/mpi/guest.sh).
set -u
build=${SICM_TOP_BUILDDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$(dirname "$0")/mpi_env.sh"
mpi_require "$build/tests/mpi/mpi_alloc_check" tests/mpi/mpi_alloc_check
mpi_alloc_run 120 -np 2 "$build/tests/mpi/mpi_alloc_check"
