#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# tiering.sh PREFIX [PRELOAD] (in the multi-NUMA guest, as root, from the
# build tree): bench_tiering once per trace and mode, each run in a
# process of its own, so that no run inherits what NUMA balancing learnt
# of the process in another (its scan period); PREFIX-TRACE-MODE.json
# each.  Then, given the preload and where Debian's hpcc is installed,
# hpcc (one rank, N=2000) under tiering_program, each mode once in each of
# three rounds: PREFIX-program.jsonl, a line per run, the placer's
# SICM_STATS reports in PREFIX-hpcc/.
# SICM_TIERING_TRACES, SICM_TIERING_MODES_RUN, SICM_TIERING_PROGRAM_MODES:
# the traces and modes to run (default: all); SICM_TIERING_PROGRAM_ROUNDS
# (default 3); SICM_TIERING_PROGRAM_ROUND: the first round's number, and
# when set, the runs are added to what PREFIX-program.jsonl and
# PREFIX-hpcc/ hold (a boot per run: bench.am).
set -u
prefix=${1:?prefix}
preload=${2:-}
for trace in ${SICM_TIERING_TRACES-phased skewed shifting equal}; do
  for mode in ${SICM_TIERING_MODES_RUN:-none placer placer-1%cpu placer-1%cpu-thp balancing damon \
      placer+balancing placer+damon}; do
    SICM_TIERING_MODES=$mode bench/bench_tiering --benchmark_filter="^Tiering/$trace/" \
      --benchmark_out_format=json --benchmark_out="$prefix-$trace-$mode.json" 2>&1 |
      grep -E '^Tiering/.*: share|error' || echo "tiering.sh: $trace/$mode printed no result"
  done
done
example=/usr/share/doc/hpcc/examples/_hpccinf.txt
if [ -z "$preload" ] || ! command -v hpcc >/dev/null || [ ! -f "$example" ]; then
  echo "tiering.sh: no hpcc run (needs the preload, hpcc and $example)"
  exit 0
fi
# One rank of Open MPI as root, on the loopback alone.
ip link set lo up 2>/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self
program=$(pwd)/bench/tiering_program
dir=$(pwd)/$prefix-hpcc
first=${SICM_TIERING_PROGRAM_ROUND:-1}
[ -n "${SICM_TIERING_PROGRAM_ROUND:-}" ] || rm -rf "$dir" "$prefix-program.jsonl"
mkdir -p "$dir"
sed -e '6s/.*/2000         Ns/' -e '11s/.*/1            Ps/' -e '12s/.*/1            Qs/' "$example" \
  > "$dir/hpccinf.txt"
# Each round runs every mode once, so that what drifts over a boot
# (DAMON's regions, the kernel's caches) falls on all of them.
for round in $(seq "$first" $((first + ${SICM_TIERING_PROGRAM_ROUNDS:-3} - 1))); do
  for mode in ${SICM_TIERING_PROGRAM_MODES:-none placer placer-1%cpu placer-1%cpu-thp \
      placer-1%cpu-huge balancing balancing-thp damon}; do
    (cd "$dir" && TMPDIR="$dir" "$program" "$mode" "$preload" "$dir/stats-$mode-$round.json" -- hpcc \
      > "$dir/run-$mode-$round.txt" 2>&1)
    if line=$(grep '^{' "$dir/run-$mode-$round.txt"); then
      echo "$line" | sed "s/^{/{\"round\": $round, /" | tee -a "$prefix-program.jsonl"
    else
      echo "tiering.sh: hpcc/$mode printed no result"
    fi
    mv "$dir/hpccoutf.txt" "$dir/hpccoutf-$mode-$round.txt" 2>/dev/null
  done
done
