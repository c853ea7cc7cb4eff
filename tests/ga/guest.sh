#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# guest.sh quick|all (runs inside the 4-node guest): Global Arrays 5.8.2's own test
# programs, as tests/ga/host.sh built them, unmodified under libsicm-mpi
# with every window and block of memory on HBM (node 2), each an arena of
# its own: SICM_MPI_INFO="sicm_memory=hbm;sicm_arena=@call".  Each must
# pass, each rank print what it printed on the host without libsicm
# (ranks.py), and SICM_MPI_REPORT must show every global array's window,
# when it was freed, with its resident pages on node 2 and nowhere else.
set -u
. "${SICM_TOP_SRCDIR:-${SICM_TOP_BUILDDIR:?}}/tests/ga/common.sh"
ip link set lo up 2> /dev/null || true
hostname sicm-guest 2> /dev/null || true
# quick (check-numa): three of them; all: every one host.sh built.
case ${1:-quick} in
  all) programs="$GA_COMPARED $GA_VERDICT_ONLY" ;;
  *) programs="testc ntestc lock" ;;
esac
rc=0
for f in $flavours; do
  [ -f "$ga_bin/$f/testc.expected" ] ||
    ga_skip "GA's tests for $f were not built and run on the host (tests/ga/host.sh, make check)"
  echo "== $f: GA's tests, 2 ranks, every array on HBM"
  for t in $programs; do
    report=$(mktemp --suffix=.json)
    ga_run "$f" "$t" LD_PRELOAD="$b/src/mpi/.libs/libsicm-mpi-$f.so" LD_LIBRARY_PATH="$b/src/.libs" \
      SICM_MPI_INFO="sicm_memory=hbm;sicm_arena=@call$(ga_window "$f")" SICM_MPI_REPORT="$report"
    [ $run_rc -eq 0 ] || { echo "FAIL: $f $t (exit $run_rc)"; cat "$ga_out"; rc=1; continue; }
    same=yes
    case " $GA_VERDICT_ONLY " in
      *" $t "*) same="verdict only" ;;
      *) cmp -s "$ga_out" "$ga_bin/$f/$t.expected" || same=no ;;
    esac
    census=$("${SICM_PYTHON:-python3}" - "$report" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
wins = [l for l in lines if l["arena"].startswith("mpi:win#")]
touched = [l for l in wins if l["resident"]]
off = [l for l in lines if set(l["resident"]) - {"2"}]
on2 = sum(l["resident"].get("2", 0) for l in lines)
print(f"{len(wins)} {len(touched)} {len(off)} {on2}")
PY
)
    set -- $census
    echo "  $t: passed; output as on the host without libsicm: $same; $1 windows, $2 of them" \
      "with pages, $3 arenas with pages off node 2; $(($4 / 1024)) KiB on node 2 when freed"
    if [ "$same" = no ]; then
      echo "FAIL: $f $t printed other lines:"; diff "$ga_bin/$f/$t.expected" "$ga_out"; rc=1
    fi
    if [ "$2" -eq 0 ] || [ "$3" -ne 0 ]; then
      echo "FAIL: $f $t: not every array on node 2:"; cat "$report"; rc=1
    fi
    rm -f "$ga_out" "$report"
  done
done
exit $rc
