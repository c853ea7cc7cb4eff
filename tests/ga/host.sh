#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# host.sh: Global Arrays 5.8.2's own test programs (tests/ga/common.sh)
# under each MPI libsicm-mpi was built for, 2 ranks on this node: once as
# GA's users run them, then unmodified under LD_PRELOAD=libsicm-mpi with
# SICM_MPI_INFO giving every window and block an arena of its own
# (sicm_arena=@call; see ga_window).  Each must pass both ways, each rank
# print the same lines (tests/ga/ranks.py), and SICM_MPI_REPORT must show
# that its global arrays were windows of libsicm arenas; under Open MPI,
# once more with windows over arenas (sicm_window=arena).  The plain runs'
# outputs are kept for tests/ga/guest.sh, which places the arrays on HBM.
set -u
. "${SICM_TOP_SRCDIR:-${SICM_TOP_BUILDDIR:?}}/tests/ga/common.sh"
# A sanitizer's runtime would have to be loaded before the preloaded
# libsicm-mpi into programs built without it.
if ldd "$b/src/.libs/libsicm.so" | grep -q 'libasan\|libtsan'; then
  echo "SKIP: sanitizer build"
  exit 77
fi
[ -f "$ga_src/global/testing/testc.c" ] || ga_skip "no GA 5.8.2 sources in $ga_src (set SICM_GA_SRC)"
rc=0
for f in $flavours; do
  [ -x "$(ga_mpi_config "$f")" ] || ga_skip "Debian's libglobalarrays-dev (GA for $f) is not installed"
  echo "== $f: building GA's tests from $ga_src"
  ga_build "$f" || { rc=1; continue; }
  for t in $GA_COMPARED $GA_VERDICT_ONLY; do
    report=$(mktemp --suffix=.json)
    ga_run "$f" "$t" $(ga_plain_env "$f")
    plain_rc=$run_rc
    mv "$ga_out" "$ga_bin/$f/$t.expected"
    ga_run "$f" "$t" LD_PRELOAD="$b/src/mpi/.libs/libsicm-mpi-$f.so" LD_LIBRARY_PATH="$b/src/.libs" \
      SICM_MPI_INFO="sicm_memory=dram;sicm_arena=@call$(ga_window "$f")" SICM_MPI_REPORT="$report"
    [ $plain_rc -eq 0 ] || { echo "FAIL: $f $t fails without libsicm"; cat "$ga_out"; rc=1; continue; }
    [ $run_rc -eq 0 ] || { echo "FAIL: $f $t under libsicm-mpi"; cat "$ga_out"; rc=1; continue; }
    windows=$(grep -c '"arena": "mpi:win#' "$report")
    same=yes
    case " $GA_VERDICT_ONLY " in
      *" $t "*) same="verdict only" ;;
      *) cmp -s "$ga_out" "$ga_bin/$f/$t.expected" || same=no ;;
    esac
    echo "  $t: passed both ways; output the same: $same; $windows windows in SICM_MPI_REPORT"
    if [ "$same" = no ]; then
      echo "FAIL: $f $t printed other lines under libsicm-mpi:"; diff "$ga_bin/$f/$t.expected" "$ga_out"; rc=1
    fi
    [ "$windows" -gt 0 ] || { echo "FAIL: $f $t: no window in SICM_MPI_REPORT"; rc=1; }
    # Open MPI once more with windows of MPI_Win_create over arenas
    # (sicm_window=arena; MPICH's runs have them already).
    if [ "$f" = openmpi ] && [ "$same" = yes ]; then
      ga_run "$f" "$t" LD_PRELOAD="$b/src/mpi/.libs/libsicm-mpi-$f.so" LD_LIBRARY_PATH="$b/src/.libs" \
        SICM_MPI_INFO="sicm_memory=dram;sicm_arena=@call;sicm_window=arena"
      if [ $run_rc -ne 0 ] || ! cmp -s "$ga_out" "$ga_bin/$f/$t.expected"; then
        echo "FAIL: $f $t with sicm_window=arena (exit $run_rc)"; diff "$ga_bin/$f/$t.expected" "$ga_out"; rc=1
      fi
    fi
    rm -f "$ga_out" "$report"
  done
done
exit $rc
