#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# man.sh: the man pages are those tools/mkman.py writes from the public
# headers now (not stale), every public function has a page that `man`
# finds, and every page renders without a groff warning.
set -u
src=${SICM_TOP_SRCDIR:?}
version=$(sed -n 's/^AC_INIT(\[libsicm\], \[\([^]]*\)\].*/\1/p' "$src/configure.ac")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
SICM_TOP_SRCDIR=$src python3 "$src/tools/mkman.py" "$version" "$tmp" || exit 1
if ! diff -r "$tmp/man3" "$src/man/man3" >"$tmp/diff" || ! cmp -s "$tmp/pages.am" "$src/man/pages.am" ||
   ! diff "$tmp/man7/sicm.7" "$src/man/man7/sicm.7" >>"$tmp/diff"; then
  head -40 "$tmp/diff"
  echo "man/ is stale: run tools/mkman.py $version man (from the top of the source tree)"
  failed=1
fi
functions=$(sed -n 's/^SICM_API [^(]*[ *]\(sicm_[a-z0-9_]*\)(.*/\1/p' "$src"/include/sicm*.h | sort -u)
count=0
for f in $functions; do
  count=$((count + 1))
  if [ ! -f "$src/man/man3/$f.3" ]; then
    echo "no man page for $f"
    failed=1
  elif command -v man >/dev/null && ! MANPATH=$src/man man -w "$f" >/dev/null 2>&1; then
    echo "man does not find $f"
    failed=1
  fi
done
echo "$count public functions, each with a page"
# Every environment variable the libraries read has its entry in sicm(7).
variables=$(grep -rhoE '(getenv|sc_env_[a-z]+)\("[A-Z_]+"' "$src/src" | sed 's/.*("//; s/"$//' | sort -u)
for v in $variables; do
  grep -q "^## $v\$" "$src/docs/sicm.7.txt" || { echo "sicm(7) does not document $v"; failed=1; }
done
echo "$(echo $variables | wc -w) environment variables, each in sicm(7)"
if command -v groff >/dev/null; then
  for page in "$src"/man/man3/*.3 "$src"/man/man1/*.1 "$src"/man/man7/*.7; do
    warnings=$(cd "$src/man" && groff -man -Tutf8 -ww -z "$page" 2>&1)
    [ -z "$warnings" ] || { echo "$warnings"; failed=1; }
  done
  echo "every page renders without a warning"
fi
exit $failed
