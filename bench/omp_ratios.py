#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""omp_ratios.py: bench_omp's JSON as the table of BENCHMARKS.md — each
OpenMP allocator's omp_alloc+omp_free pair as a ratio to
omp_default_mem_alloc's pair of the same size and threads, same run."""
import sys

from medians import load


def main():
    times, _, context = load(sys.argv[1])
    found = context.get("high_bw_memory_found", "?")
    print(f"libomp found high-bandwidth memory: {found}")
    print()
    print("| size, threads | omp_default_mem_alloc ns | **high_bw / default** | large_cap / default |")
    print("|---|---|---|---|")
    for size in (64, 4096):
        for threads in (1, 2):
            k = f"/{size}/threads:{threads}"
            d = times.get("BM_omp_default_mem_alloc" + k)
            cell = lambda n: "-" if d is None or times.get(n + k) is None else f"{times[n + k] / d:.2f}x"
            label = f"{size} B" if size < 1024 else f"{size >> 10} KiB"
            print(f"| {label}, {threads} | {'-' if d is None else f'{d:.1f}'} | "
                  f"**{cell('BM_omp_high_bw_mem_alloc')}** | {cell('BM_omp_large_cap_mem_alloc')} |")


if __name__ == "__main__":
    main()
