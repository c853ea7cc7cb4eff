#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""monitor_plot.py MONITOR.json PREFIX [BEFORE.json]: the table (PREFIX.md)
and plot (PREFIX.png, with gnuplot; PREFIX.csv its data) of bench_monitor:
the interval the placer keeps, its reaction time and its CPU share against
the resident size (outside arenas or inside one, base or huge pages) and
against the arena count.
BEFORE.json, a run of the same benchmark against an earlier library, is
drawn beside it."""
import json
import re
import shutil
import subprocess
import sys

NAME = re.compile(r"BM_Monitor/resident_gib:(\d+)/inside:(\d)/huge:(\d)/arenas:(\d+)/cpu_pct:(\d+)")


def load(path):
    with open(path) as f:
        data = json.load(f)
    rows = {}
    for b in data["benchmarks"]:
        m = NAME.match(b["name"])
        if m and "cpu_share" in b:
            rows[tuple(int(x) for x in m.groups())] = b
    return rows


def where(inside, huge):
    return ("inside an arena" if inside else "outside arenas") + (", THP" if huge else ", 4 KiB")


def table(rows):
    lines = ["| resident GiB | where | arenas | cpu bound | CPU share used | interval kept, ms "
             "| reaction, s |", "|---|---|---|---|---|---|---|"]
    for key in sorted(rows, key=lambda k: (k[3], k[1], k[2], k[0], k[4])):
        gib, inside, huge, arenas, pct = key
        b = rows[key]
        react = b.get("react_s", -1)
        lines.append(f"| {gib} | {where(inside, huge)} | {arenas} | {pct}% "
                     f"| {100 * b['cpu_share']:.2f}% | {b['interval_kept_ms']:.0f} "
                     f"| {'not seen' if react < 0 else '%.1f' % react} |")
    return "\n".join(lines)


def series(rows, tag):
    """(title, axis, points) per line of the plot: x, the interval kept at cpu=1% (a hot
    arena is read hot at the first interval after it turned hot), the CPU share unbounded."""
    out = []
    for inside in (0, 1):
        for huge in (0, 1):
            pts = []
            for gib in sorted({k[0] for k in rows}):
                a, b = rows.get((gib, inside, huge, 10, 1)), rows.get((gib, inside, huge, 10, 100))
                if a and b:
                    pts.append((gib, a["interval_kept_ms"] / 1000, 100 * b["cpu_share"]))
            if pts:
                out.append((f"{tag}{where(inside, huge)}", "gib", pts))
    pts = []
    for n in sorted({k[3] for k in rows}):
        a, b = rows.get((1, 0, 0, n, 1)), rows.get((1, 0, 0, n, 100))
        if a and b:
            pts.append((n, a["interval_kept_ms"] / 1000, 100 * b["cpu_share"]))
    if pts:
        out.append((f"{tag}arenas, 1 GiB outside, 4 KiB", "arenas", pts))
    return out


def main():
    rows = load(sys.argv[1])
    prefix = sys.argv[2]
    before = load(sys.argv[3]) if len(sys.argv) > 3 else {}
    text = table(rows)
    if before:
        text += "\n\nBefore (the same benchmark, the earlier library):\n\n" + table(before)
    with open(prefix + ".md", "w") as f:
        f.write(text + "\n")
    print(text)
    lines = series(rows, "") + series(before, "before: ")
    with open(prefix + ".csv", "w") as f:
        f.write("line,axis,x,interval_kept_s,cpu_pct_unbounded\n")
        for i, (title, axis, pts) in enumerate(lines):
            for x, kept, cpu in pts:
                f.write(f"{i},{axis},{x},{kept:.3f},{cpu:.3f}\n")
    if not shutil.which("gnuplot"):
        print("gnuplot not found: no plot (apt-get install gnuplot-nox)", file=sys.stderr)
        return
    data = {}
    for title, axis, pts in lines:
        rows = "".join(f"{x} {kept} {cpu}\n" for x, kept, cpu in pts)
        data.setdefault(axis, []).append((rows + "e\n", title))
    script = ["set terminal png size 1400,900", f"set output '{prefix}.png'", "set key top left",
              "set multiplot layout 2,2 title 'The placer measuring, 1 s interval asked: "
              "the interval it keeps at cpu=1% (a hot arena is seen within one), "
              "and its CPU unbounded'", "set yrange [0:*]"]
    for axis, xlabel in (("gib", "resident GiB"), ("arenas", "arenas")):
        if axis == "arenas":
            script.append("set logscale x 10")
        for col, ylabel in ((2, "interval kept at cpu=1% (s)"),
                            (3, "CPU share of one core, unbounded (%)")):
            script += [f"set xlabel '{xlabel}'", f"set ylabel '{ylabel}'"]
            script.append("plot " + ", ".join(
                f"'-' using 1:{col} with linespoints title '{title}'"
                for _, title in data.get(axis, [])))
            script += [rows for rows, _ in data.get(axis, [])]
    script.append("unset multiplot")
    subprocess.run(["gnuplot"], input="\n".join(script), text=True, check=True)
    print(f"plot: {prefix}.png")


if __name__ == "__main__":
    main()
