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
