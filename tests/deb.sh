#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# deb.sh (make check-deb): libsicm as Debian packages.  Builds the source
# and binary packages from this build's release tarball (tools/build-deb,
# lintian with no error), then installs them into a clean root and uses
# them as a site would: examples built with pkg-config and with CMake
# against the installed headers, a program built against Debian's memkind
# switched to libsicm's, numpy arrays in an arena from python3-sicm,
# sicm-info, an MPI program with libsicm-mpi under Open MPI and MPICH, the
# man pages found by man.  Then it purges the packages and shows that they
# left nothing behind.
#
# The clean root is this machine's own root under an overlay, in a mount
# namespace of its own: it has the packages' dependencies (tools/setup-debian
# installed them) and nothing of libsicm, and every file written in it lands
# in the overlay's upper layer, where a file left after the purge is seen.
# Needs root (mount, chroot); skipped (77) otherwise, or without dpkg-dev,
# debhelper and lintian.
set -u
src=${SICM_TOP_SRCDIR:?} b=${SICM_TOP_BUILDDIR:?}
if [ -n "${SANITIZER_FLAGS:-}" ]; then
  echo "SKIP: a sanitizer build; the packages are built from the release tarball by the plain build"
  exit 77
fi
# CI sets SICM_DEB_REQUIRED=1: there a missing prerequisite fails.
skip() { echo "SKIP: $1"; [ "${SICM_DEB_REQUIRED:-0}" = 1 ] && exit 99; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root for the clean root (mount, chroot)"
unshare --mount sh -c 'mount -t tmpfs tmpfs /mnt' 2>/dev/null ||
  skip "cannot mount in a mount namespace of its own (no CAP_SYS_ADMIN)"
for tool in dpkg-buildpackage dh lintian unshare; do
  command -v $tool >/dev/null || skip "$tool is not installed (tools/setup-debian)"
done
[ -f "$src/debian/control" ] || { echo "SKIP: no debian/ here (a release tarball: the packaging lives in the repository)"; exit 77; }
jemalloc=$(sed -n 's/^JEMALLOC_SOURCE = //p' "$b/Makefile")
case $jemalloc in
  *.tar.gz|*.tar.bz2|*.tar.xz) ;;
  *) skip "this build was not configured with a jemalloc release tarball" ;;
esac
work=$(mktemp -d /tmp/sicm-deb.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "deb: [1/4] make dist, then the packages (tools/build-deb)"
make -s -C "$b" dist >/dev/null 2>&1 || { echo "make dist failed"; exit 1; }
tarball=$(ls -t "$b"/libsicm-*.tar.gz | head -n 1)
DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" "$src/tools/build-deb" "$tarball" "$jemalloc" "$src/debian" "$work/out" ||
  exit 1
debs=$(ls "$work"/out/*.deb | grep -v -- '-dbgsym_')
echo "deb: $(echo "$debs" | wc -l) packages"

# The checks run inside the clean root, from a script in its /tmp.
mkdir -p "$work/in"
cp $debs "$src"/tests/cmake/* "$src/docs/examples/sicm_arena.c" "$work/in/"
cat > "$work/in/checks.sh" <<'CHECKS'
set -u
cd /tmp/sicm-deb
failed=0
check() { # check WHAT COMMAND
  if sh -c "$2" > step.log 2>&1; then echo "ok: $1"; else echo "FAILED: $1"; sed 's/^/  /' step.log | tail -n 20; failed=1; fi
}
export PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HYDRA_LAUNCHER=fork
# Clean: no libsicm that pkg-config, the dynamic linker or Python would
# find instead of the packages' (a make install in /usr/local would be).
if pkg-config --exists sicm || ldconfig -p | grep -q 'libsicm\.so\.0' || python3 -c 'import sicm' 2>/dev/null; then
  echo "FAILED: the clean root already has a libsicm"; exit 1
fi
echo "deb: [2/4] apt-get install of the packages, with the dependencies they declare"
apt-get install -y -qq --no-install-recommends /tmp/sicm-deb/*.deb > install.log 2>&1 || { cat install.log; exit 1; }
dpkg-query -W -f '  ${Package} ${Version}\n' 'libsicm*' 'sicm-tools' 'python3-sicm'
triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
echo "deb: [3/4] the installed packages in use"
check "pkg-config's sicm is the packages' (libdir /usr/lib/$triplet)" \
  "test \"\$(pkg-config --variable=libdir sicm)\" = /usr/lib/$triplet"
check "sicm-info lists devices" "sicm-info | grep -q node"
check "C: pkg-config sicm, against /usr/include" "cc -o c_shared sicm_arena.c \$(pkg-config --cflags --libs sicm) && ./c_shared"
check "C, static: libsicm.a and pkg-config --static sicm" \
  "cc -o c_static sicm_arena.c /usr/lib/$triplet/libsicm.a \$(pkg-config --static --libs sicm | sed 's/-lsicm //') && ./c_static"
check "CMake: find_package(sicm) with sicm::sicm, memkind, fortran, mpi, SICM_PRELOAD_LIBRARY" \
  "cmake -S . -B build > cmake.log && cmake --build build > build.log && ./build/user && ./build/user_hbw &&
   ./build/user_fortran && timeout 60 ./build/user_mpi"
check "memkind: a program built against Debian's memkind runs on libsicm's, by LD_LIBRARY_PATH" \
  "cc -o hbw_debian user_hbw.c -lmemkind && ./hbw_debian &&
   LD_LIBRARY_PATH=/usr/lib/$triplet/sicm/memkind ldd ./hbw_debian | grep -q 'sicm/memkind/libmemkind.so.0' &&
   LD_LIBRARY_PATH=/usr/lib/$triplet/sicm/memkind ldd ./hbw_debian | grep -q 'libsicm.so.0' &&
   LD_LIBRARY_PATH=/usr/lib/$triplet/sicm/memkind ./hbw_debian"
check "Python: import sicm, a numpy array in an arena" \
  "cd / && python3 -c 'import numpy as np, sicm
with sicm.Arena(sicm.best(\"nearest\"), name=\"packaged\") as a:
    x = np.arange(1000)
assert np.core.multiarray.get_handler_name(x) == \"sicm_arena:packaged\" and x.sum() == 499500'"
for mpi in openmpi mpich; do
  check "MPI ($mpi): mpicc.$mpi with pkg-config sicm-mpi-$mpi, mpirun.$mpi -np 2" \
    "mpicc.$mpi -o mpi_$mpi user_mpi.c \$(pkg-config --cflags --libs sicm-mpi-$mpi) &&
     ldd ./mpi_$mpi | grep -q libsicm-mpi-$mpi.so.0 && timeout 120 mpirun.$mpi -np 2 ./mpi_$mpi"
done
check "preload: LD_PRELOAD of pkg-config's preload path maps it" \
  "p=\$(pkg-config --variable=preload sicm) && test -f \"\$p\" &&
   LD_PRELOAD=\"\$p\" cat /proc/self/maps | grep -qF \"\$p\""
check "man finds sicm-info(1), sicm_arena_create(3), sicm(7)" \
  "man -w sicm-info && man -w 3 sicm_arena_create && man -w 7 sicm && MANPAGER=cat man 3 sicm_arena_create | grep -q sicm_arena_create"
echo "deb: [4/4] apt-get purge"
apt-get purge -y -qq $(dpkg-query -W -f '${Package}\n' 'libsicm*' 'sicm-tools' 'python3-sicm' 2>/dev/null) > purge.log 2>&1 ||
  { cat purge.log; failed=1; }
left=$(dpkg-query -W -f '${Package} ${Status}\n' 'libsicm*' 'sicm-tools' 'python3-sicm' 2>/dev/null | grep -v not-installed)
[ -z "$left" ] || { echo "FAILED: still known to dpkg after the purge:"; echo "$left"; failed=1; }
exit $failed
CHECKS

# The clean root: / under an overlay whose upper layer is a tmpfs.
inner=$(cat <<'INNER'
set -u
w=$1
mount -t tmpfs tmpfs "$w/layer" || exit 1
mkdir -p "$w/layer/upper" "$w/layer/work" "$w/root" "$w/lower"
mount --bind / "$w/lower" &&
  mount -t overlay overlay -o "lowerdir=$w/lower,upperdir=$w/layer/upper,workdir=$w/layer/work" "$w/root" || exit 1
r=$w/root
mount -t proc proc "$r/proc" && mount --rbind /sys "$r/sys" && mount --rbind /dev "$r/dev" || exit 1
mount -t tmpfs tmpfs "$r/tmp" && mkdir "$r/tmp/sicm-deb" && cp "$w"/in/* "$r/tmp/sicm-deb/" || exit 1
# The control: a file written in the clean root must show in the upper
# layer, or the search below for files left behind would prove nothing.
mkdir "$r/usr/share/sicm-deb-control" && touch "$r/usr/share/sicm-deb-control/left"
chroot "$r" sh /tmp/sicm-deb/checks.sh
rc=$?
umount "$r/tmp"
# What the packages left: every file of the upper layer, less the records
# that installing and removing anything leaves (dpkg's and apt's state and
# logs, caches, the linker cache, man's index) and the checks' own files.
# A directory counts when the lower root has none of that name.
{ (cd "$w/layer/upper" && find . ! -type d) | sed 's|^\./|/|'
  (cd "$w/layer/upper" && find . -mindepth 1 -type d) | sed 's|^\./|/|' |
    while read -r d; do [ -d "$w/lower$d" ] || echo "$d/"; done
} | sort | grep -v -E '^/(var/lib/dpkg|var/lib/apt|var/log|var/cache|etc/ld\.so\.cache|root/\.cmake|tmp)(/|$)' > "$w/left"
if ! grep -q '^/usr/share/sicm-deb-control/left$' "$w/left" || ! grep -q '^/usr/share/sicm-deb-control/$' "$w/left"; then
  echo "FAILED: the control file and directory are not seen in the upper layer: the purge check proves nothing"; rc=1
fi
grep -v '^/usr/share/sicm-deb-control/' "$w/left" > "$w/left.packages"; mv "$w/left.packages" "$w/left"
if [ -s "$w/left" ]; then
  echo "FAILED: left behind by the packages after the purge:"; sed 's/^/  /' "$w/left"; rc=1
else
  echo "ok: nothing left behind after the purge (the clean root's upper layer holds only dpkg's and apt's records)"
fi
exit $rc
INNER
)
mkdir -p "$work/layer"
unshare --mount --propagation private sh -c "$inner" sh "$work"
rc=$?
[ "$rc" = 0 ] && echo "deb: the packages install, work and purge cleanly"
exit $rc
