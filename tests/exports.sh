#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# exports.sh: libsicm.so exports exactly the functions and variables its
# installed headers declare — no internal symbol leaks out, and no declared function is missing —
# each with a symbol version, and src/libsicm.map names exactly that set.
# The declarations come from the compiler (-aux-info lists every prototype a
# translation unit sees), so a declaration without SICM_API is caught too.
set -eu
src=${SICM_TOP_SRCDIR:?} build=${SICM_TOP_BUILDDIR:?}
lib=$build/src/.libs/libsicm.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -f "$lib" ] || { echo "exports: $lib not built (shared libraries disabled?)"; exit 77; }

printf '#include "sicm.h"\n' > "$tmp/all.c"
${CC:-cc} -fsyntax-only -aux-info "$tmp/aux" -I"$src/include" "$tmp/all.c"
# Functions (the header's static inline ones are not exported), then the
# variables the headers declare `SICM_API extern`.
{ grep "$src/include/" "$tmp/aux" | grep -v ' static ' |
    sed -E 's/.*[ *]([A-Za-z_][A-Za-z0-9_]*) \(.*/\1/'
  cat "$src"/include/*.h | sed -nE 's/^SICM_API extern .*[ *]([A-Za-z_][A-Za-z0-9_]*);/\1/p'
} | sort -u > "$tmp/declared"
# AddressSanitizer adds an ODR indicator (__odr_asan.NAME) for each
# exported variable; it is the instrumentation's, not an export of ours.
# (The version nodes are exported too, as absolute symbols: not counted.)
nm -D --defined-only "$lib" | awk '$2 != "A" {sub(/@.*/, "", $NF); print $NF}' | grep -v '^__odr_asan\.' | sort -u > "$tmp/exported"

status=0
if ! comm -13 "$tmp/declared" "$tmp/exported" > "$tmp/extra" || [ -s "$tmp/extra" ]; then
  echo "exports: exported but not declared in the public headers:"; sed 's/^/  /' "$tmp/extra"
  status=1
fi
if ! comm -23 "$tmp/declared" "$tmp/exported" > "$tmp/missing" || [ -s "$tmp/missing" ]; then
  echo "exports: declared in the public headers but not exported:"; sed 's/^/  /' "$tmp/missing"
  status=1
fi
# Every export carries a version of the map (none is left unversioned),
# and the map lists what the headers declare, no more and no less.
objdump -T "$lib" | grep -v '[*]UND[*]' | awk 'NF >= 6 && ($2 == "g" || $2 == "w") {print $(NF-1), $NF}' |
  grep -v ' __odr_asan\.' | awk '$1 !~ /^LIBSICM_[0-9.]+$/' > "$tmp/unversioned" || true
if [ -s "$tmp/unversioned" ]; then
  echo "exports: exported without a LIBSICM_ symbol version:"; sed 's/^/  /' "$tmp/unversioned"
  status=1
fi
sed -n '/global:/,/local:/p' "$src/src/libsicm.map" | sed -nE 's/^ *([A-Za-z_][A-Za-z0-9_]*);$/\1/p' | sort -u > "$tmp/mapped"
if ! cmp -s "$tmp/mapped" "$tmp/declared"; then
  echo "exports: src/libsicm.map differs from the public headers (< map, > headers):"
  diff "$tmp/mapped" "$tmp/declared" | grep '^[<>]' | sed 's/^/  /'
  status=1
fi
echo "exports: $(wc -l < "$tmp/declared") declared, $(wc -l < "$tmp/exported") exported," \
  "$(wc -l < "$tmp/mapped") in src/libsicm.map"
exit $status
