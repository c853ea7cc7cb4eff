#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""preload_programs.py: whole programs from Debian's archive with and
without libsicm-preload.so (placement on DRAM), runs alternated so that the
machine's drift falls on both alike; prints the table of BENCHMARKS.md
(median wall time of each, and their ratio).  The programs: Debian's
python3 running a numpy workload (random-size arrays sorted, then
matrix products), and hpcc on one MPI rank (N=2000).  A program that is not
installed is left out.  Progress goes to stderr.

Usage: preload_programs.py PRELOAD_SO LIBDIR [RUNS]"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

NUMPY_WORK = """
import numpy as np
rng = np.random.default_rng(7)
acc = 0.0
for i in range(20000):
    n = int(rng.integers(16, 20000))
    a = rng.random(n)
    acc += float(np.sort(a)[n // 2])
for i in range(8):
    m = rng.random((700, 700))
    acc += float(np.linalg.norm(m @ m))
print(f"{acc:.6e}")
"""

HPCC_EXAMPLE = "/usr/share/doc/hpcc/examples/_hpccinf.txt"


def hpcc_input(directory):
    """Debian's example input with one problem of N=2000 on a 1x1 grid."""
    lines = open(HPCC_EXAMPLE).read().splitlines()
    lines[5] = "2000         Ns"
    lines[10] = "1            Ps"
    lines[11] = "1            Qs"
    with open(os.path.join(directory, "hpccinf.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def programs(directory):
    found = []
    python = "/usr/bin/python3"
    if subprocess.run([python, "-c", "import numpy"], capture_output=True).returncode == 0:
        script = os.path.join(directory, "numpy_work.py")
        with open(script, "w") as f:
            f.write(NUMPY_WORK)
        found.append(("python3 + numpy", [python, script], None))
    if shutil.which("hpcc") and os.path.exists(HPCC_EXAMPLE):
        hpcc_input(directory)
        found.append(("hpcc, 1 rank, N=2000", ["hpcc"], os.path.join(directory, "hpccoutf.txt")))
    return found


def run(command, env, directory, check_file):
    if check_file and os.path.exists(check_file):
        os.unlink(check_file)
    start = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=directory, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"preload_programs: {command[0]} failed ({done.returncode}): {done.stderr[-400:]}")
    output = open(check_file).read() if check_file else done.stdout
    if check_file and "Success=1" not in output:
        sys.exit(f"preload_programs: {command[0]} did not report Success=1")
    return seconds, done.stdout


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    preload, libdir = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    plain = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    plain.pop("LD_PRELOAD", None)
    preloaded = dict(plain, LD_PRELOAD=preload, SICM_PRELOAD="device=dram",
                     LD_LIBRARY_PATH=libdir + ":" + plain.get("LD_LIBRARY_PATH", ""))
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for name, command, check_file in programs(directory):
            times = {"without": [], "with": []}
            outputs = set()
            for i in range(runs):
                for label, env in (("without", plain), ("with", preloaded)):
                    seconds, out = run(command, env, directory, check_file)
                    times[label].append(seconds)
                    if check_file is None:
                        outputs.add(out)
                    print(f"{name}: run {i + 1} of {runs}, {label} the preload: {seconds:.2f} s",
                          file=sys.stderr, flush=True)
            if len(outputs) > 1:
                sys.exit(f"preload_programs: {name} printed different results with the preload")
            rows.append((name, times))
    print("| program | without s | with the preload s | with / without | runs (without; with) |")
    print("|---|---|---|---|---|")
    for name, times in rows:
        without, with_ = statistics.median(times["without"]), statistics.median(times["with"])
        each = ", ".join(f"{t:.2f}" for t in times["without"]) + "; " + \
            ", ".join(f"{t:.2f}" for t in times["with"])
        print(f"| {name} | {without:.2f} | {with_:.2f} | **{with_ / without:.3f}x** | {each} |")


if __name__ == "__main__":
    main()
