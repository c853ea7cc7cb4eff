#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""autoplace_timeline.py STATS.json OUT_PREFIX: which arena sat on which node
over a run, from the report SICM_STATS=FILE.json wrote (JSON Lines: the last
line with a placer is drawn).  Each arena is a row; its bar changes colour
at each move the placer made.  Writes OUT_PREFIX.csv (arena, node, start
and end seconds after the placer started) and OUT_PREFIX.png (gnuplot)."""
import json
import shutil
import subprocess
import sys

path, prefix = sys.argv[1], sys.argv[2]
report = None
with open(path) as f:
    for line in f:
        line = line.strip()
        if line:
            obj = json.loads(line)
            if obj.get("placer", {}).get("started"):
                report = obj
if report is None:
    sys.exit(f"{path}: no report of a run with the placer")
start, end = report["placer"]["start_time"], report["time"]
names = {a["arena"]: a["name"] or f"arena {a['arena']}" for a in report["arenas"]}
final = {a["arena"]: a["devices"][0]["node"] for a in report["arenas"] if a["devices"]}
moves = {}
for d in report["decisions"]:
    if d["name"]:
        names.setdefault(d["arena"], d["name"])
    if d["error"] == 0 and d["from"] >= 0:
        moves.setdefault(d["arena"], []).append(d)
rows = []
for slot in sorted(set(final) | set(moves)):
    steps = sorted(moves.get(slot, []), key=lambda d: d["time"])
    node = steps[0]["from"] if steps else final.get(slot, -1)
    at = 0.0
    for d in steps:
        rows.append((slot, node, at, d["time"] - start))
        node, at = d["to"], d["time"] - start
    rows.append((slot, node, at, end - start))
with open(prefix + ".csv", "w") as f:
    f.write("arena,name,node,start_s,end_s\n")
    for slot, node, a, b in rows:
        f.write(f"{slot},{names.get(slot, slot)},{node},{a:.3f},{b:.3f}\n")
print(f"{prefix}.csv: {len(rows)} segments over {end - start:.1f} s, "
      f"{len(report['decisions'])} decisions")
if shutil.which("gnuplot") is None:
    sys.exit(0)
order = {slot: i for i, slot in enumerate(sorted(set(r[0] for r in rows)))}
COLOURS = {0: 0x4477AA, 1: 0x66CCEE, 2: 0xEE6677, 3: 0xBBBBBB}
data = "\n".join(f"{(a + b) / 2} {order[s]} {(b - a) / 2} 0.35 {COLOURS.get(n, 0x222222)}"
                 for s, n, a, b in rows)
tics = ", ".join(f'"{names.get(s, s)}" {i}' for s, i in order.items())
script = f"""set terminal png size 1000,{140 + 40 * len(order)}
set output '{prefix}.png'
set title 'Where each arena sat, placer at {report['placer']['interval_ms']} ms (blue: node 0, light blue: 1, red: 2, grey: 3)'
set xlabel 'seconds since the placer started'
set ytics ({tics})
set yrange [-1:{len(order)}]
plot '-' using 1:2:3:4:5 with boxxyerror fs solid 0.9 noborder lc rgb variable notitle
{data}
e
"""
subprocess.run(["gnuplot"], input=script, text=True, check=True)
print(f"{prefix}.png")
