#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# stress.sh: the operation fuzzer for a budget (`make check-stress`): new
# seeds each run (printed, and replayable: a failure prints the command),
# SICM_FUZZ_SECONDS of sequences of 2000 operations (default 30), then a
# quarter of that in the checking mode.  SICM_FUZZ_SEED fixes the first seed.
set -u
fuzz=${SICM_TOP_BUILDDIR:?}/tests/fuzz/sicm-fuzz
[ -x "$fuzz" ] || { echo "SKIP: $fuzz not built (configure found no GoogleTest)"; exit 77; }
seconds=${SICM_FUZZ_SECONDS:-30}
seed=${SICM_FUZZ_SEED:-$(date +%s)}
echo "stress.sh: seeds from $seed"
# Hugetlb arenas are fuzzed too where the run may reserve 2 MiB pages (as
# root, with none reserved: a site's own pool is never touched); the pool
# goes back to empty when the run ends, by a signal too.
pool=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
if [ -w "$pool" ] && [ "$(cat "$pool")" = 0 ]; then
  trap 'echo 0 > "$pool"' EXIT
  trap 'exit 1' INT TERM HUP
  (echo 8 > "$pool") 2>/dev/null
  echo "stress.sh: $(cat "$pool") huge pages of 2 MiB reserved for the run"
fi
"$fuzz" --seed "$seed" --seconds "$seconds" --ops 2000 &&
  "$fuzz" --check-mode --seed "$seed" --seconds $((seconds / 4)) --ops 500
