# SPDX-License-Identifier: BSD-3-Clause
"""check.py: the checks of NWChem's runs under libsicm-mpi (tests/nwchem).

  check.py energies PLAIN_OUT RUN_OUT NAME
      the SCF and MP2 energies of two NWChem outputs agree within 1e-10 Ha:
      NWChem's own runs differ in the last printed digits from one run to
      the next when the ranks' accumulates land in another order (benzene,
      plain, three runs on the host: 4e-12 Ha apart)
  check.py census NODE REPORT...
      SICM_MPI_REPORT's lines: every window and block freed with its
      resident pages on NODE alone, and at least one with pages
  check.py decisions STATS...
      SICM_STATS's reports: the placer's decisions on windows, by name"""
import json
import re
import sys


def energies(path):
    found = re.findall(r"Total (SCF|MP2) energy\s*=?\s*(-?\d+\.\d+)", open(path).read())
    return {kind: float(value) for kind, value in found}


def check_energies(plain_out, run_out, name):
    plain, run = energies(plain_out), energies(run_out)
    if sorted(plain) != ["MP2", "SCF"] or plain.keys() != run.keys():
        print(f"FAILED: {name}: energies missing (plain {plain}, {name} {run})")
        return False
    worst = max(abs(plain[k] - run[k]) for k in plain)
    ok = worst <= 1e-10
    print(("ok: " if ok else "FAILED: ") + f"{name}: SCF {run['SCF']:.12f}, MP2 {run['MP2']:.12f}, "
          f"within {worst:.1e} Ha of the plain run's (at most 1e-10)")
    return ok


def check_census(node, reports):
    freed = [json.loads(line) for path in reports for line in open(path) if line.strip()]
    wins = [f for f in freed if f["arena"].startswith("mpi:win#")]
    touched = [f for f in freed if f["resident"]]
    off = [f for f in touched if set(f["resident"]) != {node}]
    hosts = sorted({f["host"] for f in freed})
    total = sum(f["resident"].get(node, 0) for f in freed)
    print(f"  {len(wins)} windows and {len(freed) - len(wins)} blocks freed on {', '.join(hosts)}, "
          f"{len(touched)} with pages, {total >> 20} MiB on node {node} in all, "
          f"{len(off)} with pages elsewhere")
    for f in off[:5]:
        print(f"    {f['host']} rank {f['rank']}: {f['arena']}: {f['resident']}")
    ok = bool(wins) and bool(touched) and not off
    print(("ok: " if ok else "FAILED: ") + f"every window and block on node {node} when freed")
    return ok


def show_decisions(stats):
    decisions = [d for path in stats for line in open(path) if line.strip()
                 for d in json.loads(line).get("decisions", []) if d["name"].startswith("mpi:win#")]
    for d in decisions[:12]:
        print(f"    {d['name']}: node {d['from']} -> {d['to']}, error {d['error']}: {d['why']}")
    print(f"  placer: {len(decisions)} decisions on {len({d['name'] for d in decisions})} windows")
    return True


def main():
    what, args = sys.argv[1], sys.argv[2:]
    if what == "energies":
        ok = check_energies(*args)
    elif what == "census":
        ok = check_census(args[0], args[1:])
    else:
        ok = show_decisions(args)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
