#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# run.sh MODE: the Python package `sicm` (python/), built against this
# build tree's libsicm into $build/python-build/lib (MODE build: only that),
# then
#   api    its own tests (tests/python/test_sicm.py), on the host;
#   numpy  numpy's own test suite with every array of the test process in a
#          libsicm arena (tests/python/numpy_in_arena.py), `quick` a subset
#          of it, `full` numpy.core and numpy.lib whole;
#   guest  placement and migration where they are real (run in the guest).
# Debian's python3 with python3-numpy, -pytest and -hypothesis; exit 77
# (skip) without them unless SICM_PYTHON_REQUIRED=1.
set -u
mode=${1:?usage: run.sh build|api|numpy-quick|numpy-full|guest}
src=${SICM_TOP_SRCDIR:?}
b=${SICM_TOP_BUILDDIR:?}
python=${SICM_PYTHON:-/usr/bin/python3}
if ! "$python" -c 'import numpy, pytest, hypothesis, setuptools' 2>/dev/null; then
  echo "SKIP: $python lacks numpy, pytest, hypothesis or setuptools" \
    "(Debian: apt-get install python3-numpy python3-pytest python3-hypothesis python3-setuptools)"
  [ "${SICM_PYTHON_REQUIRED:-0}" = 1 ] && exit 99
  exit 77
fi
out=$b/python-build
# The extension, built once per tree; a build racing another waits for it.
mkdir -p "$out"
(
  flock 9
  cd "$src/python" &&
    SICM_INCLUDE_DIR=$src/include SICM_LIBRARY_DIR=$b/src/.libs \
      "$python" setup.py -q build_ext --build-lib "$out/lib" --build-temp "$out/tmp" >"$out/build.log" 2>&1 &&
    cp -r sicm/__init__.py "$out/lib/sicm/"
) 9>"$out/.lock" || { cat "$out/build.log"; echo "FAIL: the extension did not build"; exit 1; }
[ "$mode" = build ] && exit 0
export PYTHONPATH=$out/lib:$src/tests/python
export PYTHONDONTWRITEBYTECODE=1
# A sanitizer build of libsicm needs its runtimes loaded first.
preload=$(ldd "$b/src/.libs/libsicm.so" | awk '/libasan|libubsan/ {print $3}' | tr '\n' ':')
if [ -n "$preload" ]; then
  export LD_PRELOAD=$preload
  export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
fi
# Tests run in a directory of their own: numpy's write and compile files there.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
pytest() { "$python" -m pytest -p no:cacheprovider -q "$@"; }
case $mode in
api) pytest "$src/tests/python/test_sicm.py" ;;
# numpy's tests for array creation, copying, resizing, pickling, ufuncs
# and memory policy: what allocates array data.
numpy-quick) pytest -p numpy_in_arena --pyargs numpy.core.tests.test_multiarray \
  numpy.core.tests.test_mem_policy numpy.core.tests.test_numeric numpy.lib.tests.test_function_base \
  -m "not slow" ;;
# The whole of numpy.core and numpy.lib, on every CPU when pytest-xdist is
# there.  A sanitizer build leaves it to the plain one (its make check runs
# the quick subset).
numpy-full)
  if [ -n "$preload" ]; then
    echo "SKIP: a sanitizer build; the plain build runs numpy's whole suite"
    exit 77
  fi
  workers=""
  "$python" -c 'import xdist' 2>/dev/null && workers="-n $(nproc)"
  # Left out on every machine alike: TestHistogram.test_big_arrays needs
  # more memory than a test machine has, with numpy's own allocator too; and
  # TestLogspace.test_start_stop_array asserts bit-equal results of two
  # computations whose SIMD path depends on where malloc put the data, which
  # only glibc's placement meets (it fails with Debian's jemalloc, tcmalloc
  # or mimalloc as the process malloc, no arena involved).
  # shellcheck disable=SC2086
  pytest -p numpy_in_arena $workers --pyargs numpy.core numpy.lib \
    -k 'not (TestHistogram and test_big_arrays) and not (TestLogspace and test_start_stop_array)' ;;
guest) "$python" "$src/tests/python/guest_placement.py" ;;
*) echo "run.sh: unknown mode $mode"; exit 2 ;;
esac
