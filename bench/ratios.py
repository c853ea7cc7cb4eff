#!/usr/bin/env python3
"""ratios.py: turns the JSON of bench_alloc and bench_alloc_glibc into the
ratio table of BENCHMARKS.md (each ratio from benchmarks of one run)."""
import json
import sys


def load(paths):
    times = {}
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        label = data["context"].get("process_malloc", "")
        for b in data["benchmarks"]:
            if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
                continue
            name = b["run_name"] if "run_name" in b else b["name"]
            name = name.replace("/real_time", "")
            if name.startswith("BM_pair_malloc"):
                name = name.replace("BM_pair_malloc", "BM_pair_malloc_" + label)
            times[name] = b["real_time"] if "real_time" in b else b["cpu_time"]
    return times


def main():
    t = load(sys.argv[1:])
    out = ["| size | threads | sicm ns | jemalloc malloc ns | sicm / jemalloc | glibc ns | memkind ns | lanl TCACHE_NONE / jemalloc | numa_alloc_onnode / jemalloc |",
           "|---|---|---|---|---|---|---|---|---|"]
    for size in (64, 4096):
        for threads in (1, 2):
            key = lambda fn: f"{fn}/{size}/threads:{threads}"
            s, j = t.get(key("BM_pair_sicm")), t.get(key("BM_pair_malloc_jemalloc"))
            g, m = t.get(key("BM_pair_malloc_glibc")), t.get(key("BM_pair_memkind"))
            lanl, numa = t.get(key("BM_pair_lanl_tcache_none")), t.get(key("BM_pair_numa_alloc_onnode"))
            fmt = lambda v: "-" if v is None else f"{v:.1f}"
            ratio = lambda a, b: "-" if a is None or b is None else f"{a / b:.2f}x"
            out.append(f"| {size} | {threads} | {fmt(s)} | {fmt(j)} | **{ratio(s, j)}** | {fmt(g)} | {fmt(m)} | {ratio(lanl, j)} | {ratio(numa, j)} |")
    out.append("")
    out.append("| live arenas | sicm_arena_lookup ns |")
    out.append("|---|---|")
    for n in (1, 10, 100, 1000):
        v = t.get(f"BM_lookup_sicm/{n}")
        out.append(f"| {n} | {'-' if v is None else f'{v:.2f}'} |")
    v = t.get("BM_lookup_jemalloc_mallctl")
    if v is not None:
        out.append(f"| jemalloc `arenas.lookup` (peer) | {v:.2f} |")
    print("\n".join(out))


if __name__ == "__main__":
    main()
