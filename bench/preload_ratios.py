#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""preload_ratios.py: the table of BENCHMARKS.md for bench_preload — the
interposed malloc/free below the threshold against glibc's own, one run."""
import json
import sys


def main():
    times = {}
    for b in json.load(open(sys.argv[1]))["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = (b.get("run_name") or b["name"]).replace("/real_time", "")
        times[name] = b["real_time"]
    print("| benchmark, threads | preload ns | glibc ns | preload / glibc |")
    print("|---|---|---|---|")
    for name in sorted(n for n in times if "<Preload>" in n):
        peer = times.get(name.replace("<Preload>", "<Libc>"))
        if peer is None:
            continue
        label = name.replace("BM_", "").replace("<Preload>", "")
        print(f"| {label} | {times[name]:.1f} | {peer:.1f} | **{times[name] / peer:.2f}x** |")


if __name__ == "__main__":
    main()
