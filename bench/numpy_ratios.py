# SPDX-License-Identifier: BSD-3-Clause
"""numpy_ratios.py FILE.json: bench_numpy's medians as ratios, per array
size, of the time to make and free numpy arrays (np.empty, np.zeros) in an
arena and in per-line arenas to the time under numpy's own allocator, all
from the same run; and per-line to one arena above the per-line threshold
(64 KiB), where per-line arenas take the arrays.  Below 1 is faster."""
import sys

from medians import load


def size_name(n):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return "%d %s" % (n >> shift, unit)
    return "%d B" % n


def main(path):
    times, errors, _ = load(path)
    if errors:
        print("errors: " + ", ".join(sorted(errors)))
    sizes = sorted({int(name.rsplit("/", 1)[1]) for name in times})
    print("| size | empty: arena | empty: per-line | zeros: arena | zeros: per-line | per-line / arena (empty, zeros) |")
    print("|---|---|---|---|---|---|")
    for n in sizes:
        t = {k: times.get("BM_%s/%d" % (k, n)) for k in
             ("empty_numpy", "empty_arena", "empty_sites", "zeros_numpy", "zeros_arena", "zeros_sites")}
        r = lambda a, b: "%.2f" % (t[a] / t[b]) if t[a] and t[b] else "-"
        grouped = "%s, %s" % (r("empty_sites", "empty_arena"), r("zeros_sites", "zeros_arena")) \
            if n >= 64 << 10 else "(numpy's allocator below the threshold)"
        print("| %s | %s | %s | %s | %s | %s |" % (size_name(n), r("empty_arena", "empty_numpy"),
              r("empty_sites", "empty_numpy"), r("zeros_arena", "zeros_numpy"),
              r("zeros_sites", "zeros_numpy"), grouped))


if __name__ == "__main__":
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    main(sys.argv[1])
