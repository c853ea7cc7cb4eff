#!/bin/sh
# run-in-guest.sh: the `make check` entry for everything that needs several
# NUMA nodes.  Boots the multi-NUMA guest once and runs the harness self-test
# and every NUMA suite inside it (tests/guest/run-numa-suites.sh).
set -u
src=${SICM_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${SICM_TOP_BUILDDIR:-$src}
exec "$src/tests/guest/sicm-guest" -C "$build" \
  --env "SICM_TOP_SRCDIR=$src" --env "SICM_TOP_BUILDDIR=$build" \
  -- sh "$src/tests/guest/run-numa-suites.sh" "$build" ${NUMA_SUITES:-}
