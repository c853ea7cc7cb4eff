# SPDX-License-Identifier: BSD-3-Clause
# sicm_deps.m4: dependency checks.  A required one stops configure with the
# Debian package to install; an optional one warns, names what it disables
# and sets the HAVE_<VARIABLE> conditional.  Both look up pkg-config first.

# SICM_REQUIRE_PKG(VARIABLE, MODULES, DEBIAN-PACKAGE)
AC_DEFUN([SICM_REQUIRE_PKG], [
  PKG_CHECK_MODULES([$1], [$2], [],
    [AC_MSG_ERROR([$2 not found (pkg-config). On Debian/Ubuntu: apt-get install $3])])
])

# SICM_REQUIRE_LIB(VARIABLE, LIBRARY, HEADER, FUNCTION, DEBIAN-PACKAGE)
# For a library that may ship no .pc file: falls back to a header and link check.
AC_DEFUN([SICM_REQUIRE_LIB], [
  PKG_CHECK_MODULES([$1], [$2], [], [
    AC_CHECK_HEADER([$3], [],
      [AC_MSG_ERROR([$3 not found. On Debian/Ubuntu: apt-get install $5])])
    AC_CHECK_LIB([$2], [$4], [$1_LIBS="-l$2"],
      [AC_MSG_ERROR([lib$2 not found. On Debian/Ubuntu: apt-get install $5])])
    AC_SUBST([$1_LIBS])
  ])
])

# SICM_OPTIONAL(VARIABLE, MODULES, C++-HEADER, DEBIAN-PACKAGES, WHAT-IS-DISABLED)
# Found through pkg-config MODULES, or, for header-only packages that ship no
# .pc file (Boost), when MODULES is empty, through C++-HEADER.
AC_DEFUN([SICM_OPTIONAL], [
  m4_ifval([$2],
    [PKG_CHECK_MODULES([$1], [$2], [sicm_have_$1=yes], [sicm_have_$1=no])],
    [AC_LANG_PUSH([C++])
     AC_CHECK_HEADER([$3], [sicm_have_$1=yes], [sicm_have_$1=no])
     AC_LANG_POP([C++])])
  AS_IF([test "x$sicm_have_$1" = xno],
    [AC_MSG_WARN([m4_default([$2], [$3]) not found: $5 disabled. On Debian/Ubuntu: apt-get install $4])])
  AM_CONDITIONAL([HAVE_$1], [test "x$sicm_have_$1" = xyes])
])

# SICM_PTHREAD: pthreads through the compiler's -pthread flag.
AC_DEFUN([SICM_PTHREAD], [
  AC_CHECK_HEADER([pthread.h], [], [AC_MSG_ERROR([pthread.h not found: install libc6-dev])])
  PTHREAD_CFLAGS="-pthread"
  PTHREAD_LIBS="-pthread"
  AC_SUBST([PTHREAD_CFLAGS])
  AC_SUBST([PTHREAD_LIBS])
])

# SICM_JEMALLOC: the jemalloc libsicm is built on, in this order:
#   --with-jemalloc-source=PATH  a jemalloc release tarball or unpacked release
#                                tree: `make` builds the private jemalloc in
#                                the build tree (tools/build-jemalloc);
#   --with-jemalloc=DIR          a private build already made there;
#   --with-jemalloc=system       the system's libjemalloc (not dlopen-safe);
#   neither: the tarball tools/setup-debian fetched into
#   /usr/local/src/sicm, else a private build in /usr/local/lib/sicm-jemalloc,
#   else the system's, which the summary says plainly.
# The private build is linked statically, its symbols prefixed (sicm_je_),
# its TLS dlopen-safe; libsicm.a carries it once installed.
AC_DEFUN([SICM_JEMALLOC_SUPPORTED], [5.3])
AC_DEFUN([SICM_JEMALLOC], [
  AC_ARG_WITH([jemalloc-source],
    [AS_HELP_STRING([--with-jemalloc-source=PATH],
      [build the private jemalloc from a jemalloc ]SICM_JEMALLOC_SUPPORTED[ release tarball or unpacked tree, as part of make])],
    [], [with_jemalloc_source=])
  AC_ARG_WITH([jemalloc],
    [AS_HELP_STRING([--with-jemalloc=DIR|system],
      [a private jemalloc already built in DIR (tools/build-jemalloc SOURCE DIR), or the system's (cannot be loaded with dlopen)])],
    [], [with_jemalloc=auto])
  sicm_je_source=$with_jemalloc_source
  sicm_je_dir=
  sicm_je_kind=system
  AS_CASE([$with_jemalloc],
    [auto|yes|private],
      [AS_IF([test -z "$sicm_je_source"],
        [for f in /usr/local/src/sicm/jemalloc_*.orig.tar.*; do
           AS_IF([test -f "$f"], [sicm_je_source=$f])
         done])
       AS_IF([test -z "$sicm_je_source" && test -f /usr/local/lib/sicm-jemalloc/lib/libjemalloc_pic.a],
         [sicm_je_dir=/usr/local/lib/sicm-jemalloc])],
    [system|no], [AS_IF([test -n "$sicm_je_source"],
      [AC_MSG_ERROR([--with-jemalloc=system and --with-jemalloc-source both given])])],
    [sicm_je_dir=$with_jemalloc])
  AS_IF([test -n "$sicm_je_source"], [
    AS_IF([test -d "$sicm_je_source"],
      [sicm_je_version=`cat "$sicm_je_source/VERSION" 2>/dev/null`],
      [AS_IF([test -f "$sicm_je_source"], [],
         [AC_MSG_ERROR([--with-jemalloc-source=$sicm_je_source: no such file or directory])])
       sicm_je_version=`tar -xOf "$sicm_je_source" --wildcards '*/VERSION' 2>/dev/null | head -n 1`])
    sicm_je_version=`echo "$sicm_je_version" | cut -d- -f1`
    AS_IF([test -z "$sicm_je_version"],
      [AC_MSG_ERROR([$sicm_je_source is not a jemalloc release tarball or tree (no VERSION file)])])
    AS_CASE([$sicm_je_version],
      [SICM_JEMALLOC_SUPPORTED|SICM_JEMALLOC_SUPPORTED.*], [],
      [AC_MSG_WARN([jemalloc $sicm_je_version: libsicm supports ]SICM_JEMALLOC_SUPPORTED[.x; another version may not build or behave])])
    sicm_je_source=`cd "\`dirname "$sicm_je_source"\`" && pwd`/`basename "$sicm_je_source"`
    sicm_je_dir=`pwd`/jemalloc
    sicm_je_kind=source
  ])
  AS_IF([test "$sicm_je_kind" != source && test -n "$sicm_je_dir"], [
    AS_IF([test -f "$sicm_je_dir/lib/libjemalloc_pic.a" && test -f "$sicm_je_dir/include/jemalloc/jemalloc.h"], [],
      [AC_MSG_ERROR([no private jemalloc in $sicm_je_dir: run tools/build-jemalloc SOURCE $sicm_je_dir, or give --with-jemalloc-source])])
    sicm_je_version=`sed -n 's/^#define JEMALLOC_VERSION "\([[0-9.]]*\).*/\1/p' "$sicm_je_dir/include/jemalloc/jemalloc.h"`
    sicm_je_kind=private
  ])
  AS_IF([test "$sicm_je_kind" = system], [
    SICM_REQUIRE_PKG([JEMALLOC], [jemalloc >= 5.2], [libjemalloc-dev])
    sicm_jemalloc_pc="jemalloc"
    sicm_je_private_libs=""
    sicm_je_summary="the system's: libsicm.so will NOT load with dlopen, so the memkind-compatible library will not serve OpenMP runtimes (LLVM's libomp loads it with dlopen); give --with-jemalloc-source=TARBALL"
  ], [
    JEMALLOC_CFLAGS="-I$sicm_je_dir/include"
    JEMALLOC_LIBS="-L$sicm_je_dir/lib -ljemalloc_pic -lm"
    AC_SUBST([JEMALLOC_CFLAGS])
    AC_SUBST([JEMALLOC_LIBS])
    sicm_jemalloc_pc=""
    sicm_je_private_libs="-lm"
    AC_DEFINE([SICM_JEMALLOC_PRIVATE_BUILD], [1],
              [jemalloc is libsicm's own build, whose options libsicm sets])
    AS_IF([test "$sicm_je_kind" = source],
      [sicm_je_summary="private $sicm_je_version, built by make from $sicm_je_source (dlopen-safe)"],
      [sicm_je_summary="private $sicm_je_version, built in $sicm_je_dir (dlopen-safe)"])
  ])
  AC_SUBST([JEMALLOC_SOURCE], [$sicm_je_source])
  AC_SUBST([JEMALLOC_DIR], [$sicm_je_dir])
  AC_SUBST([SICM_JEMALLOC_PC], [$sicm_jemalloc_pc])
  AC_SUBST([SICM_JEMALLOC_PRIVATE_LIBS], [$sicm_je_private_libs])
  AM_CONDITIONAL([PRIVATE_JEMALLOC], [test "$sicm_je_kind" != system])
  AM_CONDITIONAL([JEMALLOC_FROM_SOURCE], [test "$sicm_je_kind" = source])
  AC_MSG_NOTICE([jemalloc: $sicm_je_summary])
])

# SICM_MPI_PROBE(WRAPPER): sets sicm_mpi_flavour (openmpi, mpich or empty)
# from the macros WRAPPER's mpi.h defines, and sicm_mpi_cflags and
# sicm_mpi_libs from what `WRAPPER -show` prints (Open MPI's and MPICH's
# wrappers both take -show).
AC_DEFUN([SICM_MPI_PROBE], [
  sicm_mpi_flavour=
  sicm_mpi_cflags=
  sicm_mpi_libs=
  printf '#include <mpi.h>\n#if defined(OPEN_MPI)\nsicm_flavour=openmpi\n#elif defined(MPICH_VERSION) || defined(MPICH)\nsicm_flavour=mpich\n#endif\n' > conftest_mpi.c
  AS_IF([$1 -E conftest_mpi.c > conftest_mpi.i 2>&AS_MESSAGE_LOG_FD],
    [sicm_mpi_flavour=`sed -n 's/^sicm_flavour=//p' conftest_mpi.i`])
  rm -f conftest_mpi.c conftest_mpi.i
  AS_IF([test -n "$sicm_mpi_flavour"], [
    set dummy `$1 -show 2>/dev/null`
    shift; shift
    for flag in "$[@]"; do
      AS_CASE([$flag],
        [-I*|-D*], [sicm_mpi_cflags="$sicm_mpi_cflags $flag"],
        [-L*|-l*|-Wl,*], [sicm_mpi_libs="$sicm_mpi_libs $flag"],
        [-pthread], [sicm_mpi_cflags="$sicm_mpi_cflags $flag"; sicm_mpi_libs="$sicm_mpi_libs $flag"])
    done
  ])
])

# SICM_MPI: the MPIs libsicm-mpi is built for, one library each
# (libsicm-mpi-openmpi.so, libsicm-mpi-mpich.so: a PMPI library is tied to
# its MPI's ABI).  --with-mpi=LIST takes openmpi, mpich or an installation
# DIR (its bin/mpicc), comma-separated; by default every MPI found: MPICC
# (default mpicc), then Debian's mpicc.openmpi and mpicc.mpich.  MPICH-ABI
# MPIs (Intel MPI, Cray MPICH) build as mpich.  Each MPI's launcher is the
# mpirun beside its wrapper, with the wrapper's suffix.
AC_DEFUN([SICM_MPI], [
  AC_ARG_VAR([MPICC], [MPI C compiler wrapper to look at first (default: mpicc)])
  AC_ARG_WITH([mpi],
    [AS_HELP_STRING([--with-mpi=LIST],
      [MPIs to build libsicm-mpi for: openmpi, mpich or an installation DIR, comma-separated (default: every one found; no: none)])],
    [], [with_mpi=auto])
  # Candidates as WRAPPER=FLAVOUR-WANTED (any: whichever it is).
  sicm_mpi_wrappers=
  AS_CASE([$with_mpi],
    [auto|yes], [sicm_mpi_wrappers="${MPICC:-mpicc}=any mpicc.openmpi=any mpicc.mpich=any"],
    [no], [],
    [for item in `echo "$with_mpi" | tr ',' ' '`; do
       AS_CASE([$item],
         [openmpi|mpich], [sicm_mpi_wrappers="$sicm_mpi_wrappers mpicc.$item=$item ${MPICC:-mpicc}=$item"],
         [AS_IF([test -x "$item/bin/mpicc"], [sicm_mpi_wrappers="$sicm_mpi_wrappers $item/bin/mpicc=any"],
            [AC_MSG_ERROR([--with-mpi: $item is neither openmpi, mpich nor a directory with bin/mpicc])])])
     done])
  AS_IF([test -n "$MPICC" && test "x$with_mpi" != xno && ! command -v "$MPICC" >/dev/null 2>&1],
    [AC_MSG_WARN([MPICC=$MPICC: no such program; looking for other MPI wrappers])])
  sicm_mpi_built=
  sicm_mpi_none_why="no MPI found"
  AS_IF([test "x$with_mpi" = xno], [sicm_mpi_none_why="--without-mpi"])
  for sicm_candidate in $sicm_mpi_wrappers; do
    sicm_w=`echo "$sicm_candidate" | sed 's/=[[^=]]*$//'`
    sicm_want=`echo "$sicm_candidate" | sed 's/.*=//'`
    sicm_wpath=`command -v "$sicm_w" 2>/dev/null` || continue
    SICM_MPI_PROBE([$sicm_wpath])
    AS_IF([test -z "$sicm_mpi_flavour"], [continue])
    AS_CASE([" $sicm_mpi_built "], [*" $sicm_mpi_flavour "*], [continue])
    AS_IF([test "$sicm_want" != any && test "$sicm_want" != "$sicm_mpi_flavour"], [continue])
    sicm_wdir=`dirname "$sicm_wpath"`
    sicm_wsuffix=`basename "$sicm_wpath" | sed -n 's/^mpicc//p'`
    sicm_run="$sicm_wdir/mpirun$sicm_wsuffix"
    AS_IF([test -x "$sicm_run"], [], [sicm_run="$sicm_wdir/mpiexec$sicm_wsuffix"])
    AS_CASE([$sicm_mpi_flavour],
      [openmpi], [MPI_OPENMPI_CFLAGS=$sicm_mpi_cflags; MPI_OPENMPI_LIBS=$sicm_mpi_libs; MPI_OPENMPI_RUN=$sicm_run],
      [mpich], [MPI_MPICH_CFLAGS=$sicm_mpi_cflags; MPI_MPICH_LIBS=$sicm_mpi_libs; MPI_MPICH_RUN=$sicm_run])
    sicm_mpi_built="$sicm_mpi_built $sicm_mpi_flavour"
    AC_MSG_NOTICE([libsicm-mpi-$sicm_mpi_flavour: $sicm_wpath, launcher $sicm_run])
  done
  AS_IF([test "x$with_mpi" != xauto && test "x$with_mpi" != xno && test -z "$sicm_mpi_built"],
    [AC_MSG_ERROR([--with-mpi=$with_mpi: no such MPI found])])
  AS_IF([test -z "$sicm_mpi_built" && test "x$with_mpi" != xno],
    [AC_MSG_WARN([no MPI found (mpicc, mpicc.openmpi, mpicc.mpich): libsicm-mpi and its example are not built. On Debian/Ubuntu: apt-get install libopenmpi-dev openmpi-bin, or libmpich-dev mpich])])
  AC_SUBST([MPI_OPENMPI_CFLAGS])
  AC_SUBST([MPI_OPENMPI_LIBS])
  AC_SUBST([MPI_OPENMPI_RUN])
  AC_SUBST([MPI_MPICH_CFLAGS])
  AC_SUBST([MPI_MPICH_LIBS])
  AC_SUBST([MPI_MPICH_RUN])
  AC_SUBST([SICM_MPI_BUILT], [`echo $sicm_mpi_built`])
  AM_CONDITIONAL([HAVE_MPI_OPENMPI], [test -n "$MPI_OPENMPI_RUN"])
  AM_CONDITIONAL([HAVE_MPI_MPICH], [test -n "$MPI_MPICH_RUN"])
  AM_CONDITIONAL([HAVE_MPI], [test -n "$sicm_mpi_built"])
])
