#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""pair_instructions.py: instructions per 64-byte alloc+free pair of each
allocator, from callgrind's run of `bench_alloc --count-pairs`: each
CountPairs<A> makes 100,000 pairs, and its inclusive count divided by that
is the answer, loop included.  Callgrind lists a function once per source
file its code came from (the header's inline functions apart); the entry
of the function's own file holds the whole inclusive count."""
import re
import subprocess
import sys

PAIRS = 100000
NAMES = {"Sicm": "sicm (inline)", "SicmCall": "sicm (called)", "Malloc": "jemalloc malloc",
         "Memkind": "memkind", "Peer<0>": "tcmalloc", "Peer<1>": "mimalloc", "Peer<2>": "glibc"}

out = subprocess.run(["callgrind_annotate", "--inclusive=yes", sys.argv[1]], check=True,
                     capture_output=True, text=True).stdout
totals = {}
for line in out.splitlines():
    m = re.match(r"\s*([\d,]+) .*CountPairs<\(anonymous namespace\)::([\w<>]+)\s*>\(\)", line)
    if m:
        totals[m[2]] = max(totals.get(m[2], 0), int(m[1].replace(",", "")))
print("| allocator | instructions per pair |")
print("|---|---|")
for key, total in sorted(totals.items(), key=lambda kv: kv[1]):
    print(f"| {NAMES.get(key, key)} | {total / PAIRS:.0f} |")
