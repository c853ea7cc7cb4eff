#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# tier.sh: runs one GoogleTest suite (the LOG_COMPILER of `make check`) with
# the tests of the tier SICM_TEST_TIER selects: "quick" (make check) leaves
# out the test suites named *Stress, "stress" (make check-stress) runs only
# them.  A GTEST_FILTER of the caller's is kept: its negative patterns are
# added to the tier's; positive ones narrow the quick tier and replace the
# stress tier's.
user=${GTEST_FILTER:-}
case $user in
  *-*) positive=${user%%-*} negative=${user#*-} ;;
  *) positive=$user negative= ;;
esac
case ${SICM_TEST_TIER:-quick} in
  quick) GTEST_FILTER="${positive:-*}-${negative:+$negative:}*Stress.*" ;;
  stress) GTEST_FILTER="${positive:-*Stress.*}${negative:+-$negative}" ;;
  *) echo "tier.sh: SICM_TEST_TIER must be quick or stress" >&2; exit 99 ;;
esac
export GTEST_FILTER
exec "$@"
