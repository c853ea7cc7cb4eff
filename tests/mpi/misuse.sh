#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# misuse.sh: for each MPI libsicm-mpi was built for, tests/mpi/mpi_misuse_check
# in 2 ranks (every mix of hints on the collective window calls returns on
# both ranks — a hang ends in the timeout and fails —, a block freed twice,
# an unhinted failure, a kind without a class), then in 1 rank under
# SICM_CHECK=1 a block freed twice after its arena went: one line naming
# MPI_Free_mem, and the job stopped.
set -u
build=${SICM_TOP_BUILDDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$(dirname "$0")/mpi_env.sh"
mpi_each 240 2 "$build/tests/mpi/mpi_misuse_check" || exit 1
rc=0
for f in $(mpi_flavours); do
  err=$(SICM_CHECK=1 mpi_run "$f" 60 1 "$build/tests/mpi/mpi_misuse_check-$f" freed-twice 2>&1)
  status=$?
  line="MPI_Free_mem(0x[0-9a-f]*): freed already (a double free); its arena is gone"
  if [ $status -ne 0 ] && [ $status -ne 124 ] && printf '%s\n' "$err" | grep -q "SICM_CHECK: $line"; then
    echo "PASS: $f: the checking mode names a second MPI_Free_mem after the arena went"
  else
    printf '%s\n' "$err" | tail -5
    echo "FAIL: $f: freed-twice (exit $status)"
    rc=1
  fi
done
exit $rc
