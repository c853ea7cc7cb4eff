#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# guest.sh SECONDS (inside the multi-NUMA guest, as root): the operation
# fuzzer where residency means something — every resident page of a
# strictly bound arena on its devices, after every move — with 8 huge pages
# of 2 MiB reserved on each node for its hugetlb arenas, given back after.
# Seeds from SICM_FUZZ_SEED (default: a range that passed here, so that CI
# checks the same sequences; set it to explore); a failure prints the
# command that replays it.
set -u
seconds=${1:?seconds}
fuzz=${SICM_TOP_BUILDDIR:?}/tests/fuzz/sicm-fuzz
[ -x "$fuzz" ] || { echo "SKIP: $fuzz not built (configure found no GoogleTest)"; exit 77; }
reserve() {
  for f in /sys/devices/system/node/node*/hugepages/hugepages-2048kB/nr_hugepages; do
    echo "$1" >"$f" 2>/dev/null
  done
}
reserve 8
seed=${SICM_FUZZ_SEED:-1795901233}
echo "guest.sh: seeds from $seed"
# What earlier suites left behind decides which calls the kernel refuses.
for n in /sys/devices/system/node/node[0-9]*; do
  echo "guest.sh: ${n##*/}: $(sed -n 's/.*MemFree: *//p' "$n/meminfo") free," \
    "$(cat "$n/hugepages/hugepages-2048kB/free_hugepages") huge pages free"
done
FUZZ_SHRINK_SECONDS=${FUZZ_SHRINK_SECONDS:-60} FUZZ_MEMORY_MAX=96 \
  "$fuzz" --seed "$seed" --seconds "$seconds" --ops 1000
rc=$?
reserve 0
exit $rc
