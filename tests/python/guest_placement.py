# SPDX-License-Identifier: BSD-3-Clause
"""guest_placement.py: the Python package where placement is real — in the
multi-NUMA guest (tests/guest, topology hmat4: DRAM on nodes 0 and 1, HBM
on node 2, capacity memory on node 3).  Residency is what move_pages(2)
reports (sicm.where):
  - arrays of 64 B to 16 MiB made in `with sicm.Arena(hbm)` are on HBM;
  - arena.move(dram) puts every page of them on node 1, data intact;
  - an Arena([dram0, hbm], placement="weighted") spreads its pages by the
    system's weights (3:1 set here where the kernel has weighted
    interleave, 6.9 and later; evenly before), and a move keeps them;
  - with sicm.autoplace(sites=True) and a budget that fits one line's
    arrays, a script with a hot line and a cold line ends with the hot
    line's arrays on HBM and the cold line's off it."""
import sys
import time

import numpy as np

import sicm

failures = 0


def check(what, ok, detail=""):
    global failures
    print("%s: %s %s" % ("PASS" if ok else "FAIL", what, detail), flush=True)
    failures += not ok


def only_on(array, node):
    pages = sicm.where(array)
    return set(pages) == {node}, pages


hbm = sicm.best("bandwidth")
if hbm.kind != "hbm":
    print("SKIP: no HBM device (%r): not the hmat4 guest" % hbm)
    sys.exit(77)
dram = sicm.device(1)

arena = sicm.Arena(hbm, name="py-hbm")
with arena:
    arrays = [np.full(n // 8 or 1, float(i + 1)) for i, n in enumerate(8 << k for k in range(22))]
sums = [a.sum() for a in arrays]
for a in arrays:
    ok, pages = only_on(a, hbm.node)
    check("%d-byte array on HBM node %d" % (a.nbytes, hbm.node), ok, pages)
check("arena residency on HBM only", set(arena.residency()) == {hbm.node}, arena.residency())

arena.move(dram)
for a in arrays:
    ok, pages = only_on(a, dram.node)
    check("%d-byte array moved to node %d" % (a.nbytes, dram.node), ok, pages)
check("data intact after the move", [a.sum() for a in arrays] == sums)
check("the arena is bound to node 1 now", arena.device == dram, arena.device)

# Weighted interleave: 3:1 where the kernel has it (root sets the weights).
weights_dir = "/sys/kernel/mm/mempolicy/weighted_interleave/"
nodes = (0, hbm.node, dram.node, 3)
saved = {}
try:
    for node, weight in zip(nodes, (3, 1, 3, 1)):
        with open(weights_dir + "node%d" % node) as f:
            saved[node] = f.read().strip()
        with open(weights_dir + "node%d" % node, "w") as f:
            f.write(str(weight))
except OSError:
    pass  # no weighted interleave here (Linux 6.1): the arena spreads evenly
try:
    pair = [sicm.device(0), hbm]
    weights = sicm.interleave_weights(pair)
    check("the weights are the system's", weights == ([3, 1] if saved else [1, 1]), weights)
    share = weights[0] / sum(weights)
    spread = sicm.Arena(pair, placement="weighted", name="py-weighted")
    with spread:
        big = np.arange((64 << 20) // 8, dtype=np.float64)
    total = big.sum()

    def shares(array, fast, slow):
        pages = sicm.where(array)
        n = sum(pages.values())
        return pages.get(fast, 0) / n, pages.get(slow, 0) / n, pages

    first, second, pages = shares(big, 0, hbm.node)
    check("weighted: %.0f%% on node 0, the rest on HBM" % (100 * share),
          abs(first - share) <= 0.02 and abs(second - (1 - share)) <= 0.02, pages)
    spread.move([dram, sicm.device(3)])
    first, second, pages = shares(big, dram.node, 3)
    check("a move keeps the weights (nodes %d and 3)" % dram.node,
          abs(first - share) <= 0.02 and abs(second - (1 - share)) <= 0.02, pages)
    check("data intact after the weighted move", big.sum() == total)
finally:
    for node, weight in saved.items():
        with open(weights_dir + "node%d" % node, "w") as f:
            f.write(weight)

# Per-line arenas under the placer: two lines make 32 MiB each, the budget
# fits one, only the first is read.
size = 32 << 20
placer = sicm.autoplace(fast=hbm, budget=48 << 20, interval=0.2, sites=True, threshold=1 << 20,
                        cpu=1.0)


def make_hot():
    return np.ones(size // 8)


def make_cold():
    return np.ones(size // 8)


hot = make_hot()
cold = make_cold()
deadline = time.monotonic() + 240
moved_at = None
rounds = 0
while time.monotonic() < deadline:
    hot.sum()
    rounds += 1
    if only_on(hot, hbm.node)[0]:
        moved_at = rounds
        break
placer.stop()
names = sorted(a.name for a in placer.sites.arenas)
check("one arena per line, named by it", len(names) == 2 and all(n.startswith("site:guest_placement.py:")
                                                                 for n in names), names)
check("the hot line's arrays on HBM", only_on(hot, hbm.node)[0], "%s after %s reads" % (sicm.where(hot), moved_at))
check("the cold line's arrays off HBM", hbm.node not in sicm.where(cold), sicm.where(cold))
check("data intact", hot.sum() == size // 8 and cold.sum() == size // 8)
print("guest_placement: %d failed" % failures)
sys.exit(1 if failures else 0)
