# SPDX-License-Identifier: BSD-3-Clause
# mpi_env.sh (sourced): what the Open MPI checks share — `mpi_require
# PROGRAM WHAT` skips (77) without Open MPI or PROGRAM, or fails (99) under
# SICM_MPI_REQUIRED=1 (CI); `mpi_alloc_run SECONDS MPIRUN-ARGS...` runs
# mpi_alloc_check's ranks with an empty SICM_TOPOLOGY_DIR of their own (one
# rank publishes the topology, the other adopts it); then the settings
# every run needs.
mpi_require() {
  why=
  command -v mpirun > /dev/null 2>&1 || why="mpirun not found"
  [ -n "$why" ] || [ -x "$1" ] || why="$2 was not built (configure found no MPI)"
  [ -z "$why" ] && return 0
  echo "SKIP: $why; install openmpi-bin libopenmpi-dev and reconfigure"
  [ "${SICM_MPI_REQUIRED:-0}" = 1 ] && exit 99
  exit 77
}
mpi_alloc_run() {
  seconds=$1
  shift
  topology=$(mktemp -d)
  timeout "$seconds" mpirun --oversubscribe --allow-run-as-root -x SICM_TOPOLOGY_DIR="$topology" "$@"
  rc=$?
  rm -rf "$topology"
  return $rc
}
# Open MPI's own allocations are not ours to report in sanitizer builds.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# No ptrace-based single copy in containers (then osc/rdma cannot make a
# window over ordinary memory: pt2pt does), no ssh agent on one node.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_osc=sm,pt2pt
export OMPI_MCA_plm_rsh_agent=
