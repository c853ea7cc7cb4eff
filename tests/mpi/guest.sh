#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# guest.sh (runs inside the 4-node guest): for each MPI libsicm-mpi was
# built for, tests/mpi/mpi_alloc_check-MPI --numa in 2 ranks, one on CPU 0
# (node 0) and one on CPU 1 (node 1): MPI_Alloc_mem with sicm_memory=hbm on
# node 2, large_cap on node 3, node:1 on node 1, and a node-shared window
# with hbm on node 2 as seen from both ranks, besides the host checks.
set -u
b=${SICM_TOP_BUILDDIR:?}
. "$(dirname "$0")/mpi_env.sh"
mpi_flavours > /dev/null || exit $?
# The guest boots without a network: the MPI runtimes need the loopback
# interface and a host name of letters and digits.
ip link set lo up 2> /dev/null || true
hostname sicm-guest 2> /dev/null || true
mpi_each 300 2 --bind "$b/tests/mpi/mpi_alloc_check" --numa
