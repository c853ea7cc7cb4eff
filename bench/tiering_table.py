#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""tiering_table.py HMAT4 NOHBM PREFIX: bench_tiering's results (the files
HMAT4-*.json and NOHBM-*.json, one per trace and mode: bench/tiering.sh) as
Markdown (printed, and PREFIX.md) and a plot (PREFIX.png with gnuplot, its
data PREFIX.csv): per topology and trace, each mode's share of accesses
served from the fast node beside the oracle's, the MiB the kernel
migrated (ours too; the placer's own moves apart), the CPU seconds the mode cost beyond no placement
(the process's and the kernel's tiering threads', against the run of no
placement on the same trace, so a few hundredths either way are noise),
the placer thread's own, and the reaction to a change of the hot pair.
Then hpcc's runs under tiering_program (HMAT4-program.jsonl, a line per
run, each mode once a round; the placer's CPU from the SICM_STATS reports
in HMAT4-hpcc/), where present: per mode, the median and range."""
import glob
import json
import shutil
import statistics
import subprocess
import sys

MODES = ["none", "placer", "placer-1%cpu", "placer-1%cpu-thp", "balancing", "damon", "placer+balancing", "placer+damon"]
TRACES = ["phased", "skewed", "shifting", "equal"]
TOPOLOGIES = [("hmat4", "HBM above DRAM (hmat4: fast node 2, from node 0)"),
              ("nohbm", "DRAM above capacity memory (nohbm: fast node 0, from node 2)")]


def load(prefix):
    """{(trace, mode): benchmark} of one topology's runs."""
    rows = {}
    for path in sorted(glob.glob(prefix + "-*.json")):
        with open(path) as f:
            data = json.load(f)
        for b in data["benchmarks"]:
            parts = b["name"].split("/")
            if len(parts) >= 3 and parts[0] == "Tiering":
                rows[(parts[1], parts[2])] = b
    return rows


def cost(rows, trace, mode):
    """CPU seconds beyond the same trace with no placement, or None."""
    b, base = rows.get((trace, mode)), rows.get((trace, "none"))
    if not b or not base or b.get("error_occurred") or base.get("error_occurred"):
        return None
    spent = lambda r: r["process_cpu_s"] + r["kernel_cpu_s"]
    return spent(b) - spent(base)


def placer_cpu(b):
    """The placer thread's CPU seconds, its moves' in brackets (runs
    before that counter: the total alone)."""
    if "placer_move_cpu_s" not in b or not b["placer_cpu_s"]:
        return f"{b['placer_cpu_s']:.2f}"
    return f"{b['placer_cpu_s']:.2f} ({b['placer_move_cpu_s']:.2f})"


def table(rows, title):
    out = [f"**{title}**", "",
           "| trace | mode | share served fast | oracle | MiB migrated | CPU s beyond none "
           "| placer thread CPU s (moves) | reaction s (changes missed) |",
           "|---|---|---|---|---|---|---|---|"]
    for trace in TRACES:
        for mode in MODES:
            b = rows.get((trace, mode))
            if b is None:
                continue
            if b.get("error_occurred"):
                out.append(f"| {trace} | {mode} | error: {b.get('error_message', '')} | | | | | |")
                continue
            c = cost(rows, trace, mode)
            react = "–" if b["react_s"] < 0 else f"{b['react_s']:.1f} ({b['react_missed']:.0f})"
            moved = f"{b['MiB_migrated']:.0f}"
            if "placer" in mode and "placer_MiB_moved" in b:
                moved += f" ({b['placer_MiB_moved']:.0f} by the placer)"
            out.append(f"| {trace} | {mode} | {b['share']:.3f} | {b['oracle_share']:.3f} "
                       f"| {moved} | {'–' if c is None else '%.2f' % c} "
                       f"| {placer_cpu(b)} | {react} |")
    return "\n".join(out)


def program_rows(prefix):
    """[(mode, run, placer's CPU seconds and its moves' or None)] of
    PREFIX-program.jsonl, in the order run."""
    rows = []
    try:
        lines = open(prefix + "-program.jsonl").read().splitlines()
    except OSError:
        return rows
    for line in lines:
        run = json.loads(line)
        placer = None
        try:
            # One report per process of the run (Open MPI's helper has
            # the preload too): the program's is the one with arenas.
            with open(f"{prefix}-hpcc/stats-{run['mode']}-{run['round']}.json") as f:
                report = max((json.loads(r) for r in f.read().splitlines()), key=lambda r: len(r["arenas"]))
            placer = (report["placer"]["cpu_seconds"], report["placer"]["move_cpu_seconds"])
        except (OSError, IndexError, KeyError, ValueError):
            pass
        rows.append((run["mode"], run, placer))
    return rows


def spread(values, form):
    """The median of values, and their range when there are several."""
    values = sorted(values)
    if not values:
        return "–"
    median = statistics.median(values)
    if len(values) == 1:
        return form % median
    return f"{form % median} ({form % values[0]}–{form % values[-1]})"


def program_table(rows, title):
    """Per mode, over its rounds: the median (and range) of each figure;
    CPU beyond none against none's median."""
    ok = [(m, r, p) for m, r, p in rows if not r["exit"]]
    modes = list(dict.fromkeys(m for m, _, _ in rows))
    spent = lambda x: x["program_cpu_s"] + x["kernel_cpu_s"]
    base = [spent(r) for m, r, _ in ok if m == "none"]
    base = statistics.median(base) if base else None
    out = [f"**hpcc, {title}** ({max(r['round'] for _, r, _ in rows)} rounds: median (range))", "",
           "| mode | share of written pages served fast | the same, scaled to the budget "
           "| program's MiB on the fast node, mean / peak | MiB migrated | CPU s beyond none "
           "| placer thread CPU s | failed runs |",
           "|---|---|---|---|---|---|---|---|"]
    for mode in modes:
        runs = [(r, p) for m, r, p in ok if m == mode]
        failed = sum(1 for m, r, _ in rows if m == mode and r["exit"])
        col = lambda key, form: spread([r[key] for r, _ in runs], form)
        beyond = "–" if base is None else spread([spent(r) - base for r, _ in runs], "%.1f")
        placed = [p for _, p in runs if p is not None]
        own = "–" if not placed else (spread([p[0] for p in placed], "%.2f") + "; moves "
                                      + spread([p[1] for p in placed], "%.2f"))
        held = f"{col('fast_resident_mean_MiB', '%.0f')} / {col('fast_resident_max_MiB', '%.0f')}"
        out.append(f"| {mode} | {col('share', '%.3f')} | {col('share_scaled', '%.3f')} | {held} "
                   f"| {col('MiB_migrated', '%.0f')} | {beyond} | {own} | {failed} |")
    return "\n".join(out)


def plot(runs, prefix):
    with open(prefix + ".csv", "w") as f:
        f.write("topology,trace,mode,share,oracle_share\n")
        for topo, rows in runs:
            for (trace, mode), b in rows.items():
                if not b.get("error_occurred"):
                    f.write(f"{topo},{trace},{mode},{b['share']:.4f},{b['oracle_share']:.4f}\n")
    if not shutil.which("gnuplot"):
        print("gnuplot not found: no plot (apt-get install gnuplot-nox)", file=sys.stderr)
        return
    blocks, plots = [], []
    for i, (topo, rows) in enumerate(runs):
        traces = [t for t in TRACES if (t, MODES[0]) in rows]
        lines = [f"{t} " + " ".join(f"{rows[(t, m)]['share']:.4f}" if (t, m) in rows and
                                    not rows[(t, m)].get("error_occurred") else "0" for m in MODES)
                 + f" {rows[(t, MODES[0])]['oracle_share']:.4f}" for t in traces]
        blocks.append(f"$d{i} << EOD\n" + "\n".join(lines) + "\nEOD")
        cols = ", ".join(f"'' using {j + 2} title '{m}'" if j else f"$d{i} using 2:xtic(1) title '{m}'"
                         for j, m in enumerate(MODES))
        plots.append(f"set title '{dict(TOPOLOGIES)[topo]}'\n"
                     f"plot {cols}, '' using {len(MODES) + 2} title 'oracle' lc rgb '#aaaaaa'")
    script = "\n".join(blocks) + f"""
set terminal png size 1100,800
set output '{prefix}.png'
set multiplot layout 2,1
set style data histogram
set style histogram cluster gap 1
set style fill solid 0.8 border -1
set yrange [0:1]
set ylabel 'share of accesses served from the fast node'
set key outside right
""" + "\n".join(plots) + "\nunset multiplot\n"
    subprocess.run(["gnuplot"], input=script, text=True, check=True)


def main():
    runs = [(topo, load(path)) for (topo, _), path in zip(TOPOLOGIES, sys.argv[1:3])]
    prefix = sys.argv[3]
    text = "\n\n".join(table(rows, dict(TOPOLOGIES)[topo]) for topo, rows in runs)
    for (topo, title), path in zip(TOPOLOGIES, sys.argv[1:3]):
        rows = program_rows(path)
        if rows:
            text += "\n\n" + program_table(rows, title)
    with open(prefix + ".md", "w") as f:
        f.write(text + "\n")
    print(text)
    plot(runs, prefix)


if __name__ == "__main__":
    main()
