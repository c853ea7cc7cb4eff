#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# tiering.sh PREFIX (in the multi-NUMA guest, as root, from the build
# tree): bench_tiering once per trace and mode, each run in a process of
# its own, so that no run inherits what NUMA balancing learnt of the
# process in another (its scan period); PREFIX-TRACE-MODE.json each.
# SICM_TIERING_MODES_RUN: the modes to run (default: all).
set -u
prefix=${1:?prefix}
for trace in phased skewed shifting equal; do
  for mode in ${SICM_TIERING_MODES_RUN:-none placer placer-1%cpu placer-1%cpu-thp balancing damon \
      placer+balancing placer+damon}; do
    SICM_TIERING_MODES=$mode bench/bench_tiering --benchmark_filter="^Tiering/$trace/" \
      --benchmark_out_format=json --benchmark_out="$prefix-$trace-$mode.json" 2>&1 |
      grep -E '^Tiering/.*: share|error' || echo "tiering.sh: $trace/$mode printed no result"
  done
done
