#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# exports.sh: libsicm.so exports exactly the functions and variables its
# installed headers declare — no internal symbol leaks out, and no declared function is missing.
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
nm -D --defined-only "$lib" | awk '{print $NF}' | grep -v '^__odr_asan\.' | sort -u > "$tmp/exported"

status=0
if ! comm -13 "$tmp/declared" "$tmp/exported" > "$tmp/extra" || [ -s "$tmp/extra" ]; then
  echo "exports: exported but not declared in the public headers:"; sed 's/^/  /' "$tmp/extra"
  status=1
fi
if ! comm -23 "$tmp/declared" "$tmp/exported" > "$tmp/missing" || [ -s "$tmp/missing" ]; then
  echo "exports: declared in the public headers but not exported:"; sed 's/^/  /' "$tmp/missing"
  status=1
fi
echo "exports: $(wc -l < "$tmp/declared") declared, $(wc -l < "$tmp/exported") exported"
exit $status
