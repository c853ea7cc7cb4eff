#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""nwchem_ratios.py: Debian's NWChem (nwchem-openmpi), unmodified, 2 ranks
on this node, benzene SCF then MP2 (cc-pVDZ), run as its users run it and
in four other ways, the runs alternated so that the machine's drift falls
on all alike:
  plain         as installed
  preload       LD_PRELOAD=libsicm-mpi, no default: every call passed on
  windows       every window on DRAM, each rank's part an arena of its
                own, with SICM_MPI_INFO_WIN_ALLOCATE=
                sicm_memory=dram;sicm_arena=@call (the MPI library's own
                windows, libsicm-mpi's default)
  arena_windows the same with sicm_window=arena: windows of
                MPI_Win_create over arenas (as under the placer)
  win_create    no libsicm; ARMCI-MPI told to make its windows with
                MPI_Win_create (ARMCI_USE_WIN_ALLOCATE=0), the flavour
                of arena_windows
Prints the table of BENCHMARKS.md: the median wall time of each over RUNS
rounds and its ratio to plain, and each way's energies.  Progress goes to
stderr.

Usage: nwchem_ratios.py LIBSICM_MPI_SO LIBDIR [RUNS]"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BENZENE = """start c6h6
title "benzene: SCF, then MP2"
memory total 400 mb
geometry units angstrom noautosym
  C   0.000000  1.396792  0.000000
  C   1.209657  0.698396  0.000000
  C   1.209657 -0.698396  0.000000
  C   0.000000 -1.396792  0.000000
  C  -1.209657 -0.698396  0.000000
  C  -1.209657  0.698396  0.000000
  H   0.000000  2.484212  0.000000
  H   2.151390  1.242106  0.000000
  H   2.151390 -1.242106  0.000000
  H   0.000000 -2.484212  0.000000
  H  -2.151390 -1.242106  0.000000
  H  -2.151390  1.242106  0.000000
end
basis
  * library cc-pvdz
end
scf
  thresh 1e-8
end
task scf energy
task mp2 energy
"""


def ways(preload_so, libdir):
    hinted = {"LD_PRELOAD": preload_so, "LD_LIBRARY_PATH": libdir}
    return {
        "plain": {},
        "preload": dict(hinted),
        "windows": dict(hinted, SICM_MPI_INFO_WIN_ALLOCATE="sicm_memory=dram;sicm_arena=@call"),
        "arena_windows": dict(
            hinted,
            SICM_MPI_INFO_WIN_ALLOCATE="sicm_memory=dram;sicm_arena=@call;sicm_window=arena",
        ),
        "win_create": {"ARMCI_USE_WIN_ALLOCATE": "0"},
    }


def run(directory, extra):
    env = dict(os.environ, **extra)
    start = time.monotonic()
    out = subprocess.run(
        [
            "mpirun.openmpi",
            "--allow-run-as-root",
            "--oversubscribe",
            "-np",
            "2",
            "nwchem.openmpi",
            "c6h6.nw",
        ],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.monotonic() - start
    if out.returncode != 0:
        sys.exit(f"nwchem failed ({extra}):\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    energies = sorted(set(re.findall(r"Total (?:SCF|MP2) energy\s*=?\s*(-?\d+\.\d+)", out.stdout)))
    return seconds, energies


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    if shutil.which("nwchem.openmpi") is None or shutil.which("mpirun.openmpi") is None:
        sys.exit("nwchem_ratios.py: needs nwchem-openmpi (apt-get install nwchem-openmpi)")
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    # The runs start in a directory of their own: a relative path would
    # preload nothing there, and measure the plain run five times.
    table = ways(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]))
    times = {w: [] for w in table}
    energies = {w: set() for w in table}
    with tempfile.TemporaryDirectory() as directory:
        with open(os.path.join(directory, "c6h6.nw"), "w") as f:
            f.write(BENZENE)
        for r in range(rounds):
            for w, extra in table.items():
                seconds, e = run(directory, extra)
                times[w].append(seconds)
                energies[w].update(e)
                print(f"round {r + 1}/{rounds}: {w} {seconds:.2f} s", file=sys.stderr, flush=True)
    plain = statistics.median(times["plain"])
    print(
        f"NWChem 7.0.2 (nwchem-openmpi), benzene SCF + MP2 cc-pVDZ, 2 ranks, "
        f"median of {rounds} alternated rounds\n"
    )
    print("| way | median wall (s) | ratio to plain | energies (Ha) |")
    print("|---|---|---|---|")
    for w in table:
        m = statistics.median(times[w])
        print(f"| {w} | {m:.2f} | {m / plain:.3f} | {', '.join(sorted(energies[w]))} |")


if __name__ == "__main__":
    main()
