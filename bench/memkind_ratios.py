#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""memkind_ratios.py SICM.json[,SICM2.json...] [DEBIAN.json[,...]]: the table
of BENCHMARKS.md for bench_memkind's JSON: each memkind call's alloc+free
pair in libsicm's libmemkind and in Debian's memkind, as a ratio to
jemalloc's pair of the same shape in the same run (malloc for hbw_malloc
and memkind_malloc, calloc for hbw_calloc, posix_memalign for
hbw_posix_memalign).  With a second file, Debian's figures come from it,
each against that run's own jemalloc: the two libraries then ran in
processes of their own.  Several files of one library (comma-separated)
are runs of it in processes of their own: each ratio is taken within its
process, and the table gives the median of them (and their range), since
under an emulator one process's address layout can slow either peer."""
import statistics
import sys

from medians import load

PEER = {"hbw_malloc": "malloc", "hbw_calloc": "calloc", "hbw_posix_memalign": "posix_memalign"}


def runs(arg):
    return [load(path) for path in arg.split(",")]


def cell(runs_of_lib, name, peer_name):
    """(median ns, median ratio, (lowest, highest) ratio, skipped) over the runs."""
    ns, ratios, skipped = [], [], False
    for times, errors, _ in runs_of_lib:
        skipped |= name in errors
        v, j = times.get(name), times.get(peer_name)
        if v is not None and j:
            ns.append(v)
            ratios.append(v / j)
    if not ratios:
        return None, None, None, skipped
    return statistics.median(ns), statistics.median(ratios), (min(ratios), max(ratios)), skipped


def main():
    sicm = runs(sys.argv[1])
    debian = runs(sys.argv[2]) if len(sys.argv) > 2 else sicm
    several = len(sicm) > 1
    calls = ["hbw_malloc", "hbw_calloc", "hbw_posix_memalign"]
    calls += sorted({n.split("/")[0].replace("BM_sicm_", "") + "/" + n.split("/")[1]
                     for times, errors, _ in sicm for n in list(times) + list(errors)
                     if n.startswith("BM_sicm_memkind_malloc/")})
    head = "| call | size, threads | jemalloc ns | sicm ns | **sicm / jemalloc** |"
    rule = "|---|---|---|---|---|"
    if several:
        head += f" sicm / jemalloc, each of {len(sicm)} processes |"
        rule += "---|"
    out = [head + " debian / jemalloc |", rule + "---|"]
    worst = 0.0
    fmt = lambda v: "-" if v is None else f"{v:.1f}"
    for call in calls:
        peer = PEER.get(call, "malloc")
        for size in (64, 4096):
            for threads in (1, 2):
                suffix = f"/{size}/threads:{threads}"
                peer_name = f"BM_jemalloc_{peer}{suffix}"
                j = statistics.median([t[peer_name] for t, _, _ in sicm if peer_name in t] or [0]) or None
                s_ns, s_ratio, s_range, s_skip = cell(sicm, f"BM_sicm_{call}{suffix}", peer_name)
                _, d_ratio, _, d_skip = cell(debian, f"BM_debian_{call}{suffix}", peer_name)
                show = lambda r, skip: "n/a" if skip and r is None else "-" if r is None else f"{r:.2f}x"
                if s_ratio is not None:
                    worst = max(worst, s_ratio)
                label = f"{size} B" if size < 1024 else f"{size >> 10} KiB"
                row = (f"| {call.replace('memkind_malloc/', 'memkind_malloc ')} | {label}, {threads}"
                       f" | {fmt(j)} | {fmt(s_ns)} | **{show(s_ratio, s_skip)}** |")
                if several:
                    row += " - |" if s_range is None else f" {s_range[0]:.2f}-{s_range[1]:.2f}x |"
                out.append(row + f" {show(d_ratio, d_skip)} |")
    out.append("")
    out.append(f"Worst sicm / jemalloc: {worst:.2f}x (n/a: the kind has no memory on this machine).")
    print("\n".join(out))


if __name__ == "__main__":
    main()
