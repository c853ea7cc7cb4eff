# SPDX-License-Identifier: BSD-3-Clause
# guest_common.sh: what the preload's guest suites (guest.sh, shm_guest.sh)
# share, sourced by both: where the build is, the skip under a sanitizer
# (its runtime owns malloc and must come first), a scratch directory and
# one check that prints its verdict and keeps going.
b=${SICM_TOP_BUILDDIR:?}
src=${SICM_TOP_SRCDIR:-$b}
lib=$b/src/preload/.libs/libsicm-preload.so
if ldd "$b/src/.libs/libsicm.so" | grep -q 'libasan\|libtsan'; then
  echo "SKIP: sanitizer build (its runtime owns malloc)"
  exit 77
fi
failed=0
tmp=$(mktemp -d)
expect() { # expect WHAT COMMAND...
  what=$1
  shift
  if "$@"; then echo "  ok: $what"; else echo "  FAILED: $what"; failed=1; fi
}
