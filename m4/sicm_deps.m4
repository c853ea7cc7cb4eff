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

# SICM_JEMALLOC: the jemalloc libsicm is built on.  --with-jemalloc=private
# (or a directory) links the private build of tools/build-jemalloc
# statically: dlopen-safe TLS, prefixed symbols.  --with-jemalloc=system
# links Debian's libjemalloc.so.2, which cannot be dlopen'ed.  By default the
# private build is used when it is found in /usr/local/lib/sicm-jemalloc.
AC_DEFUN([SICM_JEMALLOC], [
  AC_ARG_WITH([jemalloc],
    [AS_HELP_STRING([--with-jemalloc=private|system|DIR],
      [jemalloc to build on (default: private if tools/build-jemalloc installed it)])],
    [], [with_jemalloc=auto])
  sicm_je_dir=/usr/local/lib/sicm-jemalloc
  AS_CASE([$with_jemalloc],
    [auto|private|yes], [],
    [system|no], [],
    [sicm_je_dir=$with_jemalloc; with_jemalloc=private])
  AS_IF([test "x$with_jemalloc" = xauto],
    [AS_IF([test -f "$sicm_je_dir/lib/libjemalloc_pic.a"], [with_jemalloc=private],
      [with_jemalloc=system
       AC_MSG_WARN([private jemalloc not found in $sicm_je_dir: linking Debian's libjemalloc, so libsicm.so cannot be loaded with dlopen (run tools/build-jemalloc)])])])
  AS_IF([test "x$with_jemalloc" = xprivate], [
    AS_IF([test -f "$sicm_je_dir/lib/libjemalloc_pic.a" && test -f "$sicm_je_dir/include/jemalloc/jemalloc.h"], [],
      [AC_MSG_ERROR([no private jemalloc in $sicm_je_dir: run tools/build-jemalloc $sicm_je_dir])])
    JEMALLOC_CFLAGS="-I$sicm_je_dir/include"
    JEMALLOC_LIBS="-L$sicm_je_dir/lib -ljemalloc_pic -lm"
    AC_SUBST([JEMALLOC_CFLAGS])
    AC_SUBST([JEMALLOC_LIBS])
    sicm_jemalloc_pc=""
    AC_DEFINE([SICM_JEMALLOC_PRIVATE_BUILD], [1],
              [jemalloc is libsicm's own build, whose options libsicm sets])
    AC_MSG_NOTICE([jemalloc: private build in $sicm_je_dir, linked statically])
  ], [
    SICM_REQUIRE_PKG([JEMALLOC], [jemalloc >= 5.2], [libjemalloc-dev])
    sicm_jemalloc_pc="jemalloc"
    AC_MSG_NOTICE([jemalloc: the system's (libsicm.so will not load with dlopen)])
  ])
  AC_SUBST([SICM_JEMALLOC_PC], [$sicm_jemalloc_pc])
  AM_CONDITIONAL([PRIVATE_JEMALLOC], [test "x$with_jemalloc" = xprivate])
])
