#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# spack.sh: the Spack recipe (spack/packages/libsicm/package.py) stays in
# step with the build it drives, and in Spack's style.  Spack itself cannot
# run here (docs/packaging.md says why), so this checks what can be checked
# without it: every configure option the recipe passes is one configure
# takes; the jemalloc release it fetches has the checksum of the tarball
# this build was made from; black and flake8 with the settings of Spack's
# package repository (line length 99; star imports allowed).
set -u
src=${SICM_TOP_SRCDIR:?} b=${SICM_TOP_BUILDDIR:?}
recipe=$src/spack/packages/libsicm/package.py
[ -f "$recipe" ] || { echo "SKIP: no spack/ here (a release tarball)"; exit 77; }
status=0
"$src/configure" --help > "$b/spack-configure-help.txt" 2>&1 || { echo "spack: configure --help failed"; exit 1; }
for opt in $(grep -o -E '"--(with|enable|without|disable)-[a-z-]+' "$recipe" | tr -d '"' | sort -u); do
  if grep -q -- "^ *$opt[=[ ]" "$b/spack-configure-help.txt"; then echo "ok: configure takes $opt"
  else echo "FAILED: the recipe passes $opt, which configure does not list"; status=1; fi
done
for var in $(grep -o -E '"[A-Z_]+=' "$recipe" | tr -d '"=' | sort -u); do
  if grep -q -E "^ +$var( |$)" "$b/spack-configure-help.txt"; then echo "ok: configure takes $var"
  else echo "FAILED: the recipe sets $var, which configure does not list"; status=1; fi
done
rm -f "$b/spack-configure-help.txt"
jemalloc=$(sed -n 's/^JEMALLOC_SOURCE = //p' "$b/Makefile")
case $(basename "${jemalloc:-none}") in
  jemalloc_5.3.0.orig.tar.bz2|jemalloc-5.3.0.tar.bz2)
    sum=$(sha256sum "$jemalloc" | cut -d' ' -f1)
    if grep -q "sha256=\"$sum\"" "$recipe"; then echo "ok: the jemalloc resource's sha256 is that of $jemalloc"
    else echo "FAILED: the recipe's jemalloc sha256 is not $sum ($jemalloc)"; status=1; fi ;;
  *) echo "spack: this build's jemalloc is not the 5.3.0 release tarball: checksum not compared" ;;
esac
if command -v black >/dev/null && command -v flake8 >/dev/null; then
  black -q --check -l 99 "$recipe" && echo "ok: black -l 99" || { echo "FAILED: black -l 99 would reformat the recipe"; status=1; }
  flake8 --max-line-length 99 --extend-ignore E731,F403,F405,F811 "$recipe" && echo "ok: flake8" || status=1
else
  echo "spack: black or flake8 not installed: style not checked"
fi
exit $status
