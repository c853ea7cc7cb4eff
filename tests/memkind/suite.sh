#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# suite.sh MEMKIND_SRC [build|run|both]: memkind's own test suite against
# Debian's memkind and against libsicm's, side by side.
#
# MEMKIND_SRC is a checkout of memkind's public repository (tag v1.14.0),
# which the project never ships: without it the script skips (77).  Only
# the sources of memkind's main gtest program (test/Makefile.mk's
# all_tests) are compiled, each on its own, once with Debian's headers and
# once with libsicm's (include/sicm_memkind first), linked with Debian's
# googletest and the one library; a source that does not compile, or whose
# object names what the library lacks, is left out and listed.  Each test
# runs in a process of its own, as memkind's test.sh runs them, so that a
# crash costs one test.  `build` compiles (slow under emulation: do it on
# the host), `run` runs what was built (in the guest too), `both` is the
# default.  Output: counts per library, then every test Debian's memkind
# passes that ours does not, with its status; exit 1 if there is one that
# `apart` below does not explain.
# With SICM_SUITE_HUGE_PAGES=N (as root) each node reserves N huge pages of
# 2 MiB while the tests run, for memkind's hugetlb kinds, and the tests
# that reserve their own may (see below): without it those fail in both.
#
# Some sources include memkind's internal headers.  Debian's build takes
# them from MEMKIND_SRC's include/ (the library exports what they declare);
# libsicm's takes the stand-ins of tests/memkind/standins, which declare
# only what the tests call, from memkind's public API or libnuma.  A source
# that needs what libsicm's memkind cannot honestly give is left out of
# libsicm's build by name, and tests that ask what libsicm refuses by
# design are named too (both in `apart`): their tests are listed apart,
# with the reason.
set -u
src=${1:-}
step=${2:-both}
top=${SICM_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
b=${SICM_TOP_BUILDDIR:-$top}
out=$b/memkind-suite
if [ -z "$src" ] || [ ! -f "$src/test/main.cpp" ]; then
  echo "SKIP: no memkind source tree given (fetch memkind's repository, tag v1.14.0)"
  exit 77
fi
sources="main dlopen_test error_message_tests hbw_allocator_tests memkind_allocator_tests
  memkind_detect_kind_tests memkind_null_kind_test memkind_versioning_tests negative_tests
  pmem_allocator_tests fixed_allocator_tests bat_tests check get_arena_test
  hbw_verify_function_test multithreaded_tests static_kinds_tests trial_generator"
# SOURCE|TESTS|REASON: SOURCE is not built against libsicm's memkind, and
# TESTS (a glob) are what Debian's build runs of it; with no SOURCE, TESTS
# run in both builds and are expected to fail with libsicm's.
apart=(
  "get_arena_test|GetArenaTest.*|memkind_thread_get_arena gives the index of memkind's jemalloc arena for the calling thread; libsicm's kinds have no arena indices"
  "static_kinds_tests|StaticKindsTest.*|reads each static kind's ops table (struct memkind_ops, init_once) through memkind's private struct memkind; libsicm's kinds have no ops table"
  "|FixedAllocatorTestsStatic.*|makes three fixed kinds of 126 MiB at 0, 8 and 12 bytes into one array; libsicm gives an address to one arena at most (its lookup, memkind_detect_kind) and refuses a fixed range that is another's"
)
left_out_reason() { # left_out_reason SOURCE: its reason, or nothing
  local e
  for e in "${apart[@]}"; do
    [ -n "$1" ] && [ "${e%%|*}" = "$1" ] && echo "${e##*|}"
  done
}
flags="-std=gnu++14 -O1 -D_GNU_SOURCE -fopenmp -DNUMAKIND_MAX=2048 -DMEMKIND_DEPRECATED(x)=x"

build_one() { # build_one NAME INCLUDES LIBS: all_tests of one library in $out/NAME
  local name=$1 incs=$2 libs=$3 dir=$out/$1 objs="" s
  rm -rf "$dir" && mkdir -p "$dir/obj"
  # memkind's main() asks its bundled googletest for --help; Debian's keeps
  # that flag in testing::internal.
  printf '%s\n' '#include <gtest/gtest.h>' \
    'namespace testing { namespace internal { extern bool g_help_flag; }' \
    'inline bool GetGtestHelpFlag() { return internal::g_help_flag; } }' > "$dir/help_flag.h"
  for s in $sources; do
    local extra="" why
    why=$([ "$name" = sicm ] && left_out_reason "$s")
    if [ -n "$why" ]; then
      echo "$name: $s.cpp left out: $why"
      continue
    fi
    [ "$s" = main ] && extra="-include $dir/help_flag.h"
    # shellcheck disable=SC2086
    if g++ $flags $incs -I"$src/test" $extra -c "$src/test/$s.cpp" -o "$dir/obj/$s.o" \
         > "$dir/obj/$s.log" 2>&1; then
      objs="$objs $dir/obj/$s.o"
    else
      echo "$name: $s.cpp does not compile: $(grep -m1 'error' "$dir/obj/$s.log")"
    fi
  done
  # Leave out the objects that name what is not there, until it links.
  for _ in 1 2 3 4 5 6 7 8; do
    # shellcheck disable=SC2086
    g++ -o "$dir/all_tests" $objs $libs -lgtest -ldl -pthread -fopenmp > "$dir/link.log" 2>&1 && break
    local bad
    bad=$(sed -n 's|.*/obj/\([a-z_]*\)\.o: in function.*|\1|p' "$dir/link.log" | sort -u)
    [ -n "$bad" ] || { echo "$name: link failed"; cat "$dir/link.log"; return 1; }
    for s in $bad; do
      echo "$name: $s.cpp left out: $(grep -m1 'undefined reference' "$dir/link.log" | sed 's/.*undefined/undefined/')"
      objs=$(echo "$objs" | tr ' ' '\n' | grep -v "/$s\.o$" | tr '\n' ' ')
    done
  done
  [ -x "$dir/all_tests" ]
}

run_one() { # run_one NAME: each test in its own process; NAME/status.tsv
  local dir=$out/$1 t rc status
  : > "$dir/status.tsv"
  "$dir/all_tests" --gtest_list_tests | awk '/^[^ ]/ {s = $1} /^  / {print s $1}' |
    while read -r t; do
      timeout -k 5 120 "$dir/all_tests" --gtest_filter="$t" -d "$dir/pmem/" > "$dir/last.log" 2>&1 < /dev/null
      rc=$?
      # shellcheck disable=SC2086
      [ -z "$pools" ] || pools_set $pools # what a test that crashed left reserved
      if [ $rc -eq 0 ]; then status=PASSED
      elif [ $rc -ge 124 ]; then status=CRASHED; else status=FAILED; fi
      grep -q '^\[  SKIPPED \]' "$dir/last.log" && status=SKIPPED
      printf '%s\t%s\n' "$t" "$status" >> "$dir/status.tsv"
    done
}

if [ "$step" != run ]; then
  build_one debian "-idirafter $src/include" "-lmemkind -lnuma" || exit 1
  build_one sicm "-I$top/include/sicm_memkind -I$top/tests/memkind/standins" \
    "-L$b/src/memkind/.libs -Wl,-rpath,$b/src/memkind/.libs -Wl,-rpath,$b/src/.libs -lmemkind -lnuma" ||
    exit 1
fi
[ "$step" = build ] && exit 0
# Huge pages: memkind's tests reserve what they need (HugePageOrganizer,
# with `sudo sh -c`) and give it back on exit, which a test that crashes
# never reaches.  Only with SICM_SUITE_HUGE_PAGES (the pools are the whole
# machine's): then every test starts from N pages per node, the tests may
# change them (as root without sudo, through a stand-in that runs the
# command as it is), and the script leaves the pools as it found them.
pool_files=$(ls /sys/devices/system/node/node*/hugepages/hugepages-2048kB/nr_hugepages 2> /dev/null)
pools_now() { # FILE=PAGES for every node's pool
  local f
  for f in $pool_files; do echo "$f=$(cat "$f")"; done
}
pools_set() { # pools_set FILE=PAGES...: 0, or 1 when one cannot be set
  local p
  for p in "$@"; do
    [ "$(cat "${p%=*}")" = "${p#*=}" ] || echo "${p#*=}" > "${p%=*}" || return 1
  done
}
pools=""
if [ -n "${SICM_SUITE_HUGE_PAGES:-}" ]; then
  initial=$(pools_now)
  # shellcheck disable=SC2086
  trap 'pools_set $initial' EXIT
  # shellcheck disable=SC2046
  pools_set $(for f in $pool_files; do echo "$f=$SICM_SUITE_HUGE_PAGES"; done) ||
    { echo "cannot reserve huge pages"; exit 1; }
  pools=$(pools_now)
  if [ "$(id -u)" = 0 ] && ! command -v sudo > /dev/null; then
    mkdir -p "$out/bin"
    printf '#!/bin/sh\nexec "$@"\n' > "$out/bin/sudo"
    chmod +x "$out/bin/sudo"
    PATH=$out/bin:$PATH
  fi
fi
for lib in debian sicm; do
  mkdir -p "$out/$lib/pmem"
  run_one $lib
done
printf '%-8s %6s %6s %6s %6s %7s\n' library tests passed failed crashed skipped
for lib in debian sicm; do
  awk -F'\t' -v lib=$lib '{n++; c[$2]++} END {printf "%-8s %6d %6d %6d %6d %7d\n", lib, n,
    c["PASSED"], c["FAILED"], c["CRASHED"], c["SKIPPED"]}' "$out/$lib/status.tsv"
done
worse=$(awk -F'\t' 'NR == FNR {if ($2 == "PASSED") ok[$1] = 1; next}
  {seen[$1] = $2} END {for (t in ok) {status = (t in seen) ? seen[t] : "NOT BUILT"
    if (status != "PASSED") print t "\t" status}}' \
  "$out/debian/status.tsv" "$out/sicm/status.tsv" | sort)
# The tests `apart` explains, apart, with the reason.
known="" rest=""
while IFS=$'\t' read -r t status; do
  [ -n "$t" ] || continue
  why=""
  for e in "${apart[@]}"; do
    pattern=${e#*|}
    # shellcheck disable=SC2053
    [[ $t == ${pattern%%|*} ]] && why=${e##*|}
  done
  if [ -n "$why" ]; then known="$known$t: $why"$'\n'; else rest="$rest$t"$'\t'"$status"$'\n'; fi
done <<< "$worse"
if [ -n "$known" ]; then
  echo "passing with Debian's memkind, not with libsicm's by design:"
  printf '%s' "$known"
fi
worse=${rest%$'\n'}
if [ -n "$worse" ]; then
  echo "passing with Debian's memkind, not with libsicm's:"
  echo "$worse"
  exit 1
fi
if [ -n "$known" ]; then
  echo "every other test Debian's memkind passes passes with libsicm's"
else
  echo "every test Debian's memkind passes passes with libsicm's"
fi
