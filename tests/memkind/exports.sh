#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# exports.sh: binary compatibility with memkind 1.14.  Every function and
# variable that Debian's memkind headers declare (memkind.h, hbwmalloc.h
# and what they include) and Debian's libmemkind.so.0 exports is exported
# by libsicm's libmemkind.so.0 too; and a program compiled against
# Debian's headers and linked with Debian's library, naming every one of
# them, starts and runs with libsicm's library in its place.  Skipped (77)
# without Debian's libmemkind-dev.
set -eu
src=${SICM_TOP_SRCDIR:?} build=${SICM_TOP_BUILDDIR:?}
ours=$build/src/memkind/.libs
theirs=$(ls /usr/lib/*/libmemkind.so.0 2>/dev/null | head -n 1)
if [ -z "$theirs" ] || [ ! -f /usr/include/memkind.h ] || [ ! -f /usr/include/hbwmalloc.h ]; then
  echo "exports: Debian's memkind (libmemkind-dev) is not installed"
  exit 77
fi
[ -f "$ours/libmemkind.so.0" ] || { echo "exports: $ours/libmemkind.so.0 not built"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# What the headers declare: prototypes from the compiler, variables from
# their `extern` lines.
printf '#include <memkind.h>\n#include <hbwmalloc.h>\n' > "$tmp/all.c"
${CC:-cc} -fsyntax-only -aux-info "$tmp/aux" "$tmp/all.c"
{ grep -E '/usr/include/(memkind|memkind_deprecated|hbwmalloc)\.h' "$tmp/aux" | grep -v ' static ' |
    sed -E 's/.*[ *]([A-Za-z_][A-Za-z0-9_]*) \(.*/\1/'
  cat /usr/include/memkind.h /usr/include/memkind_deprecated.h /usr/include/hbwmalloc.h |
    sed -nE 's/^extern [^(]*[ *]([A-Za-z_][A-Za-z0-9_]*);/\1/p'
} | sort -u > "$tmp/declared"
nm -D --defined-only "$theirs" | awk '{print $NF}' | sort -u > "$tmp/theirs"
nm -D --defined-only "$ours/libmemkind.so.0" | awk '{print $NF}' | sort -u > "$tmp/ours"
comm -12 "$tmp/declared" "$tmp/theirs" > "$tmp/public"
status=0
if comm -23 "$tmp/public" "$tmp/ours" > "$tmp/missing" && [ -s "$tmp/missing" ]; then
  echo "exports: public in memkind 1.14, missing from libsicm's libmemkind:"
  sed 's/^/  /' "$tmp/missing"
  status=1
fi
# Symbol versions: memkind exports its symbols unversioned, and so must
# the drop-in, or a binary linked with either would not bind to the other.
versions() { objdump -T "$1" | grep -v '[*]UND[*]' | awk 'NF >= 6 {print $NF, $(NF-1)}' | sort -u; }
versions "$theirs" | join - "$tmp/public" > "$tmp/theirs_v"
versions "$ours/libmemkind.so.0" | join - "$tmp/public" > "$tmp/ours_v"
if ! cmp -s "$tmp/theirs_v" "$tmp/ours_v"; then
  echo "exports: symbol versions differ from Debian's memkind (< theirs, > ours):"
  diff "$tmp/theirs_v" "$tmp/ours_v" | grep '^[<>]' | sed 's/^/  /'
  status=1
fi
echo "exports: $(wc -l < "$tmp/declared") declared by memkind's headers," \
  "$(wc -l < "$tmp/public") of them exported by Debian's library," \
  "$(comm -12 "$tmp/public" "$tmp/ours" | wc -l) by libsicm's," \
  "$(wc -l < "$tmp/ours_v") with Debian's symbol version (none)"

# A program built as memkind's users build theirs, that names them all.
{
  printf '#include <memkind.h>\n#include <hbwmalloc.h>\n#include <stdio.h>\n#include <string.h>\n'
  printf 'static const volatile void *names[] = {\n'
  sed 's/.*/  (const void *)\&&,/' "$tmp/public"
  printf '};\n'
  cat <<'C'
int main(void) {
  printf("%zu names resolved\n", sizeof names / sizeof names[0]);
  if (memkind_get_version() / 1000 != 1014)
    return 2;
  char *p = memkind_malloc(MEMKIND_DEFAULT, 100);
  if (p == NULL || memkind_detect_kind(p) != MEMKIND_DEFAULT)
    return 3;
  strcpy(p, "memkind");
  memkind_free(NULL, p);
  void *h = NULL;
  int hbw = hbw_check_available();
  if (hbw_posix_memalign(&h, 64, 4096) != 0 && hbw == 0)
    return 4;
  hbw_free(h);
  char msg[MEMKIND_ERROR_MESSAGE_SIZE];
  memkind_error_message(MEMKIND_ERROR_INVALID, msg, sizeof msg);
  printf("runs: %s\n", msg);
  return 0;
}
C
} > "$tmp/prog.c"
if ! ${CC:-cc} -Wno-deprecated-declarations -o "$tmp/prog" "$tmp/prog.c" -lmemkind 2> "$tmp/cc.log"; then
  echo "exports: the program does not build against Debian's memkind:"; cat "$tmp/cc.log"
  exit 1
fi
loaded=$(LD_LIBRARY_PATH="$ours:$build/src/.libs" ldd "$tmp/prog" | awk '/libmemkind/ {print $3}')
case $loaded in
  "$ours"/*) ;;
  *) echo "exports: the program would load $loaded, not libsicm's library"; exit 1 ;;
esac
# A sanitizer build of libsicm needs its runtime loaded first.
preload=$(ldd "$build/src/.libs/libsicm.so" | awk '/libasan|libubsan/ {print $3}' | tr '\n' ':')
if ! ASAN_OPTIONS=detect_leaks=0 LD_PRELOAD=$preload LD_LIBRARY_PATH="$ours:$build/src/.libs" \
     LD_BIND_NOW=1 "$tmp/prog"; then
  echo "exports: the program built with Debian's memkind fails with libsicm's library"
  status=1
fi
exit $status
