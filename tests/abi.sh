#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# abi.sh: the installed libraries keep the ABI of the last release, whose
# description (libabigail's abidw) is committed in abi/.  abidiff compares
# each built library with it: a removed or re-versioned symbol, or a
# changed type of any exported function or variable (the layout that
# sicm_inline.h reads included), fails; added symbols pass, since a minor
# release may add them (docs/abi.md).  A negative control first shows that
# abidiff sees a changed struct here, so that a quiet run means something.
# `make abi-baseline` (this script with --write) writes abi/ anew, at a
# release only.  Skipped (77) without abigail-tools.
set -eu
# Both sides are abidw's descriptions, made alike: the public headers'
# types only, no paths or locations that differ from build to build.
ABIDW="abidw --drop-private-types --drop-undefined-syms --no-show-locs --no-corpus-path --no-comp-dir-path --type-id-style hash"
write=no; [ "${1:-}" = --write ] && write=yes
src=${SICM_TOP_SRCDIR:?} build=${SICM_TOP_BUILDDIR:?}
command -v abidiff >/dev/null && command -v abidw >/dev/null ||
  { echo "abi: abigail-tools (abidw, abidiff) not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The control: one field more in a struct a function takes must be caught.
for n in 1 2; do
  fields="int a;"; [ "$n" = 2 ] && fields="int a; int b;"
  mkdir -p "$tmp/ctl$n"
  printf 'struct s { %s };\nint f(struct s *p);\n' "$fields" > "$tmp/ctl$n/ctl.h"
  printf '#include "ctl.h"\nint f(struct s *p) { return p->a; }\n' > "$tmp/ctl$n/ctl.c"
  ${CC:-cc} -g -shared -fPIC -o "$tmp/ctl$n/libctl.so" "$tmp/ctl$n/ctl.c"
done
rc=0
abidiff --hd1 "$tmp/ctl1" --hd2 "$tmp/ctl2" "$tmp/ctl1/libctl.so" "$tmp/ctl2/libctl.so" >/dev/null || rc=$?
[ $((rc & 4)) -ne 0 ] || { echo "abi: abidiff missed a changed struct (exit $rc): the check below proves nothing"; exit 1; }

status=0 compared=0
while read -r lib headers; do
  baseline=$src/abi/$(basename "$lib").abi
  [ -f "$build/$lib" ] || { echo "abi: $lib not built here: not compared"; continue; }
  hd=""; [ "$headers" != - ] && hd="--headers-dir $src/$headers"
  if [ "$write" = yes ]; then
    # shellcheck disable=SC2086
    $ABIDW $hd "$build/$lib" > "$baseline" && echo "abi: wrote $baseline" && continue
    exit 1
  fi
  [ -f "$baseline" ] || { echo "abi: no baseline $baseline"; status=1; continue; }
  # shellcheck disable=SC2086
  $ABIDW $hd "$build/$lib" > "$tmp/current.abi" 2> "$tmp/report" ||
    { echo "abi: abidw could not read $lib:"; cat "$tmp/report"; status=1; continue; }
  rc=0
  abidiff --no-added-syms "$baseline" "$tmp/current.abi" > "$tmp/report" 2>&1 || rc=$?
  compared=$((compared + 1))
  if [ $((rc & 1)) -ne 0 ]; then
    echo "abi: abidiff could not compare $lib (exit $rc):"; cat "$tmp/report"; status=1
  elif [ $((rc & 12)) -ne 0 ]; then
    echo "abi: $lib changed the ABI of the last release (exit $rc):"; cat "$tmp/report"; status=1
  else
    echo "abi: $lib keeps the ABI of $(basename "$baseline")"
  fi
done <<EOF
$(grep -v '^#' "$src/abi/libraries")
EOF
[ "$write" = yes ] && exit 0
echo "abi: $compared libraries compared"
[ "$compared" -gt 0 ] || { echo "abi: nothing built to compare"; exit 77; }
exit $status
