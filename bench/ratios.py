#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""ratios.py: turns the JSON of bench_alloc into the
tables of BENCHMARKS.md, each ratio from benchmarks of one run: the
alloc+free pair by size, random sizes among 10,000 live blocks, blocks
handed from one thread to another, two arenas alternated, and pointer
lookups."""
import json
import sys


def load(path):
    times = {}
    with open(path) as f:
        data = json.load(f)
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = (b["run_name"] if "run_name" in b else b["name"]).replace("/real_time", "")
        times[name] = b["real_time"] * {"ns": 1, "us": 1e3, "ms": 1e6}[b.get("time_unit", "ns")]
    return times


PEERS = ["sicm_call", "tcmalloc", "mimalloc", "glibc", "memkind"]


def row(t, bench, suffix, label):
    s, j = t.get(f"{bench}_sicm{suffix}"), t.get(f"{bench}_malloc{suffix}")
    fmt = lambda v: "-" if v is None else (f"{v:.1f}" if v < 1000 else f"{v:,.0f}")
    ratio = lambda a: "-" if a is None or j is None else f"{a / j:.2f}x"
    cells = [label, fmt(s), fmt(j), f"**{ratio(s)}**"] + [ratio(t.get(f"{bench}_{p}{suffix}")) for p in PEERS]
    return "| " + " | ".join(cells) + " |"


def main():
    t = load(sys.argv[1])
    head = ("| {} | sicm ns | jemalloc malloc ns | sicm / jemalloc | "
            + " | ".join(p + " / jemalloc" for p in PEERS) + " |")
    rule = "|" + "---|" * (4 + len(PEERS))
    out = [head.format("size, threads"), rule]
    for size in (16, 64, 1024, 4096, 32 << 10, 256 << 10, 1 << 20, 4 << 20, 8 << 20, 64 << 20):
        for threads in (1, 2):
            label = f"{size} B" if size < 1024 else f"{size >> 10} KiB" if size < 1 << 20 else f"{size >> 20} MiB"
            out.append(row(t, "BM_pair", f"/{size}/threads:{threads}", f"{label}, {threads}"))
    out += ["", head.format("pattern, threads"), rule]
    out.append(row(t, "BM_random", "/threads:1", "random 16 B-4 KiB, 10,000 live, 1"))
    out.append(row(t, "BM_random", "/threads:2", "random 16 B-4 KiB, 10,000 live, 2"))
    out.append(row(t, "BM_handoff", "/threads:2", "64 B allocated by one thread, freed by another"))
    out += ["", "| two arenas alternated, threads | sicm ns per pair | sicm_call ns | jemalloc, a tcache per arena, ns "
            "| sicm / jemalloc | sicm_call / jemalloc |", "|---|---|---|---|---|---|"]
    for threads in (1, 2):
        # One iteration is a pair in each arena.
        s, c, j = (t.get(f"BM_alternate_{n}/threads:{threads}") for n in ("sicm_inline", "sicm_call", "jemalloc_tcaches"))
        per = lambda v: "-" if v is None else f"{v / 2:.2f}"
        ratio = lambda a: "-" if a is None or j is None else f"{a / j:.2f}x"
        out.append(f"| 64 B, {threads} | {per(s)} | {per(c)} | {per(j)} | **{ratio(s)}** | **{ratio(c)}** |")
    out += ["", "| live arenas | sicm_arena_lookup ns |", "|---|---|"]
    for n in (1, 10, 100, 1000):
        v = t.get(f"BM_lookup_sicm/{n}")
        out.append(f"| {n} | {'-' if v is None else f'{v:.2f}'} |")
    v = t.get("BM_lookup_jemalloc_mallctl")
    if v is not None:
        out.append(f"| jemalloc `arenas.lookup` (peer) | {v:.2f} |")
    print("\n".join(out))


if __name__ == "__main__":
    main()
