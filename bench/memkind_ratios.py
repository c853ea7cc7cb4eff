#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""memkind_ratios.py SICM.json [DEBIAN.json]: the table of BENCHMARKS.md for
bench_memkind's JSON: each memkind call's alloc+free pair in libsicm's
libmemkind and in Debian's memkind, as a ratio to jemalloc's pair of the
same shape in the same run (malloc for hbw_malloc and memkind_malloc,
calloc for hbw_calloc, posix_memalign for hbw_posix_memalign).  With a
second file, Debian's figures come from it, each against that run's own
jemalloc: the two libraries then ran in processes of their own."""
import sys

from medians import load

PEER = {"hbw_malloc": "malloc", "hbw_calloc": "calloc", "hbw_posix_memalign": "posix_memalign"}


def main():
    t, skipped, _ = load(sys.argv[1])
    td, skipped_d, _ = load(sys.argv[2]) if len(sys.argv) > 2 else (t, skipped, None)
    calls = ["hbw_malloc", "hbw_calloc", "hbw_posix_memalign"]
    calls += sorted({n.split("/")[0].replace("BM_sicm_", "") + "/" + n.split("/")[1]
                     for n in list(t) + list(skipped) if n.startswith("BM_sicm_memkind_malloc/")})
    out = ["| call | size, threads | jemalloc ns | sicm ns | **sicm / jemalloc** | debian / jemalloc |",
           "|---|---|---|---|---|---|"]
    worst = 0.0
    for call in calls:
        peer = PEER.get(call, "malloc")
        for size in (64, 4096):
            for threads in (1, 2):
                suffix = f"/{size}/threads:{threads}"
                j = t.get(f"BM_jemalloc_{peer}{suffix}")
                cell = {}
                for lib, tl, sk in (("sicm", t, skipped), ("debian", td, skipped_d)):
                    name = f"BM_{lib}_{call}{suffix}"
                    v, jl = tl.get(name), tl.get(f"BM_jemalloc_{peer}{suffix}")
                    cell[lib] = (v, "n/a" if name in sk else "-" if v is None or jl is None
                                 else f"{v / jl:.2f}x")
                if cell["sicm"][0] is not None and j:
                    worst = max(worst, cell["sicm"][0] / j)
                fmt = lambda v: "-" if v is None else f"{v:.1f}"
                label = f"{size} B" if size < 1024 else f"{size >> 10} KiB"
                out.append(f"| {call.replace('memkind_malloc/', 'memkind_malloc ')} | {label}, {threads}"
                           f" | {fmt(j)} | {fmt(cell['sicm'][0])} | **{cell['sicm'][1]}** | {cell['debian'][1]} |")
    out.append("")
    out.append(f"Worst sicm / jemalloc: {worst:.2f}x (n/a: the kind has no memory on this machine).")
    print("\n".join(out))


if __name__ == "__main__":
    main()
