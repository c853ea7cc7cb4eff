#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# placer.sh (runs inside the 4-node guest): MPI windows under the placer.
# For each MPI libsicm-mpi was built for, tests/mpi/mpi_placer_check-MPI in
# 2 ranks (CPU 0 and 1), each window an arena of its own on DRAM by
# SICM_MPI_INFO_WIN_ALLOCATE, the placer on with a fast-tier budget for one
# window per rank: after the window each rank writes itself has reached
# node 2 (HBM), the window the other rank puts into must displace it, and
# the SICM_STATS report must give the placer's decisions by window name,
# and SICM_MPI_REPORT where each window's pages were when it was freed.
set -u
b=${SICM_TOP_BUILDDIR:?}
. "$(dirname "$0")/mpi_env.sh"
flavours=$(mpi_flavours) || exit $?
ip link set lo up 2> /dev/null || true
hostname sicm-guest 2> /dev/null || true
export SICM_MPI_INFO_WIN_ALLOCATE="sicm_memory=dram;sicm_arena=@call"
export SICM_AUTOPLACE="fast=2,budget=24M,interval=500ms,cpu=100%"
rc=0
for f in $flavours; do
  echo "== $f: mpi_placer_check-$f, 2 ranks"
  SICM_STATS=$(mktemp --suffix=.json) SICM_MPI_REPORT=$(mktemp --suffix=.json)
  export SICM_STATS SICM_MPI_REPORT
  mpi_run "$f" 300 2 --bind "$b/tests/mpi/mpi_placer_check-$f" 120 || { echo "FAIL: $f"; rc=1; }
  python3 "$(dirname "$0")/placer_report.py" "$SICM_STATS" 2 "$SICM_MPI_REPORT" ||
    { echo "FAIL: $f report"; rc=1; }
  rm -f "$SICM_STATS" "$SICM_MPI_REPORT"
done
exit $rc
