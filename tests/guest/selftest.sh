#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# selftest.sh - sicm-guest harness self-test; runs INSIDE the guest:
#   tests/guest/sicm-guest -- tests/guest/selftest.sh [path/to/selftest]
# Owns: proving the guest has the hmat4 NUMA layout and that a wrong placement
# expectation is detected (so the harness cannot pass vacuously).
# Prints PASS:/FAIL: lines; exits 0 only if every check passes.
selftest=${1:-$(dirname "$0")/selftest}
failed=0

pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1"; failed=1; }

[ -x "$selftest" ] || { fail "selftest binary $selftest exists"; exit 1; }

if "$selftest"; then pass "4 nodes, HMAT order, mbind to node 2"
else fail "4 nodes, HMAT order, mbind to node 2"; fi

if "$selftest" --bind-node 2 --expect-node 3 >/dev/null 2>&1; then
    fail "wrong expected node (3 instead of 2) is detected"
else pass "wrong expected node (3 instead of 2) is detected"; fi

if "$selftest" --nodes 2 >/dev/null 2>&1; then
    fail "wrong node count (2 instead of 4) is detected"
else pass "wrong node count (2 instead of 4) is detected"; fi

exit $failed
