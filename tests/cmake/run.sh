#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# run.sh: `make install` of this build into a staging directory, then the
# CMake project next to this script configured with find_package(sicm),
# built and run against it.  A version libsicm does not satisfy must fail.
set -u
src=${SICM_TOP_SRCDIR:?}
b=${SICM_TOP_BUILDDIR:?}
command -v cmake >/dev/null || { echo "SKIP: cmake is not installed (apt-get install cmake)"; exit 77; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
make -s -C "$b" install DESTDIR="$stage" >"$stage/install.log" 2>&1 || { cat "$stage/install.log"; exit 1; }
prefix=$stage$(sed -n 's/^prefix = //p' "$b/Makefile")
config=$(find "$stage" -name sicmConfig.cmake)
echo "installed: ${config#$stage}"
[ -n "$config" ] || exit 1
# A sanitizer build's library needs the sanitizer in the program too.
flags=${SANITIZER_FLAGS:-}
cmake -S "$src/tests/cmake" -B "$stage/build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_Fortran_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >"$stage/cmake.log" 2>&1 ||
  { cat "$stage/cmake.log"; exit 1; }
cmake --build "$stage/build" >"$stage/build.log" 2>&1 || { cat "$stage/build.log"; exit 1; }
# libsicm.so finds libsicm-jemalloc.so.0 through its run path, the prefix,
# which a staged install is not at either (nor has it one where libdir is
# a system directory, as in a distribution's multiarch build).
libdir=$(dirname "$(find "$stage" -name libsicm.so.0 | head -n 1)")
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
out=$("$stage/build/user") || { echo "user program failed: $out"; exit 1; }
echo "$out"
case $out in *", ok") ;; *) exit 1 ;; esac
if grep -q '^SICM_FC = ' "$b/Makefile" && ! grep -q '^SICM_FC = no$' "$b/Makefile"; then
  "$stage/build/user_fortran" || { echo "the Fortran user program was not built or failed"; exit 1; }
fi
# So does libmemkind.so find libsicm.so.0 (tests/install.sh runs all three
# from a real prefix).
"$stage/build/user_hbw" ||
  { echo "the sicm::memkind program was not built or failed"; exit 1; }
if [ -n "${MPI_OPENMPI_RUN:-}${MPI_MPICH_RUN:-}" ]; then
  . "$src/tests/mpi/mpi_env.sh"
  first=$(mpi_flavours | cut -d' ' -f1)
  mpi_run "$first" 60 1 "$stage/build/user_mpi" || { echo "the sicm::mpi program was not built or failed"; exit 1; }
fi
# find_package(sicm 9.0) must not accept 0.x.
mkdir "$stage/v9"
sed 's/find_package(sicm 0.1 /find_package(sicm 9.0 /' "$src/tests/cmake/CMakeLists.txt" >"$stage/v9/CMakeLists.txt"
cp "$src/tests/cmake/user.c" "$src/tests/cmake/user.f90" "$stage/v9/"
if cmake -S "$stage/v9" -B "$stage/v9/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null 2>&1; then
  echo "find_package(sicm 9.0) accepted version 0.x"
  exit 1
fi
echo "find_package(sicm 9.0) refused, as it must"
