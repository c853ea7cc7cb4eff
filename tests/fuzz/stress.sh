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
"$fuzz" --seed "$seed" --seconds "$seconds" --ops 2000 &&
  "$fuzz" --check-mode --seed "$seed" --seconds $((seconds / 4)) --ops 500
