#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# guest.sh hbm|nohbm|huge (runs inside the guest): programs nobody wrote for
# libsicm — an OpenMP program on LLVM's runtime (libomp loads libmemkind.so
# with dlopen) and a program written to memkind's hbwmalloc.h — run with
# libsicm's libmemkind, and then, for the log, with Debian's memkind.
# Checks where their pages are (the programs report move_pages).  `huge`
# (from tests/numa/hugetlb.sh, with 2 MiB pages reserved on every node and
# no 1 GiB ones) checks hbwmalloc's page sizes alone: 1GB takes 2 MiB pages
# too, as memkind's GBTLB kinds do.
set -u
machine=$1
b=${SICM_TOP_BUILDDIR:?}
ours="$b/src/memkind/.libs:$b/src/.libs"
failed=0
# A sanitizer build of libsicm needs its runtime loaded first.
preload=$(ldd "$b/src/.libs/libsicm.so" | awk '/libasan|libubsan/ {print $3}' | tr '\n' ':')
export ASAN_OPTIONS=detect_leaks=0

expect() { # expect OUTPUT LINE: the program printed exactly this line
  if printf '%s\n' "$1" | grep -qxF "$2"; then
    echo "  ok: $2"
  else
    echo "  FAILED: expected \"$2\""
    failed=1
  fi
}

run_ours() { LD_PRELOAD=$preload LD_LIBRARY_PATH=$ours "$@" 2>&1; }
run_debian() { LD_LIBRARY_PATH= "$@" 2>&1; }

if [ "$machine" = huge ]; then
  for policy in huge huge-preferred; do
    out=$(run_ours "$b/tests/memkind/hbw_place" --$policy)
    echo "--- hbw_place --$policy:"
    echo "$out"
    expect "$out" "hbw_set_policy: 0"
    expect "$out" "hbw_posix_memalign_psize(2MB): 0"
    expect "$out" "2MB: node 2, 2048 kB pages"
    expect "$out" "hbw_posix_memalign_psize(1GB): 0"
  done
  exit $failed
fi
if [ -x "$b/tests/memkind/omp_place" ]; then
  out=$(run_ours "$b/tests/memkind/omp_place")
  echo "--- omp_place (clang -fopenmp, libomp) with libsicm's libmemkind:"
  echo "$out"
  if [ "$machine" = hbm ]; then
    expect "$out" "omp_high_bw_mem_alloc: node 2"
    expect "$out" "omp_large_cap_mem_alloc: node 3"
    expect "$out" "omp_init_allocator(high_bw, null_fb): allocator"
    expect "$out" "high_bw null_fb allocator: node 2"
  else
    expect "$out" "omp_init_allocator(high_bw, null_fb): null"
  fi
  echo "--- omp_place with Debian's memkind (for comparison, not checked):"
  run_debian "$b/tests/memkind/omp_place"
else
  echo "--- omp_place was not built (configure found no clang with OpenMP): skipped"
fi

# On CPU 0, so that "the local node" is node 0.
out=$(run_ours taskset -c 0 "$b/tests/memkind/hbw_place")
echo "--- hbw_place (hbwmalloc.h) with libsicm's libmemkind:"
echo "$out"
expect "$out" "hbw_set_policy(42): 22"
expect "$out" "done"
if [ "$machine" = hbm ]; then
  expect "$out" "hbw_check_available: 0"
  expect "$out" "hbw_malloc: node 2"
  expect "$out" "hbw_verify_memory_region: 0"
else
  expect "$out" "hbw_check_available: 19"     # ENODEV
  expect "$out" "hbw_malloc: node 0"          # preferred: the local node, CPU 0's
  expect "$out" "hbw_verify_memory_region: -1"
fi
if [ "$machine" = nohbm ]; then
  # MEMKIND_HBW_NODES overrides the classification, as in memkind.
  out=$(MEMKIND_HBW_NODES=1 run_ours taskset -c 0 "$b/tests/memkind/hbw_place")
  echo "--- hbw_place with MEMKIND_HBW_NODES=1:"
  echo "$out"
  expect "$out" "hbw_check_available: 0"
  expect "$out" "hbw_malloc: node 1"
  expect "$out" "hbw_verify_memory_region: 0"
fi
if [ "$machine" = hbm ]; then
  # A thread that moves gets its new CPU's nearest HBM at its next
  # allocation: with nodes 0 and 1 taken as HBM, each CPU's own node.
  out=$(MEMKIND_HBW_NODES=0,1 run_ours "$b/tests/memkind/hbw_place" --moving)
  echo "--- hbw_place --moving with MEMKIND_HBW_NODES=0,1:"
  echo "$out"
  expect "$out" "on CPU 0: node 0"
  expect "$out" "on CPU 1: node 1"
  if [ "$(printf '%s\n' "$out" | grep -c '^on CPU 0: node 0$')" != 2 ]; then
    echo "  FAILED: expected \"on CPU 0: node 0\" twice"
    failed=1
  fi
fi
if [ "$machine" = hbm ]; then
  # HBW_POLICY_INTERLEAVE interleaves even over one HBM node, as memkind's
  # kernel policy does, and takes no 2 MiB pages.
  out=$(run_ours "$b/tests/memkind/hbw_place" --interleave)
  echo "--- hbw_place --interleave:"
  echo "$out"
  expect "$out" "hbw_set_policy(INTERLEAVE): 0"
  expect "$out" "hbw_posix_memalign_psize(2MB): 22"
  expect "$out" "hbw_malloc policy: interleave"
  expect "$out" "hbw_malloc: node 2"
fi
if [ -e /usr/lib/x86_64-linux-gnu/libmemkind.so.0 ]; then
  echo "--- hbw_place with Debian's memkind (for comparison, not checked):"
  run_debian "$b/tests/memkind/hbw_place"
fi
exit $failed
