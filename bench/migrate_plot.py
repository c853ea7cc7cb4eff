#!/usr/bin/env python3
"""migrate_plot.py: bench_migrate's JSON -> ratio table (markdown), CSV and a
PNG plot (gnuplot) of throughput against size, migration vs memmove, per case.

usage: migrate_plot.py MIGRATE.json OUT_PREFIX
writes OUT_PREFIX.csv, OUT_PREFIX.md, OUT_PREFIX.png (if gnuplot is present)."""
import json
import re
import shutil
import subprocess
import sys

CASES = ["0->2 DRAM->HBM", "2->0 HBM->DRAM", "0->1 DRAM->DRAM"]
PAGES = ["4 KiB pages", "huge pages"]


def medians(path):
    """{(op, case, huge, lg): seconds per iteration} from the median aggregates."""
    out = {}
    with open(path) as f:
        data = json.load(f)
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        if b.get("error_occurred"):
            continue
        m = re.match(r"BM_(\w+)/case:(\d)/huge:(\d)/lg:(\d+)", b["run_name"])
        if not m:
            continue
        unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
        out[(m[1], int(m[2]), int(m[3]), int(m[4]))] = b["real_time"] * unit
    return out


def main():
    times = medians(sys.argv[1])
    prefix = sys.argv[2]
    rows = []
    for (op, case, huge, lg), t in sorted(times.items()):
        if op != "migrate" or ("memmove", case, huge, lg) not in times:
            continue
        mm = times[("memmove", case, huge, lg)]
        rows.append((case, huge, lg, (1 << lg) / t / 1e9, (1 << lg) / mm / 1e9, mm / t))
    with open(prefix + ".csv", "w") as f:
        f.write("case,huge,log2_bytes,migrate_GBps,memmove_GBps,ratio\n")
        for r in rows:
            f.write("%d,%d,%d,%.4f,%.4f,%.3f\n" % r)
    md = ["| case | pages | " + " | ".join("2^%d" % lg for lg in sorted({r[2] for r in rows})) + " |"]
    md.append("|---|---|" + "---|" * len({r[2] for r in rows}))
    for case in range(3):
        for huge in range(2):
            cells = [r for r in rows if r[0] == case and r[1] == huge]
            if cells:
                md.append("| %s | %s | " % (CASES[case], PAGES[huge]) +
                          " | ".join("%.2fx" % r[5] for r in cells) + " |")
    with open(prefix + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))
    if not shutil.which("gnuplot"):
        print("gnuplot not found: no plot (apt-get install gnuplot-nox)", file=sys.stderr)
        return
    script = ["set terminal pngcairo size 1500,1000 font ',10'" if False else
              "set terminal png size 1500,1000",
              "set output '%s.png'" % prefix, "set datafile separator ','",
              "set multiplot layout 2,3 title 'Arena migration vs memmove (median throughput, TCG guest)'",
              "set logscale y", "set xlabel 'log2(bytes)'", "set ylabel 'GB/s'", "set key top left"]
    for huge in range(2):
        for case in range(3):
            script.append("set title '%s, %s'" % (CASES[case], PAGES[huge]))
            sel = "($1==%d && $2==%d ? $%%d : 1/0)" % (case, huge)
            script.append("plot '%s.csv' every ::1 using 3:%s with linespoints title 'migrate', "
                          "'' every ::1 using 3:%s with linespoints title 'memmove'"
                          % (prefix, sel % 4, sel % 5))
    script.append("unset multiplot")
    subprocess.run(["gnuplot"], input="\n".join(script), text=True, check=True)
    print("plot: %s.png" % prefix)


if __name__ == "__main__":
    main()
