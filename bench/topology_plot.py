#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""topology_plot.py TOPOLOGY.json PREFIX: the table (PREFIX.md) and plot
(PREFIX.png, with gnuplot; PREFIX.csv its data) of bench_topology: sicm_init time and memory per rank when
every rank discovers the topology, against ranks sharing one copy (cold:
one rank publishes, the others adopt; warm: all adopt), ratios from the
medians of one run."""
import json
import re
import shutil
import subprocess
import sys


def main():
    with open(sys.argv[1]) as f:
        data = json.load(f)
    prefix = sys.argv[2]
    rows = {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        m = re.match(r"BM_init/mode:(\d)/ranks:(\d+)", b["name"])
        if m:
            rows[(int(m[1]), int(m[2]))] = b
    ranks = sorted({k[1] for k in rows})
    mode_names = ["discover", "adopt cold", "adopt warm"]
    cols = [2, 3, 4]
    lines = ["| ranks | discover µs | cold µs | warm µs | cold / discover | warm / discover "
             "| RSS KiB discover | RSS KiB warm | init adds KiB: discover / cold / warm |",
             "|---|---|---|---|---|---|---|---|---|"]
    for n in ranks:
        d, c, w = (rows.get((m, n)) for m in range(3))
        if not (d and c and w):
            continue
        lines.append(
            f"| {n} | {d['real_time']:.0f} | {c['real_time']:.0f} | {w['real_time']:.0f} "
            f"| **{c['real_time'] / d['real_time']:.2f}x** | **{w['real_time'] / d['real_time']:.2f}x** "
            f"| {d['rss_kib']:.0f} | {w['rss_kib']:.0f} "
            f"| {d['init_rss_kib']:.0f} / {c['init_rss_kib']:.0f} / {w['init_rss_kib']:.0f} |")
    table = "\n".join(lines)
    with open(prefix + ".md", "w") as f:
        f.write(table + "\n")
    print(table)

    with open(prefix + ".csv", "w") as f:
        f.write("ranks,discover_us,cold_us,warm_us,discover_kib,cold_kib,warm_kib\n")
        for n in ranks:
            if all((m, n) in rows for m in range(3)):
                r = [rows[(m, n)] for m in range(3)]
                f.write(",".join([str(n)] + ["%.1f" % x["real_time"] for x in r] +
                                 ["%.1f" % x["init_rss_kib"] for x in r]) + "\n")
    if not shutil.which("gnuplot"):
        print("gnuplot not found: no plot (apt-get install gnuplot-nox)", file=sys.stderr)
        return
    script = ["set terminal png size 1200,450", "set output '%s.png'" % prefix,
              "set datafile separator ','", "set logscale x 2", "set key top left",
              "set xlabel 'ranks started together on one node'", "set yrange [0:*]",
              "set multiplot layout 1,2 title 'sicm\\_init: every rank discovers vs one "
              "topology per node (medians)'",
              "set ylabel 'wall time of sicm\\_init per rank (us)'"]
    plot = ("plot " + ", ".join("'%s.csv' every ::1 using 1:%d with linespoints title '%s'"
                                % (prefix, col, name) for col, name in zip(cols, mode_names)))
    script.append(plot.replace("COLS", ""))
    script.append("set ylabel 'RSS sicm\\_init adds per rank (KiB)'")
    script.append("plot " + ", ".join("'%s.csv' every ::1 using 1:%d with linespoints title '%s'"
                                      % (prefix, col + 3, name)
                                      for col, name in zip(cols, mode_names)))
    script.append("unset multiplot")
    subprocess.run(["gnuplot"], input="\n".join(script), text=True, check=True)
    print("plot: %s.png" % prefix)

if __name__ == "__main__":
    main()
