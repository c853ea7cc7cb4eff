#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# mpi_shared.sh: the `make check` entry for examples/mpi_shared — 4 Open MPI
# ranks on this node sharing one arena.  Skipped (77) without Open MPI,
# unless SICM_MPI_REQUIRED=1 (CI), which makes that a failure (99).
set -u
build=${SICM_TOP_BUILDDIR:-$(cd "$(dirname "$0")/.." && pwd)}
. "$(dirname "$0")/mpi/mpi_env.sh"
mpi_require "$build/examples/mpi_shared" examples/mpi_shared
exec timeout 120 mpirun --oversubscribe --allow-run-as-root -np 4 "$build/examples/mpi_shared"
