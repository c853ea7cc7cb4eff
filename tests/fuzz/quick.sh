#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# quick.sh: the operation fuzzer's short run in `make check` — fixed seeds,
# so that every run checks the same sequences: 4 of 1500 operations, then 4
# of 300 in the checking mode, each ending in a misuse that must stop it.
set -u
fuzz=${SICM_TOP_BUILDDIR:?}/tests/fuzz/sicm-fuzz
[ -x "$fuzz" ] || { echo "SKIP: $fuzz not built (configure found no GoogleTest)"; exit 77; }
"$fuzz" --seed 1 --runs 4 --ops 1500 && "$fuzz" --check-mode --seed 1 --runs 4 --ops 300
