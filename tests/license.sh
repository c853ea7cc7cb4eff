#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# license.sh: every source file, header, script, build file and man page of
# the tree carries the SPDX line of LICENSE in its first three lines.  Left
# out: documents (*.md, *.txt but CMakeLists.txt), data (*.xml, *.abi, *.csv,
# *.png), LICENSE and .gitignore themselves, man's .so links (man reads
# a link only when .so is its first line), and three Debian files: two
# whose format has no comments (debian/changelog, debian/source/format)
# and debian/copyright, which states the licenses itself.
set -u
src=${SICM_TOP_SRCDIR:?}
tag="SPDX-License-Identifier: BSD-3-Clause"
cd "$src" || exit 99
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "license.sh: not a git checkout (a release tarball): nothing to list"
  exit 77
fi
grep -q "BSD 3-Clause License" LICENSE || { echo "LICENSE is not BSD-3-Clause"; exit 1; }
missing=0 checked=0
for f in $( (git ls-files; git ls-files --others --exclude-standard) | sort -u); do
  [ -f "$f" ] || continue
  case $f in
    LICENSE|.gitignore|*/.gitignore|*.md|*.xml|*.abi|*.csv|*.png) continue ;;
    debian/changelog|debian/source/format|debian/copyright) continue ;;
    */CMakeLists.txt) ;;
    *.txt) continue ;;
  esac
  case $f in man/*) [ "$(head -c 4 "$f")" = ".so " ] && continue ;; esac
  checked=$((checked + 1))
  if ! head -n 3 "$f" | grep -q "$tag"; then
    echo "no SPDX line: $f"
    missing=$((missing + 1))
  fi
done
echo "$checked files checked, $missing without the SPDX line"
[ "$missing" -eq 0 ]
