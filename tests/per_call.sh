#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# per_call.sh: a position-independent program compiled against sicm.h calls
# the per-allocation functions (those marked SICM_PER_CALL) through its GOT,
# never through a PLT stub, with each compiler the build uses that can.
set -eu
src=${SICM_TOP_SRCDIR:?}
[ "$(uname -m)" = x86_64 ] || { echo "per_call: reads x86-64 assembly"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
functions=$(sed -n 's/^SICM_API SICM_PER_CALL [^(]*[ *]\(sicm_[a-z0-9_]*\)(.*/\1/p' "$src/include/sicm.h")
[ -n "$functions" ] || { echo "per_call: no function in sicm.h is marked SICM_PER_CALL"; exit 1; }
# Each result is passed on, so that no call can be dropped.
{ printf '#include "sicm.h"\nvoid use(void *);\n'
  printf 'void calls(sicm_arena a, void *p) {\n'
  printf '  use(sicm_arena_alloc(a, 8)); use(sicm_arena_aligned_alloc(a, 64, 8));\n'
  printf '  use(sicm_arena_calloc(a, 1, 8)); use(sicm_realloc(p, 8));\n'
  printf '  use(sicm_arena_realloc(a, p, 8)); sicm_free(p); use((void *)sicm_usable_size(p));\n'
  printf '  use(sicm_arena_lookup(p)); use(sicm_alloc(8));\n}\n'
} > "$tmp/calls.c"
for f in $functions; do
  grep -q "$f(" "$tmp/calls.c" || { echo "per_call: $f is not called by this test"; exit 1; }
done
checked=0
for cc in "${CC:-cc}" "${CXX:-c++} -x c++"; do
  # The attribute is GCC's; another compiler keeps the PLT.
  printf '#if !defined(__GNUC__) || defined(__clang__)\n#error not GCC\n#endif\n' |
    $cc -E - >/dev/null 2>&1 || continue
  $cc -O2 -fPIE -S -o "$tmp/calls.s" -I"$src/include" "$tmp/calls.c"
  if grep -E 'call[[:space:]]+sicm_[a-z0-9_]*(@PLT)?$' "$tmp/calls.s"; then
    echo "per_call: $cc calls the function(s) above through the PLT"
    exit 1
  fi
  grep -q 'sicm_arena_alloc@GOTPCREL' "$tmp/calls.s" || { echo "per_call: $cc: no call through the GOT"; exit 1; }
  checked=$((checked + 1))
done
[ "$checked" -gt 0 ] || { echo "per_call: no compiler here honours noplt"; exit 77; }
echo "per_call: $(echo $functions | wc -w) functions called through the GOT, $checked compiler(s)"
