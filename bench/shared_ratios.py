#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""shared_ratios.py: turns the JSON of bench_shared into the table of
BENCHMARKS.md: libsicm's shared arena against Boost.Interprocess, each
ratio from medians of one run."""
import json
import re
import sys


def main():
    with open(sys.argv[1]) as f:
        data = json.load(f)
    times = {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        m = re.match(r"BM_shared_(\w+)/size:(\d+)/procs:(\d+)/live:(\d+)", b["name"])
        if m:
            times[(m[1], int(m[2]), int(m[3]), int(m[4]))] = b["real_time"]
    rows = ["| size | processes | live blocks | sicm ns | Boost ns | sicm / Boost |",
            "|---|---|---|---|---|---|"]
    for size, procs, live in sorted({k[1:] for k in times}, key=lambda k: (k[2], k[0], k[1])):
        s, b = times.get(("sicm", size, procs, live)), times.get(("boost", size, procs, live))
        fmt = lambda v: "-" if v is None else f"{v:.1f}"
        ratio = "-" if s is None or b is None else f"**{s / b:.2f}x**"
        rows.append(f"| {size} | {procs} | {live} | {fmt(s)} | {fmt(b)} | {ratio} |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
