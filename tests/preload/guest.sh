#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# guest.sh (runs inside the 4-node guest): unmodified programs from
# Debian's archive under libsicm-preload.so — python3 building large
# bytearrays and sort with a large buffer.  Their large buffers must land on
# node 2 (HBM-like, 1 GiB), spill to DRAM when node 2 is full or over
# budget, go back to node 2 once it has room, and the programs must print
# the same as without the preload.  Placement is read from outside the
# program, in /proc/PID/numa_maps, and from the preload's statistics.
set -u
. "${SICM_TOP_SRCDIR:-${SICM_TOP_BUILDDIR:?}}/tests/preload/guest_common.sh"
preloaded() { # preloaded SICM_PRELOAD COMMAND...: on CPU 0 (initiator: node 0)
  conf=$1
  shift
  SICM_PRELOAD=$conf LD_PRELOAD=$lib LD_LIBRARY_PATH=$b/src/.libs taskset -c 0 "$@"
}
node_mib() { # node_mib PID NODE: MiB of the process's pages on NODE
  awk -v n="N$2=" '{ for (i = 1; i <= NF; i++) if (index($i, n) == 1) { split($i, a, "="); p += a[2] } }
    END { print int(p * 4 / 1024) }' "/proc/$1/numa_maps"
}
wait_for() { # wait_for FILE PID: until the program wrote FILE (or died)
  while [ ! -e "$1" ]; do
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.2
  done
}

# python3: five 200 MiB bytearrays (the fifth does not fit on node 2),
# then two of them freed and two new ones made (node 2 has room again).
cat >"$tmp/arrays.py" <<'PY'
import os, sys, time
step = sys.argv[1]
def make(seed):
    b = bytearray(200 << 20)
    for i in range(0, len(b), 1 << 20):
        b[i] = (seed + i // (1 << 20)) % 256
    return b
def stage(name):
    open(os.path.join(step, name), "w").close()
    while not os.path.exists(os.path.join(step, name + ".go")):
        time.sleep(0.05)
bufs = [make(s) for s in range(5)]
stage("1")
del bufs[0:2]
bufs += [make(s) for s in range(5, 7)]
stage("2")
print(len(bufs), sum(b[i] for b in bufs for i in range(0, len(b), 1 << 20)))
PY
# arrays NAME SICM_PRELOAD: the python3 program above under the preload,
# in the background, stepping through $tmp/NAME; $pid is python3's (taskset
# execs it); true once its five arrays are made, with $n0 and $n2 its MiB
# on nodes 0 and 2.
arrays() {
  mkdir "$tmp/$1"
  SICM_PRELOAD="$2,stats=$tmp/$1.stats" LD_PRELOAD=$lib LD_LIBRARY_PATH=$b/src/.libs \
    taskset -c 0 python3 "$tmp/arrays.py" "$tmp/$1" >"$tmp/$1.out" 2>&1 &
  pid=$!
  wait_for "$tmp/$1/1" $pid || return 1
  n2=$(node_mib $pid 2) n0=$(node_mib $pid 0)
  echo "  five arrays made: node 0 $n0 MiB, node 2 $n2 MiB"
}
echo "--- python3, device=hbm (node 2), spill by bandwidth rank"
if arrays py "device=hbm"; then
  expect "four arrays (800 MiB) on node 2" [ "$n2" -ge 760 ]
  expect "the fifth spilled to node 0" [ "$n0" -ge 190 ]
  touch "$tmp/py/1.go"
fi
if wait_for "$tmp/py/2" $pid; then
  n2=$(node_mib $pid 2)
  echo "  two freed, two made: node 2 $n2 MiB"
  expect "node 2 still holds four arrays" [ "$n2" -ge 760 ]
  touch "$tmp/py/2.go"
fi
wait $pid
cat "$tmp/py.out" "$tmp/py.stats"
expect "python3 ran to the end" grep -q "^5 " "$tmp/py.out"
expect "six arrays placed on node 2 (the two new ones there again)" \
  grep -q "node 2 hbm: placed 6 " "$tmp/py.stats"
expect "one spilled to node 0" grep -q "node 0 dram: placed 1 (.*), spilled here 1 " "$tmp/py.stats"

echo "--- python3, device=weighted:node:0/node:2 (the kernel's weights, 1:1 here)"
if arrays wi "device=weighted:node:0/node:2"; then
  expect "half of the 1000 MiB on node 0" [ "$n0" -ge 450 ]
  expect "half on node 2" [ "$n2" -ge 450 ]
  touch "$tmp/wi/1.go" "$tmp/wi/2.go"
fi
wait $pid
cat "$tmp/wi.stats"
expect "python3 ran to the end" grep -q "^5 " "$tmp/wi.out"
expect "the report names the tier" grep -q "nodes 0/2 weighted: placed 7 " "$tmp/wi.stats"

mkdir "$tmp/plain"
(cd "$tmp/plain" && touch 1.go 2.go && taskset -c 0 python3 "$tmp/arrays.py" "$tmp/plain" >"$tmp/plain.out" 2>&1)
expect "python3 prints the same without the preload" cmp -s "$tmp/py.out" "$tmp/plain.out"

# sort: its 300 MiB buffer on node 2; with a 100 MiB budget it spills to DRAM.
awk 'BEGIN { srand(1); for (i = 0; i < 400000; i++) print int(rand() * 1e9) }' >"$tmp/numbers"
want=$(taskset -c 0 sort -n -S 300M <"$tmp/numbers" | md5sum)
echo "--- sort -S 300M, device=hbm"
got=$(preloaded "device=hbm,stats=$tmp/sort.stats" sort -n -S 300M <"$tmp/numbers" | md5sum)
cat "$tmp/sort.stats"
expect "sort prints the same with the preload" [ "$got" = "$want" ]
expect "its buffer placed on node 2" grep -q "node 2 hbm: placed [1-9]" "$tmp/sort.stats"
expect "and its pages were there" grep -Eq "when they were freed: node 2 [0-9.]+ MiB$" "$tmp/sort.stats"
echo "--- sort -S 300M, device=hbm, budget=100M, spill=dram"
got=$(preloaded "device=hbm,budget=100M,spill=dram,stats=$tmp/spill.stats" sort -n -S 300M <"$tmp/numbers" |
  md5sum)
cat "$tmp/spill.stats"
expect "sort prints the same with the budget" [ "$got" = "$want" ]
expect "the buffer spilled to node 0" grep -q "node 0 dram: placed [1-9][0-9]* (.*), spilled here [1-9]" "$tmp/spill.stats"
expect "its pages were on node 0" grep -Eq "when they were freed: node 0 [0-9.]+ MiB$" "$tmp/spill.stats"
# A program that never heard of libsicm: each of its three allocation
# sites gets an arena (sites=), and the placer (SICM_AUTOPLACE, a budget
# for one buffer) moves the site whose buffer is hot to node 2, alone.
echo "--- sites_check: sites=4, SICM_AUTOPLACE=fast=2,budget=24M,interval=200ms,cpu=100%"
SICM_AUTOPLACE="fast=2,budget=24M,interval=200ms,cpu=100%" SICM_STATS="$tmp/sites.json" \
  preloaded "device=node:0,min=1M,sites=4" "$b/tests/preload/sites_check" 6 >"$tmp/sites.out"
cat "$tmp/sites.out"
expect "the hot buffer's site is on node 2" grep -Eq "^field 2:409[67]$" "$tmp/sites.out"
expect "the cold ones are not" sh -c "! grep -E '^(history|scratch) .* 2:' '$tmp/sites.out'"
expect "the report names the sites and the decision" \
  grep -q '"name": "site-.*"why": "hot: referenced' "$tmp/sites.json"
# The same with Debian's own python3: three buffers made by three
# constructors are three call sites inside the interpreter.
echo "--- python3 sites_check.py: sites=8, SICM_AUTOPLACE=fast=2,budget=24M,interval=200ms,cpu=100%"
SICM_AUTOPLACE="fast=2,budget=24M,interval=200ms,cpu=100%" SICM_STATS="$tmp/python.json" \
  preloaded "device=node:0,min=1M,sites=8" /usr/bin/python3 "$src/tests/preload/sites_check.py" 8 \
  >"$tmp/python.out"
cat "$tmp/python.out"
expect "python's hot buffer's site is on node 2" grep -Eq "^field 2:409[67]$" "$tmp/python.out"
expect "its cold ones are not" sh -c "! grep -E '^(history|scratch) .* 2:' '$tmp/python.out'"
expect "the report has the decision" grep -q '"why": "hot: referenced' "$tmp/python.json"
# The shape of an MPI code's node: two processes at once, one per CPU, each
# with per-site arenas and its placer at 500 ms, for 15 s (the share holds
# over a run, within the cost of the interval that ended last).  Each placer's thread must
# keep within the cpu= share of a core it was given, whatever its measuring
# costs under the emulator (the placer lengthens its interval instead).
echo "--- two sites_check processes at once: sites=4, interval=500ms, cpu=1%"
for cpu in 0 1; do
  SICM_AUTOPLACE="fast=2,budget=24M,interval=500ms,cpu=1%" SICM_STATS="$tmp/pair.json" \
    SICM_PRELOAD="device=node:$cpu,min=1M,sites=4" LD_PRELOAD=$lib LD_LIBRARY_PATH=$b/src/.libs \
    taskset -c $cpu "$b/tests/preload/sites_check" 15 >/dev/null &
done
wait
expect "each placer kept within its 1% of a core" python3 - "$tmp/pair.json" <<'PY'
import json, sys
placers = [json.loads(line)["placer"] for line in open(sys.argv[1]) if line.strip()]
for p in placers:
    print(f"    placer: {p['cpu_used'] * 100:.3f}% of a core (cpu={p['cpu_share'] * 100:g}%), "
          f"moves {p['move_cpu_seconds']:.3f} s of CPU, interval kept {p['interval_kept_ms']} ms, "
          f"{p['intervals']} intervals")
sys.exit(0 if len(placers) == 2 and all(p["intervals"] >= 1 and p["cpu_used"] <= p["cpu_share"]
                                        for p in placers) else 1)
PY
# Small blocks (small=sicm, the default) come from the small arena of the
# node whose CPU the thread runs on, whatever device the large ones go to.
echo "--- small blocks on the node of the thread's CPU, device=hbm"
for cpu in 0 1; do
  expect "cpu $cpu: every small block's page on its node" env SICM_PRELOAD="device=hbm" \
    LD_PRELOAD=$lib LD_LIBRARY_PATH=$b/src/.libs taskset -c $cpu "$b/tests/preload/preload_check" small-node
done
rm -rf "$tmp"
exit $failed
