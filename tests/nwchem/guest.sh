#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# guest.sh (runs inside the 4-node guest): Debian's NWChem (nwchem-openmpi,
# over Global Arrays and ARMCI-MPI), unmodified, 2 ranks, a water molecule:
# SCF then MP2.  Three runs: plain; under libsicm-mpi with every window and
# block of memory an arena of its own on HBM (node 2), where SICM_MPI_REPORT
# must show every window arena's pages on node 2 when it was freed; and with
# the windows on DRAM and the placer on, whose decisions SICM_STATS names
# per window.  The energies must be the plain run's, within what NWChem's
# own runs differ by.
set -u
b=${SICM_TOP_BUILDDIR:?}
src=${SICM_TOP_SRCDIR:-$b}
. "$src/tests/mpi/mpi_env.sh"
case " $(mpi_flavours) " in *" openmpi "*) ;; *) echo "SKIP: libsicm-mpi-openmpi not built"; exit 77 ;; esac
command -v nwchem.openmpi > /dev/null || { echo "SKIP: nwchem-openmpi is not installed"; exit 77; }
ip link set lo up 2> /dev/null || true
hostname sicm-guest 2> /dev/null || true
work=$(mktemp -d)
cat > "$work/h2o.nw" <<'NW'
start h2o
title "water: SCF, then MP2"
memory total 128 mb
geometry units angstrom
  O  0.0000  0.0000  0.1173
  H  0.0000  0.7572 -0.4692
  H  0.0000 -0.7572 -0.4692
end
basis
  * library cc-pvdz
end
scf
  thresh 1e-8
end
task scf energy
task mp2 energy
NW
rc=0
nwchem() { # nwchem NAME [VAR=VALUE...]: one run in its own directory
  name=$1
  shift
  mkdir "$work/$name"
  start=$(date +%s)
  (cd "$work/$name" && env "$@" LD_LIBRARY_PATH="$b/src/.libs" timeout 900 "$MPI_OPENMPI_RUN" \
    --allow-run-as-root --oversubscribe -np 2 nwchem.openmpi "$work/h2o.nw" > out 2>&1)
  run_rc=$?
  grep -E 'Total (SCF|MP2) energy' "$work/$name/out" | sed 's/^ */    /' | sort -u > "$work/$name/energies"
  echo "  $name: exit $run_rc, $(( $(date +%s) - start )) s"
  cat "$work/$name/energies"
  [ $run_rc -eq 0 ] && [ "$(wc -l < "$work/$name/energies")" -eq 2 ] ||
    { echo "FAIL: $name"; tail -20 "$work/$name/out"; rc=1; }
}
sicm_mpi=$b/src/mpi/.libs/libsicm-mpi-openmpi.so
nwchem plain GA_PLAIN=1
nwchem hbm LD_PRELOAD="$sicm_mpi" SICM_MPI_INFO="sicm_memory=hbm;sicm_arena=@call" \
  SICM_MPI_REPORT="$work/hbm.json"
nwchem placer LD_PRELOAD="$sicm_mpi" SICM_MPI_INFO_WIN_ALLOCATE="sicm_memory=dram;sicm_arena=@call" \
  SICM_AUTOPLACE="fast=2,interval=200ms,cpu=100%" SICM_STATS="$work/placer.json"
# NWChem's own runs differ in the last printed digits from one run to the
# next when the ranks' accumulates land in another order (benzene, plain,
# three runs: 4e-12 Ha apart), so the energies must agree within 1e-10 Ha.
for run in hbm placer; do
  "${SICM_PYTHON:-python3}" - "$work/plain/energies" "$work/$run/energies" "$run" <<'PY' || rc=1
import sys
def energies(path):
    return {l.split("energy")[0].strip(): float(l.split()[-1]) for l in open(path)}
plain, run = energies(sys.argv[1]), energies(sys.argv[2])
worst = max(abs(plain[k] - run[k]) for k in plain) if plain.keys() == run.keys() else float("inf")
ok = worst <= 1e-10
print(("ok: " if ok else "FAILED: ") + f"{sys.argv[3]}: SCF and MP2 energies within {worst:.1e} Ha "
      "of the plain run's (at most 1e-10)")
sys.exit(0 if ok else 1)
PY
done
"${SICM_PYTHON:-python3}" - "$work/hbm.json" "$work/placer.json" <<'PY' || rc=1
import json, sys
freed = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
wins = [f for f in freed if f["arena"].startswith("mpi:win#")]
touched = [f for f in freed if f["resident"]]
off = [f for f in touched if set(f["resident"]) != {"2"}]
on2 = sum(f["resident"].get("2", 0) for f in freed)
print(f"  hbm: {len(wins)} windows and {len(freed) - len(wins)} blocks freed, {len(touched)} with pages, "
      f"{on2 >> 20} MiB on node 2 in all, {len(off)} with pages elsewhere")
ok = len(wins) > 0 and len(touched) > 0 and not off
print(("ok: " if ok else "FAILED: ") + "every global array's window and every block on node 2 when freed")
decisions = [d for line in open(sys.argv[2]) if line.strip()
             for d in json.loads(line).get("decisions", []) if d["name"].startswith("mpi:win#")]
for d in decisions[:12]:
    print(f"    {d['name']}: node {d['from']} -> {d['to']}, error {d['error']}: {d['why']}")
print(f"  placer: {len(decisions)} decisions on windows, {len({d['name'] for d in decisions})} windows")
sys.exit(0 if ok else 1)
PY
rm -rf "$work"
exit $rc
