#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# placer.sh (runs inside the 4-node guest): MPI windows under the placer.
# For each MPI libsicm-mpi was built for, tests/mpi/mpi_placer_check-MPI in
# 2 ranks (CPU 0 and 1), each window an arena of its own on DRAM by
# SICM_MPI_INFO_WIN_ALLOCATE, the placer on with a fast-tier budget for one
# window per rank: the window the other rank puts into must reach node 2
# (HBM), the one nobody touches must not, and the SICM_STATS report must
# give the placer's decision for each window by its name.
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
  SICM_STATS=$(mktemp --suffix=.json)
  export SICM_STATS
  mpi_run "$f" 300 2 --bind "$b/tests/mpi/mpi_placer_check-$f" 120 || { echo "FAIL: $f"; rc=1; }
  # Each rank's report: its windows by name, where the placer put each and why.
  python3 - "$SICM_STATS" <<'PY' || { echo "FAIL: $f report"; rc=1; }
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
failed = 0
for line in lines:
    last = {}
    for d in line.get("decisions", []):
        if d["name"].startswith("mpi:win#"):
            print(f"  pid {line.get('pid')}: {d['name']}: node {d['from']} -> {d['to']}, "
                  f"error {d['error']}: {d['why']}")
            last[d["name"].split()[0]] = d
    cold, hot = last.get("mpi:win#1"), last.get("mpi:win#2")
    ok = hot is not None and hot["to"] == 2 and hot["error"] == 0 and "hot" in hot["why"] and \
        (cold is None or cold["to"] != 2)
    print(("ok: " if ok else "FAILED: ") + f"pid {line.get('pid')}: the report names the windows; "
          "the one put into went to node 2 as hot, the other stayed off it")
    failed += not ok
sys.exit(1 if failed or len(lines) != 2 else 0)
PY
  rm -f "$SICM_STATS"
done
exit $rc
