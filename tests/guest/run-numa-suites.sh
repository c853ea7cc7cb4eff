#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# run-numa-suites.sh (runs inside the guest): the harness self-test (unless
# --no-selftest), then each NUMA suite given on the command line.  Exits 0
# only if none fails (exit 77 is a skip that says why, as in automake).
set -u
build=$1
shift
src=${SICM_TOP_SRCDIR:-$build}
passed=0
failed=0
skipped=0
run() {
  name=$1
  shift
  echo "=== $name"
  "$@"
  rc=$?
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
    echo "=== PASS: $name"
  elif [ "$rc" -eq 77 ]; then
    skipped=$((skipped + 1))
    echo "=== SKIP: $name"
  else
    failed=$((failed + 1))
    echo "=== FAIL: $name"
  fi
}
if [ "${1:-}" = --no-selftest ]; then
  shift
else
  run harness-selftest sh "$src/tests/guest/selftest.sh" "$build/tests/guest/selftest"
fi
for suite in "$@"; do
  case $suite in
  # A script from the source tree, with its arguments: "path.sh:arg".
  *.sh:*) run "$suite" sh "$src/${suite%%:*}" "${suite#*:}" ;;
  *) run "$suite" "$build/$suite" ;;
  esac
done
echo "guest suites: $passed passed, $skipped skipped (77), $failed failed"
[ "$failed" -eq 0 ]
