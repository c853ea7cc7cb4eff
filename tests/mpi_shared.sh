#!/bin/sh
# mpi_shared.sh: the `make check` entry for examples/mpi_shared — 4 Open MPI
# ranks on this node sharing one arena.  Skipped (77) without Open MPI,
# unless SICM_MPI_REQUIRED=1 (CI), which makes that a failure (99).
set -u
build=${SICM_TOP_BUILDDIR:-$(cd "$(dirname "$0")/.." && pwd)}
example=$build/examples/mpi_shared
missing() {
  echo "mpi_shared: $1; install openmpi-bin libopenmpi-dev and reconfigure"
  if [ "${SICM_MPI_REQUIRED:-0}" = 1 ]; then exit 99; fi
  exit 77
}
command -v mpirun > /dev/null 2>&1 || missing "mpirun not found"
[ -x "$example" ] || missing "examples/mpi_shared was not built (configure found no MPI)"
# Open MPI's own allocations are not ours to report in sanitizer builds.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# No ptrace-based single copy in containers; no ssh agent needed on one node.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_plm_rsh_agent=
exec timeout 120 mpirun --oversubscribe --allow-run-as-root -np 4 "$example"
