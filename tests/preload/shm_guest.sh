#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# shm_guest.sh (runs inside the 4-node guest): POSIX shared-memory segments
# that unmodified programs make — Python's multiprocessing.shared_memory and
# Boost.Interprocess — placed on node 2 (HBM-like) by libsicm-preload's
# SICM_PRELOAD_SHM.  Each segment is written by processes without the
# preload too; every process checks every page of its own mapping with
# move_pages and the data it reads back.  Segments the setting does not
# take (another name, too small, no room) stay where the kernel puts them,
# on the node of the CPU (node 0), and the one that finds no room says so.
set -u
. "${SICM_TOP_SRCDIR:-${SICM_TOP_BUILDDIR:?}}/tests/preload/guest_common.sh"
shm_run() { # shm_run SICM_PRELOAD_SHM COMMAND...: shm placement alone, on CPU 0
  conf=$1
  shift
  SICM_PRELOAD=off SICM_PRELOAD_SHM=$conf LD_PRELOAD=$lib LD_LIBRARY_PATH=$b/src/.libs \
    taskset -c 0 "$@"
}
py() { shm_run "$1" python3 "$src/tests/preload/shm_check.py" create "$2" "$3" "$4" 2>"$tmp/err"; }

echo "--- python3 multiprocessing.shared_memory, device=hbm, match=sicm_py*"
expect "64 MiB segment: every page of all three processes on node 2" \
  py "device=hbm,match=sicm_py*" sicm_py_$$ 64 2
cat "$tmp/err"
expect "the report names it" grep -q "shm /sicm_py_$$ (64.0 MiB mapped): preferred node 2" "$tmp/err"
expect "shm_unlink removed it" [ ! -e /dev/shm/sicm_py_$$ ]
expect "a name the pattern does not match stays on node 0" \
  py "device=hbm,match=sicm_py*" other_py_$$ 64 0
expect "a segment below min= stays on node 0" py "device=hbm,min=128M" sicm_py_$$ 64 0
expect "with no room on node 2 (reserve=1000M) it stays on node 0" \
  py "device=hbm,reserve=1000M,report=off" sicm_py_$$ 64 0
cat "$tmp/err"
expect "and says so, with report=off" grep -q "shm /sicm_py_$$ (64.0 MiB mapped): left as made: node 2 has" "$tmp/err"
expect "a bad setting leaves segments alone, with a message" py "device=hbm,matches=x" sicm_py_$$ 64 0
expect "the message names the key" grep -q "SICM_PRELOAD_SHM: unknown key 'matches'" "$tmp/err"
echo "--- the same segment with both settings at once: large blocks and segments"
expect "both on node 2" sh -c "SICM_PRELOAD=device=hbm SICM_PRELOAD_SHM=device=hbm LD_PRELOAD=$lib \
  LD_LIBRARY_PATH=$b/src/.libs taskset -c 0 python3 $src/tests/preload/shm_check.py create sicm_py_$$ 64 2"

if [ -x "$b/tests/preload/shm_boost" ]; then
  echo "--- Boost.Interprocess shared_memory_object, device=hbm, match=sicm_boost*"
  expect "64 MiB segment: every page of both processes on node 2" \
    shm_run "device=hbm,match=sicm_boost*" "$b/tests/preload/shm_boost" create sicm_boost_$$ 64 2
  expect "without the setting it stays on node 0" \
    shm_run off "$b/tests/preload/shm_boost" create sicm_boost_$$ 64 0
elif [ "${SICM_BOOST_REQUIRED:-0}" = 1 ]; then
  echo "  FAILED: tests/preload/shm_boost was not built (libboost-dev)"
  failed=1
else
  echo "  (Boost.Interprocess part skipped: libboost-dev was absent at configure)"
fi
rm -rf "$tmp"
exit $failed
