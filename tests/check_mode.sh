#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# check_mode.sh: SICM_CHECK=1 stops every bad free or resize with one line
# naming the call and the pointer, then abort() — a double free that is not
# the thread's last free, an interior pointer, a pointer no arena
# allocated, a resize of a freed block, a block of a destroyed arena, the
# same through sicm_defrag_reallocate and in a shared arena (whose blocks
# other processes may free: that is no error), and
# memkind_free(NULL, p) of a pointer of no kind; the line names the call
# the program made (hbw_free, not sicm_free) — through the header's
# inline path and the called one; a workload of every call from several
# threads runs to its end.  Each case is a process of tests/check_mode.
set -u
b=${SICM_TOP_BUILDDIR:?}
check=$b/tests/check_mode
memkind=$b/src/memkind/.libs/libmemkind.so
failed=0
stopped() { # stopped CASE WHY: the case ends in abort, with one line saying WHY
  err=$(SICM_CHECK=1 "$check" "$1" "$memkind" 2>&1 >/dev/null)
  rc=$?
  printf '%s\n' "$err"
  lines=$(printf '%s\n' "$err" | grep -c "SICM_CHECK")
  if [ $rc -ne 134 ] || [ "$lines" -ne 1 ] || ! printf '%s\n' "$err" | grep -q "$2"; then
    echo "FAIL: $1 (exit $rc, $lines lines)"
    failed=1
  else
    echo "PASS: $1"
  fi
}
stopped double-small "sicm_free(0x[0-9a-f]*): .*double free"
stopped double-called "sicm_free(0x[0-9a-f]*): .*double free"
stopped interior "sicm_free(0x[0-9a-f]*): .*interior pointer"
stopped foreign "sicm_free(0x[0-9a-f]*): no arena allocated it"
stopped realloc-freed "sicm_realloc(0x[0-9a-f]*): .*double free"
stopped destroyed "sicm_free(0x[0-9a-f]*): no arena allocated it"
stopped defrag-freed "sicm_defrag_reallocate(0x[0-9a-f]*): .*double free"
stopped defrag-interior "sicm_defrag_reallocate(0x[0-9a-f]*): .*interior pointer"
stopped hbw-double "hbw_free(0x[0-9a-f]*): .*double free"
stopped shared-double "sicm_free(0x[0-9a-f]*): .*shared arena: freed already (a double free)"
stopped shared-interior "sicm_free(0x[0-9a-f]*): .*shared arena, not its start (an interior pointer)"
# Under a sanitizer malloc is not glibc's, whose blocks memkind_free tells
# from a stack address: there it hands every pointer of no arena to free().
if ldd "$b/src/.libs/libsicm.so" | grep -q 'libasan\|libtsan'; then
  echo "SKIP: memkind-foreign (the sanitizer's malloc)"
else
  stopped memkind-foreign "memkind_free(0x[0-9a-f]*): not memory of that kind"
fi
for c in clean shared-clean; do
  if SICM_CHECK=1 "$check" $c; then echo "PASS: $c"; else echo "FAIL: $c"; failed=1; fi
done
exit $failed
