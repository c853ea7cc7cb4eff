#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# autoplace.sh (runs inside the guest): numa_autoplace, each test in a
# process of its own.  Under QEMU's TCG, a process that already ran a
# placer and destroyed its arenas may read no referenced bytes for pages it
# touches again (translations outlive the kernel's flush there; see
# docs/design.md, "Automatic placement"), which a real machine does not
# do: a test must not depend on its neighbour.
set -u
bin=${SICM_TOP_BUILDDIR:?}/tests/numa/numa_autoplace
failed=0
for test in $("$bin" --gtest_list_tests | awk '/^[^ ]/ { suite = $1 } /^  / { print suite $1 }'); do
  "$bin" --gtest_filter="$test" || failed=1
done
exit $failed
