#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""autoplace_ratios.py GUEST.json[,GUEST.json...] [HOST.json [PNG]]: bench_autoplace's results as
Markdown — per trace shape, the share of accesses the placer served from
the fast tier against the oracle's and the bytes each moved; then the
monitor's cost: the compute loop's pass time with the monitor over its
time without, in pairs of windows seconds apart; the median of the pairs'
ratios and its quartiles."""
import json
import shutil
import subprocess
import sys


def load(path):
    with open(path) as f:
        return json.load(f)["benchmarks"]


def traces(benchmarks):
    print("| trace | placer's share served fast | oracle's | ratio (goal >= 0.9 phased, skewed) "
          "| MiB moved, placer | MiB moved, oracle |")
    print("|---|---|---|---|---|---|")
    for b in benchmarks:
        if not b["name"].startswith("Trace/"):
            continue
        if b.get("error_occurred"):
            print(f"| {b['name'][6:]} | error: {b.get('error_message', '')} | | | | |")
            continue
        print(f"| {b['name'][6:].split('/')[0]} | {b['placer_share']:.3f} | {b['oracle_share']:.3f} "
              f"| {b['share_ratio']:.3f} | {b['placer_MiB_moved']:.0f} | {b['oracle_MiB_moved']:.0f} |")


def plot(benchmarks, png):
    rows = [b for b in benchmarks if b["name"].startswith("Trace/") and not b.get("error_occurred")]
    if not rows or shutil.which("gnuplot") is None:
        return
    data = "\n".join(f"{b['name'][6:].split('/')[0]} {b['placer_share']:.4f} {b['oracle_share']:.4f}"
                     for b in rows)
    script = f"""set terminal png size 800,420
set output '{png}'
set title 'Share of accesses served from the fast tier (4-node guest, TCG)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.9 noborder
set yrange [0:1.25]
set ylabel 'share of accesses'
set key top left horizontal
$d << EOD
{data}
EOD
plot $d using 2:xtic(1) title 'placer' lc rgb '#ee6677', '' using 3 title 'oracle' lc rgb '#4477aa'
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)


def monitor(benchmarks, where):
    for b in benchmarks:
        if not b["name"].startswith("Monitor/"):
            continue
        pages = "huge pages" if "huge:1" in b["name"] else "4 KiB pages"
        if b.get("error_occurred"):
            print(f"| {where}, {pages} | error: {b.get('error_message', '')} | | |")
            continue
        print(f"| {where}, {pages} | {b['ratio_median']:.3f} "
              f"| {b['ratio_q1']:.3f}–{b['ratio_q3']:.3f} ({b['pairs']:.0f} pairs) "
              f"| {b['pass_ms_without']:.1f} ms |")


guest = [b for path in sys.argv[1].split(",") for b in load(path)]
traces(guest)
print()
print("| monitor at a 1 s interval, 1 GiB compute loop | median of the pairs' ratios, with / without "
      "(goal <= 1.02) | quartiles | median pass without |")
print("|---|---|---|---|")
monitor(guest, "guest (TCG)")
if len(sys.argv) > 2:
    monitor(load(sys.argv[2]), "host")
if len(sys.argv) > 3:
    plot(guest, sys.argv[3])
