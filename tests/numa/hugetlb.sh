#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# hugetlb.sh PAGES (runs inside the guest, as root): reserves PAGES 2 MiB
# huge pages on every node, runs numa_hugetlb and the hugetlb checks of the
# memkind library, and gives the pages back, so that the suites after it
# see no hugetlb device.
set -u
pages=${1:?pages per node}
bin=${SICM_TOP_BUILDDIR:?}/tests/numa/numa_hugetlb
reserve() {
  for f in /sys/devices/system/node/node*/hugepages/hugepages-2048kB/nr_hugepages; do
    echo "$1" >"$f" || return 1
  done
}
if ! reserve "$pages"; then
  echo "hugetlb.sh: cannot reserve huge pages (the guest runs its suites as root)"
  reserve 0
  exit 1
fi
SICM_TEST_HUGE_PAGES=$pages "$bin"
rc=$?
sh "${SICM_TOP_SRCDIR:-$SICM_TOP_BUILDDIR}/tests/memkind/guest.sh" huge || rc=1
reserve 0
exit $rc
