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
# passes that ours does not, with its status; exit 1 if there is one.
# With SICM_SUITE_HUGE_PAGES=N (as root, in the guest) each node reserves N
# huge pages of 2 MiB while the tests run, for memkind's hugetlb kinds.
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
    local extra=""
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
      if [ $rc -eq 0 ]; then status=PASSED
      elif [ $rc -ge 124 ]; then status=CRASHED; else status=FAILED; fi
      grep -q '^\[  SKIPPED \]' "$dir/last.log" && status=SKIPPED
      printf '%s\t%s\n' "$t" "$status" >> "$dir/status.tsv"
    done
}

if [ "$step" != run ]; then
  build_one debian "" "-lmemkind -lnuma" || exit 1
  build_one sicm "-I$top/include/sicm_memkind" \
    "-L$b/src/memkind/.libs -Wl,-rpath,$b/src/memkind/.libs -Wl,-rpath,$b/src/.libs -lmemkind -lnuma" ||
    exit 1
fi
[ "$step" = build ] && exit 0
huge_pages() { # huge_pages N: reserve N 2 MiB pages on every node
  for f in /sys/devices/system/node/node*/hugepages/hugepages-2048kB/nr_hugepages; do
    echo "$1" > "$f" || return 1
  done
}
if [ -n "${SICM_SUITE_HUGE_PAGES:-}" ]; then
  huge_pages "$SICM_SUITE_HUGE_PAGES" || { echo "cannot reserve huge pages"; exit 1; }
  trap 'huge_pages 0' EXIT
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
if [ -n "$worse" ]; then
  echo "passing with Debian's memkind, not with libsicm's:"
  echo "$worse"
  exit 1
fi
echo "every test Debian's memkind passes passes with libsicm's"
