# SPDX-License-Identifier: BSD-3-Clause
# mpi_env.sh (sourced): what the MPI checks share.  libsicm-mpi is built
# once per MPI (configure); MPI_OPENMPI_RUN and MPI_MPICH_RUN name the
# launchers of those built.  `mpi_flavours` lists them; with none the check
# skips (77), and under SICM_MPI_REQUIRED=1 (CI) a missing Open MPI or
# MPICH fails it (99).  `mpi_run FLAVOUR SECONDS NP [--bind] PROGRAM
# [ARGS...]` launches NP ranks (--bind: rank r on CPU r) with an empty
# SICM_TOPOLOGY_DIR of their own (one rank publishes the topology, the
# others adopt it); `mpi_each SECONDS NP [--bind] PROGRAM [ARGS...]` runs
# PROGRAM-MPI so under each MPI built and fails if any run did; then the
# settings every run needs.
mpi_flavours() {
  flavours=
  [ -n "${MPI_OPENMPI_RUN:-}" ] && flavours="$flavours openmpi"
  [ -n "${MPI_MPICH_RUN:-}" ] && flavours="$flavours mpich"
  if [ "${SICM_MPI_REQUIRED:-0}" = 1 ]; then
    for f in openmpi mpich; do
      case " $flavours " in *" $f "*) ;; *)
        echo "FAIL: libsicm-mpi-$f was not built (SICM_MPI_REQUIRED=1): install libopenmpi-dev openmpi-bin libmpich-dev mpich and reconfigure" >&2
        exit 99 ;;
      esac
    done
  fi
  if [ -z "$flavours" ]; then
    echo "SKIP: configure found no MPI; install libopenmpi-dev openmpi-bin or libmpich-dev mpich and reconfigure" >&2
    exit 77
  fi
  echo $flavours
}
mpi_run() {
  flavour=$1 seconds=$2 np=$3
  shift 3
  bind=
  if [ "$1" = --bind ]; then bind=yes; shift; fi
  SICM_TOPOLOGY_DIR=$(mktemp -d)
  export SICM_TOPOLOGY_DIR
  case $flavour in
    openmpi)
      timeout "$seconds" "$MPI_OPENMPI_RUN" --oversubscribe --allow-run-as-root -x SICM_TOPOLOGY_DIR \
        ${bind:+--bind-to core --map-by core} -np "$np" "$@" ;;
    mpich)
      timeout "$seconds" "$MPI_MPICH_RUN" ${bind:+-bind-to core} -np "$np" "$@" ;;
  esac
  rc=$?
  rm -rf "$SICM_TOPOLOGY_DIR"
  unset SICM_TOPOLOGY_DIR
  return $rc
}
mpi_each() {
  each_flavours=$(mpi_flavours) || exit $?
  each_seconds=$1 each_np=$2
  shift 2
  each_bind=
  if [ "$1" = --bind ]; then each_bind=--bind; shift; fi
  each_program=$1
  shift
  each_rc=0
  for each_f in $each_flavours; do
    echo "== $each_f: $(basename "$each_program")-$each_f"
    mpi_run "$each_f" "$each_seconds" "$each_np" $each_bind "$each_program-$each_f" "$@" ||
      { echo "FAIL: $each_f"; each_rc=1; }
  done
  return $each_rc
}
# The MPI libraries' own allocations are not ours to report in sanitizer builds.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# Open MPI: no ptrace-based single copy in containers (then osc/rdma cannot
# make a window over ordinary memory: pt2pt does), no ssh agent on one node.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_osc=sm,pt2pt
export OMPI_MCA_plm_rsh_agent=
# MPICH's launcher starts local ranks itself, with no ssh.
export HYDRA_LAUNCHER=fork
