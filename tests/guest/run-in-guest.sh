#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# run-in-guest.sh: the `make check` entry for everything that needs several
# NUMA nodes.  Boots the 4-node HMAT guest once and runs the harness
# self-test and every NUMA suite inside it (tests/guest/run-numa-suites.sh);
# then boots the guest without HBM once for the suites that need that machine,
# and with SECOND_KERNEL set (a kernel series: 6.12), the 4-node guest of
# that kernel for SECOND_KERNEL_SUITES.
set -u
src=${SICM_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${SICM_TOP_BUILDDIR:-$src}
guest() {
  topology=$1
  shift
  "$src/tests/guest/sicm-guest" --topology "$topology" -C "$build" \
    --env "SICM_TOP_SRCDIR=$src" --env "SICM_TOP_BUILDDIR=$build" \
    --env "MPI_OPENMPI_RUN=${MPI_OPENMPI_RUN:-}" --env "MPI_MPICH_RUN=${MPI_MPICH_RUN:-}" \
    --env "SICM_MPI_REQUIRED=${SICM_MPI_REQUIRED:-0}" \
    -- sh "$src/tests/guest/run-numa-suites.sh" "$build" "$@"
}
# shellcheck disable=SC2086
guest hmat4 ${NUMA_SUITES:-}
rc=$?
if [ -n "${NOHBM_SUITES:-}" ] && [ "$rc" -ne 77 ]; then
  # shellcheck disable=SC2086
  guest nohbm --no-selftest $NOHBM_SUITES
  rc2=$?
  [ "$rc" -eq 0 ] && rc=$rc2
fi
if [ -n "${SECOND_KERNEL:-}" ] && [ "$rc" -ne 77 ]; then
  # shellcheck disable=SC2086
  SICM_GUEST_KERNEL=$SECOND_KERNEL guest hmat4 --no-selftest ${SECOND_KERNEL_SUITES:-}
  rc2=$?
  # A missing second kernel does not turn the first kernel's pass into a skip.
  if [ "$rc2" -eq 77 ]; then
    echo "run-in-guest: no $SECOND_KERNEL kernel (tools/setup-debian unpacks it): its suites did not run"
    [ "${SICM_GUEST_REQUIRED:-0}" = 1 ] && rc2=1 || rc2=0
  fi
  [ "$rc" -eq 0 ] && rc=$rc2
fi
exit "$rc"
