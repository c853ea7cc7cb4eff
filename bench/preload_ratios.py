#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""preload_ratios.py: the table of BENCHMARKS.md for bench_preload — the
interposed malloc/free below the threshold against glibc's own, one run of
the default (small=sicm) and, when a second file is given, one of
small=process.  Usage: preload_ratios.py SICM.json [PROCESS.json]"""
import json
import sys


def medians(path):
    times = {}
    for b in json.load(open(path))["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = (b.get("run_name") or b["name"]).replace("/real_time", "")
        times[name] = b["real_time"]
    return times


def main():
    times = medians(sys.argv[1])
    process = medians(sys.argv[2]) if len(sys.argv) > 2 else {}
    extra = " | small=process / its glibc" if process else ""
    print(f"| benchmark, threads | preload ns | glibc ns | preload / glibc{extra} |")
    print("|---|---|---|---|" + ("---|" if process else ""))
    for name in sorted(n for n in times if "<Preload>" in n):
        peer_name = name.replace("<Preload>", "<Libc>")
        peer = times.get(peer_name)
        if peer is None:
            continue
        label = name.replace("BM_", "").replace("<Preload>", "")
        row = f"| {label} | {times[name]:.1f} | {peer:.1f} | **{times[name] / peer:.2f}x**"
        if process:
            both = name in process and peer_name in process
            row += f" | {process[name] / process[peer_name]:.2f}x" if both else " | -"
        print(row + " |")


if __name__ == "__main__":
    main()
