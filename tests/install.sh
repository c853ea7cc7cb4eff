#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# install.sh (make check-install): the release tarball, as a lab would use
# it.  `make dist`, then as an unprivileged user (made if this runs as
# root) in a fresh directory: configure --prefix=$HOME/sicm with the
# jemalloc release tarball this build used, make, make install; then with
# only what the install gives — pkg-config and CMake find_package(sicm) —
# build and run a C program (shared, and static against libsicm.a), an
# hbwmalloc program, a Fortran program, an MPI program, and load the
# installed libsicm with dlopen.
set -u
src=${SICM_TOP_SRCDIR:?}
b=${SICM_TOP_BUILDDIR:?}
# The release build is not a sanitizer build: the sanitizer builds of CI
# leave it to the plain one.
if [ -n "${SANITIZER_FLAGS:-}" ]; then
  echo "SKIP: a sanitizer build; the plain build runs the install test"
  exit 77
fi
jemalloc=$(sed -n 's/^JEMALLOC_SOURCE = //p' "$b/Makefile")
if [ -z "$jemalloc" ]; then
  echo "SKIP: this build was not configured with a jemalloc release tarball (--with-jemalloc-source)"
  [ "${SICM_DLOPEN_REQUIRED:-0}" = 1 ] && exit 99
  exit 77
fi
for tool in cmake pkg-config; do
  command -v $tool >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done
echo "install: [1/4] make dist"
make -s -C "$b" dist >/dev/null 2>&1 || { echo "make dist failed"; exit 1; }
tarball=$(ls -t "$b"/libsicm-*.tar.gz | head -n 1)
user=$(id -un)
run() { sh -c "$1"; }
if [ "$(id -u)" = 0 ]; then
  user=sicm-install-test
  id "$user" >/dev/null 2>&1 || useradd -m -s /bin/sh "$user" || { echo "useradd failed"; exit 1; }
  run() { runuser -u "$user" -- sh -c "$1"; }
fi
work=$(mktemp -d /tmp/sicm-install.XXXXXX)
chmod 755 "$work"
cp "$tarball" "$jemalloc" "$src"/tests/cmake/* "$src/docs/examples/sicm_arena.c" "$src/tests/test_dlopen.c" "$src/tests/c_check.h" "$work/"
chown -R "$user" "$work"
trap 'rm -rf "$work"' EXIT
home="$work/home"
je="$work/$(basename "$jemalloc")"
prefix="$home/sicm"
# The Python package too, where Debian's python3 has numpy.
python=""
/usr/bin/python3 -c 'import numpy, setuptools, pip' 2>/dev/null && python="--enable-python PYTHON_NUMPY=/usr/bin/python3"
echo "install: [2/4] as $user: configure --prefix=$prefix --with-jemalloc-source=$(basename "$jemalloc") $python, make, make install"
run "set -e; mkdir -p '$home'; cd '$work'; tar xzf '$(basename "$tarball")'; cd libsicm-*/
  ./configure --quiet --prefix='$prefix' --with-jemalloc-source='$je' $python > '$work/configure.log' 2>&1
  make -j$(nproc) > '$work/make.log' 2>&1
  make install > '$work/install.log' 2>&1" || {
  tail -n 30 "$work"/configure.log "$work"/make.log "$work"/install.log 2>/dev/null; exit 1; }
failed=0
check() { # check WHAT COMMAND: runs COMMAND as the user with the install's environment
  if run "cd '$work' && export PKG_CONFIG_PATH='$prefix/lib/pkgconfig' HOME='$home' && $2" > "$work/step.log" 2>&1; then
    echo "ok: $1"
  else
    echo "FAILED: $1"; sed 's/^/  /' "$work/step.log" | tail -n 20; failed=1
  fi
}
echo "install: [3/4] programs built with pkg-config"
check "sicm-info --version" "'$prefix/bin/sicm-info' --version | grep -q 'libsicm'"
check "sicm-stats --help" "'$prefix/bin/sicm-stats' --help | grep -q 'SICM_STATS'"
check "C, shared: pkg-config sicm" \
  "cc -o c_shared sicm_arena.c \$(pkg-config --cflags --libs sicm) -Wl,-rpath,'$prefix/lib' && ./c_shared"
check "C, static: libsicm.a and pkg-config --static sicm" \
  "cc -o c_static sicm_arena.c \$(pkg-config --cflags sicm) '$prefix/lib/libsicm.a' \
     \$(pkg-config --static --libs sicm | sed 's/-lsicm //') && ./c_static && ! ldd ./c_static | grep -q libsicm"
check "hbwmalloc program: pkg-config sicm-memkind" \
  "cc -o hbw user_hbw.c \$(pkg-config --cflags --libs sicm-memkind) && ./hbw"
if [ -f "$prefix/lib/pkgconfig/sicm-fortran.pc" ]; then
  check "Fortran: pkg-config sicm-fortran, with its compiler" \
    "\$(pkg-config --variable=fc sicm-fortran) -o f user.f90 \$(pkg-config --cflags --libs sicm-fortran) \
       -Wl,-rpath,'$prefix/lib' && ./f"
fi
# libsicm-mpi of each MPI built, by its wrapper and the install's .pc file.
for flavour in openmpi mpich; do
  case $flavour in openmpi) launcher=${MPI_OPENMPI_RUN:-} ;; mpich) launcher=${MPI_MPICH_RUN:-} ;; esac
  [ -n "$launcher" ] || continue
  base=$(basename "$launcher") && suffix=${base#mpirun} && [ "$suffix" != "$base" ] || suffix=${base#mpiexec}
  wrapper=$(dirname "$launcher")/mpicc$suffix
  check "MPI ($flavour): $(basename "$wrapper") and pkg-config sicm-mpi-$flavour" \
    "'$wrapper' -o mpi_$flavour user_mpi.c \$(pkg-config --cflags --libs sicm-mpi-$flavour) \
       -Wl,-rpath,'$prefix/lib' && HYDRA_LAUNCHER=fork OMPI_MCA_plm_rsh_agent= \
       timeout 60 '$launcher' -np 1 ./mpi_$flavour"
done
if [ -n "$python" ]; then
  check "Python: import sicm from the install, an array in an arena" \
    "PYTHONPATH=\$(echo '$prefix'/lib/python3*/site-packages) /usr/bin/python3 -c 'import numpy as np, sicm
with sicm.Arena(sicm.best(\"nearest\"), name=\"installed\") as a:
    x = np.arange(1000)
assert np.core.multiarray.get_handler_name(x) == \"sicm_arena:installed\" and x.sum() == 499500'"
  check "Python: pip install --no-build-isolation of the tarball's python/, found by pkg-config" \
    "cp -R libsicm-*/python pkg && /usr/bin/python3 -m pip install -q --no-build-isolation --no-deps --no-index \
       --no-cache-dir --disable-pip-version-check --target='$work/pip' ./pkg && cd / && \
     PYTHONPATH='$work/pip' /usr/bin/python3 -c 'import sicm; assert sicm.devices()'"
fi
check "dlopen of the installed libsicm.so" \
  "cc -DSICM_PRIVATE_JEMALLOC -I'$prefix/include' -o dl test_dlopen.c -ldl && ./dl '$prefix/lib'"
echo "install: [4/4] a CMake project with find_package(sicm)"
check "CMake: sicm::sicm, sicm::memkind, sicm::fortran, sicm::mpi, SICM_PRELOAD_LIBRARY" \
  "cmake -S . -B build -DCMAKE_PREFIX_PATH='$prefix' -DCMAKE_BUILD_RPATH='$prefix/lib' && cmake --build build && \
   ./build/user && ./build/user_hbw && { [ ! -f build/user_fortran ] || ./build/user_fortran; } &&
   { [ ! -f build/user_mpi ] || OMPI_MCA_plm_rsh_agent= timeout 60 ./build/user_mpi; }"
[ "$failed" = 0 ] && echo "install: every program built from the install runs"
exit $failed
