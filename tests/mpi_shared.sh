#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# mpi_shared.sh: the `make check` entry for examples/mpi_shared — 4 ranks on
# this node sharing one arena, under each MPI configure found.  Skipped (77)
# without MPI, unless SICM_MPI_REQUIRED=1 (CI), which makes that a failure.
set -u
build=${SICM_TOP_BUILDDIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$(dirname "$0")/mpi/mpi_env.sh"
mpi_each 120 4 "$build/examples/mpi_shared"
