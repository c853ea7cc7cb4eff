#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# host.sh: libsicm-preload.so on this machine (one node is enough for
# routing, spilling by budget, threads, fork and bad input; the guest test
# checks where pages land).  Runs tests/preload/preload_check, a program
# that links nothing of libsicm, under LD_PRELOAD.
set -u
b=${SICM_TOP_BUILDDIR:?}
lib=$b/src/preload/.libs/libsicm-preload.so
check=$b/tests/preload/preload_check
# A sanitizer's runtime must come first and replaces malloc itself: the
# preload cannot interpose there.
if ldd "$b/src/.libs/libsicm.so" | grep -q 'libasan\|libtsan'; then
  echo "SKIP: sanitizer build (its runtime owns malloc)"
  exit 77
fi
failed=0
run() { # run SICM_PRELOAD MODE...: the check program under the preload
  conf=$1
  shift
  SICM_PRELOAD=$conf LD_PRELOAD=$lib LD_LIBRARY_PATH=$b/src/.libs "$check" "$@"
}
step() { # step NAME COMMAND...: one check, output kept
  name=$1
  shift
  echo "--- $name"
  if "$@"; then echo "PASS: $name"; else echo "FAIL: $name"; failed=1; fi
}
step basic run "min=1M,device=node:0" basic
step "basic, small=process" run "min=1M,device=node:0,small=process" basic
step threads run "min=1M,device=node:0" threads
step "threads, small=process" run "min=1M,device=node:0,small=process" threads
step fork run "min=1M,device=node:0" fork 200
step "fork, small=process" run "min=1M,device=node:0,small=process" fork 50
step budget run "min=1M,device=node:0,spill=none,budget=8M" budget
step "off" run off inactive
# A kernel without transparent huge pages refuses the advice, and the
# arenas keep base pages whatever pages= asks.
if [ -d /sys/kernel/mm/transparent_hugepage ]; then huge=hg base=nh; else huge=none base=none; fi
step "pages=huge" run "min=1M,device=node:0,pages=huge" pages $huge
step "pages=huge, sites" run "min=1M,device=node:0,sites=2,pages=huge" pages $huge
step "pages=base" run "min=1M,device=node:0,pages=base" pages $base
step "pages=system" run "min=1M,device=node:0,pages=system" pages none

# A bad value: one clear line on stderr, then the program runs unchanged.
bad() {
  out=$(run "$1" inactive 2>&1) || return 1
  echo "$out"
  printf '%s\n' "$out" | grep -q "^libsicm-preload: $2" &&
    printf '%s\n' "$out" | grep -q "^libsicm-preload: inactive"
}
step "bad size" bad "min=lots" "SICM_PRELOAD: bad value .*min=lots"
step "unknown key" bad "min=1M,colour=blue" "SICM_PRELOAD: unknown key .*colour"
step "unknown device" bad "device=fast" "unknown device .*fast"
step "missing kind" bad "device=hbm" "this machine has no device of that kind"
step "no equals" bad "min" "SICM_PRELOAD: expected key=value"
for value in nan inf 1e3 0x10 -5 1.M .5M 4x; do
  step "size $value" bad "budget=$value" "SICM_PRELOAD: bad value .*budget=$value"
done
step "min nan" bad "min=nan" "SICM_PRELOAD: bad value .*min=nan"
step "small bad" bad "small=glibc" "SICM_PRELOAD: bad value .*small=glibc"
step "pages bad" bad "pages=2M" "SICM_PRELOAD: bad value .*pages=2M"
step "key twice" bad "min=1M,min=2M" "SICM_PRELOAD: 'min' is given twice"
step "a list with commas" bad "spill=node:0,node:0" "SICM_PRELOAD: expected key=value, got 'node:0'"
step "weighted, one device" bad "device=weighted:node:0" "weighted: and interleave: take two or more"
step "several without a spread" bad "device=node:0/node:0" "several devices make a tier only after"
step "weighted, a device twice" bad "device=weighted:node:0/node:0" "a device listed twice in one tier: node:0"
step "interleave, unknown device" bad "spill=interleave:node:0/fast" "unknown device .*fast"
step "two prefixes" bad "device=weighted:interleave:node:0/node:0" "unknown device .*interleave"

# The first releases' separator, ';' between settings and ',' in a list:
# read as before, with one line saying what to write instead.
old_separator() {
  out=$(run "min=1M;device=node:0;spill=node:0,node:0" basic 2>&1) || return 1
  echo "$out"
  printf '%s\n' "$out" | grep -q "^libsicm-preload: SICM_PRELOAD: ';' between settings is deprecated" &&
    [ "$(printf '%s\n' "$out" | grep -c "deprecated")" -eq 1 ]
}
step "old separator" old_separator
step "a list with +" run "min=1M,device=node:0,spill=node:0+node:0" basic

# Invalid frees of arena memory abort with a message, as glibc's do.
aborts() {
  out=$(run "min=1M,device=node:0" "$1" 2>&1)
  rc=$?
  echo "$out"
  [ "$rc" -ge 128 ] && printf '%s\n' "$out" | grep -q "free(): invalid pointer"
}
step "double free aborts" aborts double-free
step "wild free aborts" aborts wild-free

# Statistics at exit, to a file: the budget run placed 6 blocks on node 0
# (the constructor's 3 MiB block, four of 2 MiB, one more after a free) and
# sent one to the process allocator.
stats=$(mktemp)
at_exit() {
  run "min=1M,device=node:0,spill=none,budget=8M,stats=$stats" budget >/dev/null || return 1
  cat "$stats"
  grep -q "node 0 dram: placed 6 (13.0 MiB), spilled here 0 (0 B), live 0 B, peak 8.0 MiB, budget 8.0 MiB" "$stats" &&
    grep -q "to the process allocator, no device having room: 1 (2.0 MiB)" "$stats"
}
step "statistics" at_exit
rm -f "$stats"
on_signal() {
  out=$(run "min=1M,device=node:0,signal=USR1" signal 2>&1) || return 1
  echo "$out"
  printf '%s\n' "$out" | grep -q "node 0 dram: placed 2 (7.0 MiB), .* live 4.0 MiB" &&
    printf '%s\n' "$out" | grep -q "node 0 dram: placed 2 (7.0 MiB), .* live 0 B"
}
step "statistics on SIGUSR1, and at exit" on_signal

# Shared-memory segments (SICM_PRELOAD_SHM): on one node, the policy itself
# is what can be checked — the kernel's numa_maps shows it on the segment's
# mapping, and only on a name the pattern takes (the guest checks pages).
shm_policy() { # shm_policy NAME WANT: the policy numa_maps shows on the mapping
  out=$(SICM_PRELOAD=off SICM_PRELOAD_SHM="device=node:0,match=sicm_host*" LD_PRELOAD=$lib \
    LD_LIBRARY_PATH=$b/src/.libs python3 -c '
import sys
from multiprocessing import shared_memory
s = shared_memory.SharedMemory(name=sys.argv[1], create=True, size=4 << 20)
s.buf[0] = 1
print([l.split()[1] for l in open("/proc/self/numa_maps") if sys.argv[1] in l])
s.close()
s.unlink()' "$1" 2>&1) || return 1
  echo "$out"
  printf '%s\n' "$out" | grep -q "^\['$2'\]$"
}
step "shm: a segment the pattern takes prefers node 0" shm_policy sicm_host_$$ prefer:0
step "shm: another keeps the default policy" shm_policy other_host_$$ default

exit $failed
