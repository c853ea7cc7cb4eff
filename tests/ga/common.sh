# SPDX-License-Identifier: BSD-3-Clause
# common.sh (sourced by tests/ga/host.sh and guest.sh): Global Arrays
# 5.8.2's own test programs (global/testing), built from GA's sources
# outside this tree against Debian's libglobalarrays-dev (GA over
# ARMCI-MPI, one static library per MPI).  SICM_GA_SRC names the sources
# (default /usr/local/src/ga-5.8.2, where a person unpacks GA's release);
# without them, or without Debian's GA, the suites skip (77), and under
# SICM_GA_REQUIRED=1 they fail (99).  `ga_build MPI` builds the programs
# into $ga_bin/MPI; the MPIs libsicm-mpi was built for are in $flavours
# (tests/mpi/mpi_env.sh); `ga_run MPI PROGRAM [ENV...]` runs one in 2 ranks,
# each rank's output in turn in $ga_out.  `ga_plain_env MPI` is what the
# reference run without libsicm sets: for MPICH, ARMCI_USE_WIN_ALLOCATE=0,
# because Debian's GA over MPICH 4.0's own MPI_Win_allocate computes wrong
# results (mtest, testc, nbtestc, normc, matrixc report failures; with
# windows of MPI_Win_create they pass).  `ga_window MPI` is the
# sicm_window key the runs under libsicm-mpi add: for MPICH, arena (the
# windows made with MPI_Win_create over arenas), for that same reason;
# for Open MPI, none (its own windows, libsicm-mpi's default).
b=${SICM_TOP_BUILDDIR:?}
src=${SICM_TOP_SRCDIR:-$b}
. "$src/tests/mpi/mpi_env.sh"
flavours=$(mpi_flavours) || exit $?
ga_src=${SICM_GA_SRC:-/usr/local/src/ga-5.8.2}
ga_bin=$b/tests/ga
ga_here=$src/tests/ga
# GA's own `make check` list of C programs (GLOBAL_PARALLEL_TESTS), less
# those whose output holds timings or random sizes (compared by their
# verdict only, in GA_VERDICT_ONLY), testmult (Debian's GA for MPICH fails
# its GA_Sgemm check by itself) and the long ones: cache_test and
# perf2 measure, packc, unpackc, scan_addc, scan_copyc and testmatmultc
# take 10 to 40 s each here.
GA_COMPARED=${GA_COMPARED:-"testc ntestc nbtestc ntestfc mtest normc matrixc getmem patch_enumc print gemmtest testmultrect elempatch ga-mpi lock simple_groups_commc"}
GA_VERDICT_ONLY=${GA_VERDICT_ONLY:-"mulmatpatchc read_only"}
ga_skip() {
  if [ "${SICM_GA_REQUIRED:-0}" = 1 ]; then echo "FAIL: $1 (SICM_GA_REQUIRED=1)"; exit 99; fi
  echo "SKIP: $1"
  exit 77
}
ga_plain_env() { [ "$1" = mpich ] && echo ARMCI_USE_WIN_ALLOCATE=0 || echo GA_PLAIN=1; }
ga_window() { [ "$1" = mpich ] && echo ";sicm_window=arena"; }
ga_mpi_config() { echo "/usr/lib/x86_64-linux-gnu/ga/$1/bin/ga-config"; }
ga_build() {
  config=$(ga_mpi_config "$1")
  mkdir -p "$ga_bin/$1"
  # The tests read from GA's config.h which headers exist and the message layer.
  printf '#define HAVE_%s_H 1\n' ASSERT MATH STDIO STDLIB STRING UNISTD > "$ga_bin/config.h"
  echo '#define MSG_COMMS_MPI 1' >> "$ga_bin/config.h"
  for t in $GA_COMPARED $GA_VERDICT_ONLY; do
    [ "$ga_bin/$1/$t" -nt "$ga_src/global/testing/$t.c" ] && continue
    "$("$config" --cc)" -O1 -w -DHAVE_CONFIG_H -I"$ga_bin" -I"$ga_src/global/testing" \
      -I"$ga_src/global/src" -I"$ga_src/ma" -I"$ga_src/LinAlg/lapack+blas" \
      -o "$ga_bin/$1/$t" "$ga_src/global/testing/$t.c" $("$config" --libs) -lgfortran -lm ||
      { echo "FAIL: building $t for $1"; return 1; }
  done
}
# ga_run MPI PROGRAM [VAR=VALUE...]: 2 ranks, each chunk of output tagged
# with its rank by the launcher; $ga_out holds each rank's output in turn
# (ranks.py), whatever the interleaving.
ga_run() {
  run_mpi=$1 run_t=$2
  shift 2
  ga_out=$(mktemp)
  case $run_mpi in
    openmpi) env "$@" timeout 600 "$MPI_OPENMPI_RUN" --allow-run-as-root --oversubscribe \
      --tag-output -np 2 "$ga_bin/openmpi/$run_t" ;;
    mpich) env "$@" timeout 600 "$MPI_MPICH_RUN" -prepend-rank -np 2 "$ga_bin/mpich/$run_t" ;;
  esac > "$ga_out.raw" 2>&1
  run_rc=$?
  "${SICM_PYTHON:-python3}" "$ga_here/ranks.py" "$ga_out.raw" > "$ga_out"
  rm -f "$ga_out.raw"
  return $run_rc
}
