# sicm_deps.m4: dependency checks that stop configure with the Debian package to install.

# SICM_REQUIRE_PKG(VARIABLE, MODULES, DEBIAN-PACKAGE)
AC_DEFUN([SICM_REQUIRE_PKG], [
  PKG_CHECK_MODULES([$1], [$2], [],
    [AC_MSG_ERROR([$2 not found (pkg-config). On Debian/Ubuntu: apt-get install $3])])
])

# SICM_OPTIONAL_PKG(VARIABLE, MODULES, DEBIAN-PACKAGES, WHAT-IS-DISABLED):
# sets the HAVE_<VARIABLE> conditional.
AC_DEFUN([SICM_OPTIONAL_PKG], [
  PKG_CHECK_MODULES([$1], [$2], [sicm_have_$1=yes],
    [sicm_have_$1=no
     AC_MSG_WARN([$2 not found: $4 is disabled. On Debian/Ubuntu: apt-get install $3])])
  AM_CONDITIONAL([HAVE_$1], [test "x$sicm_have_$1" = xyes])
])

# SICM_REQUIRE_LIB(VARIABLE, LIBRARY, HEADER, FUNCTION, DEBIAN-PACKAGE)
# Prefers pkg-config and falls back to a plain header and link check.
AC_DEFUN([SICM_REQUIRE_LIB], [
  PKG_CHECK_MODULES([$1], [$2], [], [
    AC_CHECK_HEADER([$3], [],
      [AC_MSG_ERROR([$3 not found. On Debian/Ubuntu: apt-get install $5])])
    AC_CHECK_LIB([$2], [$4], [$1_LIBS="-l$2"],
      [AC_MSG_ERROR([lib$2 not found. On Debian/Ubuntu: apt-get install $5])])
    AC_SUBST([$1_LIBS])
  ])
])

# AX_PTHREAD_SIMPLE: pthreads through the compiler's -pthread flag.
AC_DEFUN([AX_PTHREAD_SIMPLE], [
  AC_CHECK_HEADER([pthread.h], [], [AC_MSG_ERROR([pthread.h not found: install libc6-dev])])
  PTHREAD_CFLAGS="-pthread"
  PTHREAD_LIBS="-pthread"
  AC_SUBST([PTHREAD_CFLAGS])
  AC_SUBST([PTHREAD_LIBS])
])
