#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# guest.sh (runs inside the 4-node guest): Debian's NWChem (nwchem-openmpi,
# over Global Arrays and ARMCI-MPI), unmodified, 2 ranks, a water molecule:
# SCF then MP2.  Four runs: plain; under libsicm-mpi with every window and
# block of memory on HBM (node 2), each of its own (the windows the MPI
# library's own, each rank's part an arena), where SICM_MPI_REPORT must
# show every window's pages on node 2 when it was freed; the same with the
# windows of MPI_Win_create over arenas (sicm_window=arena); and with the
# windows on DRAM and the placer on, whose decisions SICM_STATS names per
# window.  The energies must be the plain run's, within what NWChem's
# own runs differ by.
set -u
b=${SICM_TOP_BUILDDIR:?}
src=${SICM_TOP_SRCDIR:-$b}
. "$src/tests/mpi/mpi_env.sh"
case " $(mpi_flavours) " in *" openmpi "*) ;; *) echo "SKIP: libsicm-mpi-openmpi not built"; exit 77 ;; esac
command -v nwchem.openmpi > /dev/null || { echo "SKIP: nwchem-openmpi is not installed"; exit 77; }
# A sanitizer's runtime would have to be loaded before the preloaded
# libsicm-mpi into NWChem, which is built without it.
if ldd "$b/src/.libs/libsicm.so" | grep -q 'libasan\|libtsan'; then
  echo "SKIP: sanitizer build"
  exit 77
fi
ip link set lo up 2> /dev/null || true
hostname sicm-guest 2> /dev/null || true
work=$(mktemp -d)
rc=0
nwchem() { # nwchem NAME [VAR=VALUE...]: one run in its own directory
  name=$1
  shift
  mkdir "$work/$name"
  start=$(date +%s)
  (cd "$work/$name" && env "$@" LD_LIBRARY_PATH="$b/src/.libs" timeout 900 "$MPI_OPENMPI_RUN" \
    --allow-run-as-root --oversubscribe -np 2 nwchem.openmpi "$src/tests/nwchem/h2o.nw" > out 2>&1)
  run_rc=$?
  echo "  $name: exit $run_rc, $(( $(date +%s) - start )) s"
  [ $run_rc -eq 0 ] || { echo "FAIL: $name"; tail -20 "$work/$name/out"; rc=1; }
}
sicm_mpi=$b/src/mpi/.libs/libsicm-mpi-openmpi.so
nwchem plain GA_PLAIN=1
nwchem hbm LD_PRELOAD="$sicm_mpi" SICM_MPI_INFO="sicm_memory=hbm;sicm_arena=@call" \
  SICM_MPI_REPORT="$work/hbm.json"
nwchem arena_windows LD_PRELOAD="$sicm_mpi" \
  SICM_MPI_INFO_WIN_ALLOCATE="sicm_memory=hbm;sicm_arena=@call;sicm_window=arena" \
  SICM_MPI_REPORT="$work/arena_windows.json"
nwchem placer LD_PRELOAD="$sicm_mpi" SICM_MPI_INFO_WIN_ALLOCATE="sicm_memory=dram;sicm_arena=@call" \
  SICM_AUTOPLACE="fast=2,interval=200ms,cpu=100%" SICM_STATS="$work/placer.json"
check() { "${SICM_PYTHON:-python3}" "$src/tests/nwchem/check.py" "$@" || rc=1; }
check energies "$work/plain/out" "$work/hbm/out" hbm
check energies "$work/plain/out" "$work/placer/out" placer
check energies "$work/plain/out" "$work/arena_windows/out" arena_windows
check census 2 "$work/hbm.json"
check census 2 "$work/arena_windows.json"
check decisions "$work/placer.json"
rm -rf "$work"
exit $rc
