#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""migrate_plot.py: bench_migrate's JSON -> tables (markdown), a CSV and a PNG
plot (gnuplot): throughput against size, migration vs memmove, per case; the
fixed cost of a move (empty arena, 4 KiB - 1 MiB), against an earlier run of
the same benchmark (BEFORE.json, e.g. with the previous library) when given;
the methods of moving huge pages; how long a writer stalls during a move.

usage: migrate_plot.py MIGRATE.json OUT_PREFIX [BEFORE.json]
writes OUT_PREFIX.csv, OUT_PREFIX.md, OUT_PREFIX.png (if gnuplot is present)."""
import json
import re
import shutil
import subprocess
import sys

CASES = ["0->2 DRAM->HBM", "2->0 HBM->DRAM", "0->1 DRAM->DRAM"]
PAGES = ["4 KiB pages", "huge pages"]
METHODS = ["heads", "subpages", "mbind"]
SMALL = range(12, 21)


def medians(path):
    """{(name, args...): (seconds per iteration, counters)} from the medians."""
    out = {}
    with open(path) as f:
        data = json.load(f)
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        if b.get("error_occurred"):
            continue
        name = b["run_name"].replace("/real_time", "").replace("/manual_time", "")
        parts = name.split("/")
        key = (parts[0],) + tuple(int(p.split(":")[1]) for p in parts[1:])
        unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
        out[key] = (b["real_time"] * unit, b)
    return out


def table(header, rows):
    md = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    md += ["| " + " | ".join(r) + " |" for r in rows]
    return md


def ratio_rows(times, before):
    """(case, huge, log2 bytes, migrate GB/s, memmove GB/s, ratio, us, before us)."""
    rows = []
    for key, (t, _) in sorted(times.items()):
        if key[0] != "BM_migrate" or ("BM_memmove",) + key[1:] not in times:
            continue
        case, huge, lg = key[1:]
        mm = times[("BM_memmove",) + key[1:]][0]
        old = before.get(key, (0, None))[0]
        rows.append((case, huge, lg, (1 << lg) / t / 1e9, (1 << lg) / mm / 1e9, mm / t,
                     t * 1e6, old * 1e6))
    return rows


def ratio_table(rows):
    md = ["Ratio memmove time / migration time:", ""]
    lgs = sorted({r[2] for r in rows})
    md += table(["case", "pages"] + ["2^%d" % lg for lg in lgs],
                [[CASES[c], PAGES[h]] + ["%.2fx" % r[5] for r in rows if r[0] == c and r[1] == h]
                 for c in range(3) for h in range(2)
                 if any(r[0] == c and r[1] == h for r in rows)])
    return md


def fixed_cost_table(times, before):
    def micros(src, key):
        return "%.0f" % (src[key][0] * 1e6) if key in src else "-"
    md = ["", "Time per move, microseconds (the fixed cost)%s:" %
          ("; before -> after" if before else ""), ""]
    small_rows = []
    for c in range(3):
        for h in range(2):
            keys = [("BM_migrate_empty", c, h)] + [("BM_migrate", c, h, lg) for lg in SMALL]
            if before:
                cells = ["%s -> %s" % (micros(before, k), micros(times, k)) for k in keys]
            else:
                cells = [micros(times, k) for k in keys]
            small_rows.append([CASES[c], PAGES[h]] + cells)
    md += table(["case", "pages", "empty"] + ["%d KiB" % (1 << (lg - 10)) for lg in SMALL],
                small_rows)
    return md


def method_and_stall_tables(times):
    md, method_rows = [], []
    for m in range(3):
        for threads in (1, 2):
            cells = []
            for lg in (24, 26, 28):
                k, mm = ("BM_migrate_method", m, threads, lg), ("BM_memmove", 0, 1, lg)
                cells.append("%.2fx" % (times[mm][0] / times[k][0])
                             if k in times and mm in times else "-")
            method_rows.append([METHODS[m], str(threads)] + cells)
    if any(c != "-" for r in method_rows for c in r[2:]):
        md += ["", "Huge-page arenas 0->2, by method (ratio to memmove):", ""]
        md += table(["method", "threads", "16 MiB", "64 MiB", "256 MiB"], method_rows)
    stall_rows = []
    for h in range(2):
        k = ("BM_migrate_stall", h)
        if k in times:
            t, b = times[k]
            stall_rows.append([PAGES[h], "%.0f" % (t * 1e3), "%.1f" % b["stall_max_ms"],
                               "%.0f%%" % (100 * b["stall_share"])])
    if stall_rows:
        md += ["", "A thread writing a 64 MiB arena during its move 0->2:", ""]
        md += table(["pages", "move, ms", "longest stall, ms", "share of the move stalled"],
                    stall_rows)
    return md


def plot(prefix, before):
    script = ["set terminal png size 1500,1400", "set output '%s.png'" % prefix,
              "set datafile separator ','",
              "set multiplot layout 3,3 title 'Arena migration vs memmove (medians, TCG guest)'",
              "set xlabel 'log2(bytes)'", "set key top left", "set logscale y"]
    for huge in range(2):
        script.append("set ylabel 'GB/s'")
        for case in range(3):
            script.append("set title '%s, %s'" % (CASES[case], PAGES[huge]))
            sel = "($1==%d && $2==%d ? $%%d : 1/0)" % (case, huge)
            script.append("plot '%s.csv' every ::1 using 3:%s with linespoints title 'migrate', "
                          "'' every ::1 using 3:%s with linespoints title 'memmove'"
                          % (prefix, sel % 4, sel % 5))
    script += ["set ylabel 'microseconds per move'", "set xrange [11.5:20.5]"]
    for case in range(3):
        script.append("set title '%s, fixed cost: 4 KiB - 1 MiB'" % CASES[case])
        plots = []
        for huge in range(2):
            sel = "($1==%d && $2==%d && $3<=20 ? $%%d : 1/0)" % (case, huge)
            plots.append("'%s.csv' every ::1 using 3:%s with linespoints title 'after, %s'"
                         % (prefix, sel % 7, PAGES[huge]))
            if before:
                old = "($1==%d && $2==%d && $3<=20 && $8>0 ? $8 : 1/0)" % (case, huge)
                plots.append("'%s.csv' every ::1 using 3:%s with linespoints dt 2 "
                             "title 'before, %s'" % (prefix, old, PAGES[huge]))
        script.append("plot " + ", ".join(plots))
    script.append("unset multiplot")
    subprocess.run(["gnuplot"], input="\n".join(script), text=True, check=True)
    print("plot: %s.png" % prefix)


def main():
    times = medians(sys.argv[1])
    prefix = sys.argv[2]
    before = medians(sys.argv[3]) if len(sys.argv) > 3 else {}
    rows = ratio_rows(times, before)
    with open(prefix + ".csv", "w") as f:
        f.write("case,huge,log2_bytes,migrate_GBps,memmove_GBps,ratio,migrate_us,before_us\n")
        for r in rows:
            f.write("%d,%d,%d,%.4f,%.4f,%.3f,%.1f,%.1f\n" % r)
    md = ratio_table(rows) + fixed_cost_table(times, before) + method_and_stall_tables(times)
    with open(prefix + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))
    if not shutil.which("gnuplot"):
        print("gnuplot not found: no plot (apt-get install gnuplot-nox)", file=sys.stderr)
        return
    plot(prefix, before)


if __name__ == "__main__":
    main()
