#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# cluster.sh (runs on node 0 of tests/guest/sicm-cluster, 2 nodes of the
# 4-node guest): for each MPI libsicm-mpi was built for, its own launcher
# (Open MPI's mpirun, MPICH's mpiexec) starts tests/mpi/mpi_cluster_check
# in 4 ranks, 2 per node, over ssh between the nodes; every rank writes its
# SICM_STATS line to its node's own file.  Then the nodes' files are
# gathered and tools/sicm-stats's report of the job must agree with the
# figures each rank printed: its migrations, its halo arena's bytes, per
# rank, per node and per arena name, and the halos resident on each node's
# HBM.  Before it, tests/mpi/mpi_placer_check puts into windows across
# the nodes under the placer (placer_job).  (MPICH's own hang in
# MPI_Finalize is told apart: see cluster_job.)
set -u
b=${SICM_TOP_BUILDDIR:?}
src=${SICM_TOP_SRCDIR:?}
ssh=${SICM_CLUSTER_SSH:?run me in tests/guest/sicm-cluster}
. "$src/tests/mpi/mpi_env.sh"
flavours=$(mpi_flavours) || exit $?
unset HYDRA_LAUNCHER OMPI_MCA_plm_rsh_agent
hosts=$(echo "$SICM_CLUSTER_HOSTS" | tr , ' ')
slots=$(for h in $hosts; do printf '%s:2,' "$h"; done | sed 's/,$//')
work=$(mktemp -d)
rc=0
# cluster_job FLAVOUR PROGRAM [ARGS...]: 4 ranks of PROGRAM-FLAVOUR, 2 per
# node, output in $work/PROGRAM-FLAVOUR.out; job_rc its exit, and
# finalize_hang=yes when MPICH hung in MPI_Finalize after the program
# printed its "PROGRAM: N failed" line.
cluster_job() {
  job_f=$1 job_program=$2
  shift 2
  job_out=$work/$job_program-$job_f.out
  finalize_hang=
  start=$(date +%s)
  case $job_f in
    openmpi)
      timeout 600 "$MPI_OPENMPI_RUN" --allow-run-as-root --host "$slots" -np 4 --map-by core --bind-to core \
        --mca plm_rsh_agent "$ssh" --mca btl self,vader,tcp \
        --mca btl_tcp_if_include 169.254.0.0/16 --mca oob_tcp_if_include 169.254.0.0/16 \
        -x SICM_TOPOLOGY_DIR -x SICM_STATS -x ASAN_OPTIONS -x SICM_MPI_INFO_WIN_ALLOCATE -x SICM_AUTOPLACE \
        "$b/tests/mpi/$job_program-openmpi" "$@" > "$job_out" 2>&1 ;;
    mpich)
      # MPICH 4.0's ch4:ucx over TCP hangs in MPI_Finalize in about half
      # the jobs that used a window across nodes, libsicm-mpi or not (a
      # plain MPI_Win_allocate, MPI_Put, MPI_Win_free, MPI_Finalize does
      # too).  The checks all run before MPI_Finalize: once rank 0 has
      # printed their sum, a job still running 30 s later is that hang.
      timeout 600 "$MPI_MPICH_RUN" -launcher ssh -launcher-exec "$ssh" -hosts "$slots" -n 4 \
        -bind-to core "$b/tests/mpi/$job_program-mpich" "$@" > "$job_out" 2>&1 &
      job=$!
      waited=0
      while kill -0 $job 2>/dev/null; do
        grep -q "^$job_program: " "$job_out" && waited=$((waited + 1))
        [ $waited -ge 30 ] && break
        sleep 1
      done
      if kill -0 $job 2>/dev/null; then
        kill -TERM $job
        wait $job
        finalize_hang=yes
        (exit 0)
      else
        wait $job
      fi ;;
  esac
  job_rc=$?
  cat "$job_out"
  echo "$job_f: $job_program took $(( $(date +%s) - start )) s, exit $job_rc"
  if [ "$finalize_hang" = yes ]; then
    if grep -q "^$job_program: 0 failed$" "$job_out"; then
      echo "KNOWN: $job_f hung in MPI_Finalize after every check passed (MPICH 4.0 ch4:ucx, see above)"
      job_rc=0
    else
      job_rc=124
    fi
  fi
}
# placer_job FLAVOUR: tests/mpi/mpi_placer_check across the nodes, each
# rank's windows arenas of their own on DRAM and the placer on: a rank's
# partner is on the other node, so the puts that must make its window hot
# reach it over TCP, carried out by the target rank's MPI library.
placer_job() {
  echo "== $1: mpi_placer_check-$1, 4 ranks on $slots, partners on the other node"
  run=/tmp/sicm-placer-$1
  for h in $hosts; do
    $ssh "$h" "rm -rf $run && mkdir -m 700 $run" || { echo "FAIL: ssh $h"; exit 1; }
  done
  export SICM_TOPOLOGY_DIR=$run SICM_STATS=$run/stats.json
  export SICM_MPI_INFO_WIN_ALLOCATE="sicm_memory=dram;sicm_arena=@call"
  export SICM_AUTOPLACE="fast=2,budget=24M,interval=500ms,cpu=100%"
  cluster_job "$1" mpi_placer_check 180
  unset SICM_MPI_INFO_WIN_ALLOCATE SICM_AUTOPLACE
  if [ $job_rc -ne 0 ]; then echo "FAIL: $1 placer job"; rc=1; return; fi
  if [ "$finalize_hang" = yes ]; then echo "  (no report at exit to check)"; return; fi
  for h in $hosts; do $ssh "$h" cat "$run/stats.json"; done > "$work/placer-$1.json"
  "${SICM_PYTHON:-python3}" "$src/tests/mpi/placer_report.py" "$work/placer-$1.json" 4 ||
    { echo "FAIL: $1 placer report"; rc=1; }
}
for f in $flavours; do
  placer_job "$f"
  echo "== $f: mpi_cluster_check-$f, 4 ranks on $slots"
  run=/tmp/sicm-cluster-$f   # each node's own /tmp: its own topology and statistics
  for h in $hosts; do
    $ssh "$h" "rm -rf $run && mkdir -m 700 $run" || { echo "FAIL: ssh $h"; exit 1; }
  done
  export SICM_TOPOLOGY_DIR=$run SICM_STATS=$run/stats.json
  cluster_job "$f" mpi_cluster_check
  if [ "$finalize_hang" = yes ] && [ $job_rc -eq 0 ]; then
    echo "  (no report at exit to compare)"
    continue
  fi
  if [ $job_rc -ne 0 ]; then echo "FAIL: $f job"; rc=1; continue; fi
  for h in $hosts; do $ssh "$h" cat "$run/stats.json"; done > "$work/$f.json"
  "${SICM_PYTHON:-python3}" "$src/tools/sicm-stats" "$work/$f.json" || { echo "FAIL: $f sicm-stats"; rc=1; }
  "${SICM_PYTHON:-python3}" "$src/tools/sicm-stats" --quiet --json "$work/$f.json" > "$work/$f.summary" &&
  "${SICM_PYTHON:-python3}" - "$job_out" "$work/$f.summary" <<'PY' || { echo "FAIL: $f report"; rc=1; }
import json, sys
figures = [json.loads(l.split("figures ", 1)[1]) for l in open(sys.argv[1]) if l.startswith("figures ")]
s = json.load(open(sys.argv[2]))
failed = 0
def check(ok, what):
    global failed
    print(("ok: " if ok else "FAILED: ") + what)
    failed += not ok
check(len(figures) == 4 and s["job"]["ranks"] == 4 and len(s["nodes"]) == 2,
      "the report has the 4 ranks of 2 nodes")
by_rank = {(r["host"], r["rank"]): r for r in s["ranks"]}
for f in figures:
    r = by_rank.get((f["host"], f["rank"]))
    check(r is not None and r["migrations"] == f["migrations"],
          "rank %d on %s: %d migrations, as it counted them" % (f["rank"], f["host"], f["migrations"]))
for host, node in sorted(s["nodes"].items()):
    mine = [f for f in figures if f["host"] == host]
    check(node["ranks"] == len(mine) == 2 and node["migrations"] == sum(f["migrations"] for f in mine),
          "node %s: 2 ranks, migrations their sum" % host)
    hbm = [d for d in s["devices"] if d["host"] == host and d["node"] == 2]
    halos = sum(f["halo_held"] for f in mine)
    check(len(hbm) == 1 and hbm[0]["kind"] == "hbm" and hbm[0]["resident"] >= 2 * 2 * 2**20 and
          hbm[0]["held"] >= halos,
          "node %s: its HBM (node 2) holds both ranks' halos (%d bytes held)" % (host, halos))
halo = s["arena_names"].get("halo", {})
check(halo.get("ranks") == 4 and halo.get("held") == sum(f["halo_held"] for f in figures) and
      halo.get("peak_held", 0) >= halo.get("held", 1),
      "arena name halo: in 4 ranks, held as the ranks saw it, peak at least that")
sys.exit(1 if failed else 0)
PY
done
rm -rf "$work"
exit $rc
