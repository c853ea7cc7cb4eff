# SPDX-License-Identifier: BSD-3-Clause
# sicm_flags.m4: build-flag options (sanitizers, warnings).

# SICM_ENABLE_SANITIZERS: --enable-sanitizers=address,undefined (default when given bare)
# or --enable-sanitizers=thread. The flags go to every C and C++ object and link.
AC_DEFUN([SICM_ENABLE_SANITIZERS], [
  AC_ARG_ENABLE([sanitizers],
    [AS_HELP_STRING([--enable-sanitizers@<:@=LIST@:>@],
      [build with -fsanitize=LIST (default address,undefined; or thread)])],
    [], [enable_sanitizers=no])
  AS_CASE([$enable_sanitizers],
    [no], [SANITIZER_FLAGS=""],
    [yes], [SANITIZER_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"],
    [SANITIZER_FLAGS="-fsanitize=$enable_sanitizers -fno-omit-frame-pointer"])
  AC_SUBST([SANITIZER_FLAGS])
])

# SICM_WARNINGS: the warning set the project builds clean with.  A call
# to an undeclared function is an error: C89's implicit int hides a
# missing feature macro (pthread_setname_np without _GNU_SOURCE).
AC_DEFUN([SICM_WARNINGS], [
  WARN_CFLAGS="-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter -Werror=implicit-function-declaration"
  WARN_CXXFLAGS="-Wall -Wextra -Wno-unused-parameter"
  AC_SUBST([WARN_CFLAGS])
  AC_SUBST([WARN_CXXFLAGS])
])

# SICM_TLS_DIALECT: thread-locals through TLS descriptors where the compiler
# has them (x86-64: -mtls-dialect=gnu2).  A library loaded at start-up then
# reaches them almost as fast as initial-exec TLS, and one loaded with
# dlopen still works.
AC_DEFUN([SICM_TLS_DIALECT], [
  AC_MSG_CHECKING([whether $CC accepts -mtls-dialect=gnu2])
  sicm_save_CFLAGS=$CFLAGS
  CFLAGS="$CFLAGS -mtls-dialect=gnu2 -fPIC"
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[static __thread int t;]], [[return t;]])],
    [TLS_CFLAGS="-mtls-dialect=gnu2"; AC_MSG_RESULT([yes])],
    [TLS_CFLAGS=""; AC_MSG_RESULT([no])])
  CFLAGS=$sicm_save_CFLAGS
  AC_SUBST([TLS_CFLAGS])
])

# SICM_FORTRAN: the Fortran compiler of the module and libsicm_fortran: FC
# if set, else the first of gfortran, flang-new, flang, ifx, nvfortran, ftn.
# A module's .mod file belongs to the compiler that wrote it, so the one
# chosen here is the one users of the installed module must use.  Sets
# SICM_FC, the flag that puts .mod files in a directory (SICM_FC_MODDIR:
# -J for GNU and LLVM, -module for Intel and NVIDIA) and -Wall for gfortran.
AC_DEFUN([SICM_FORTRAN], [
  AC_ARG_VAR([FC], [Fortran compiler of the sicm module (default: the first of gfortran, flang-new, flang, ifx, nvfortran, ftn)])
  AS_IF([test -n "$FC"], [SICM_FC=$FC],
    [AC_CHECK_PROGS([SICM_FC], [gfortran flang-new flang ifx nvfortran ftn], [no])])
  SICM_FC_MODDIR=
  SICM_FC_WARN=
  sicm_fc_summary="none: the Fortran module is not built (set FC, or apt-get install gfortran)"
  AS_IF([test "x$SICM_FC" != xno], [
    AC_MSG_CHECKING([how $SICM_FC puts module files in a directory])
    mkdir -p conftest.mod
    printf 'module conftest_m\ninteger :: x\nend module conftest_m\n' > conftest_m.f90
    for flag in -J -module; do
      rm -f conftest.mod/*
      AS_IF([$SICM_FC -c $flag conftest.mod -o conftest_m.o conftest_m.f90 >&AS_MESSAGE_LOG_FD 2>&1 &&
             ls conftest.mod/*.mod >/dev/null 2>&1], [SICM_FC_MODDIR=$flag; break])
    done
    rm -rf conftest.mod conftest_m.f90 conftest_m.o
    AC_MSG_RESULT([${SICM_FC_MODDIR:-no way}])
    AS_IF([test -z "$SICM_FC_MODDIR"],
      [AC_MSG_WARN([$SICM_FC puts module files nowhere we can tell it: the Fortran module is not built]); SICM_FC=no],
      [sicm_fc_summary="$SICM_FC (module and libsicm_fortran)"
       AS_CASE([`$SICM_FC --version 2>/dev/null | head -n 1`], [*GNU*], [SICM_FC_WARN=-Wall])])
  ], [AC_MSG_WARN([no Fortran compiler: the Fortran module is not built. Set FC, or on Debian/Ubuntu: apt-get install gfortran])])
  AC_SUBST([SICM_FC])
  AC_SUBST([SICM_FC_MODDIR])
  AC_SUBST([SICM_FC_WARN])
  AM_CONDITIONAL([HAVE_FORTRAN], [test "x$SICM_FC" != xno])
])

# SICM_ENABLE_CHECKING: --enable-checking builds a library that always runs
# in the checking mode of SICM_CHECK=1 (sicm(7)): every bad free stops the
# process with one line.
AC_DEFUN([SICM_ENABLE_CHECKING], [
  AC_ARG_ENABLE([checking],
    [AS_HELP_STRING([--enable-checking],
      [always check every free and resize, as SICM_CHECK=1 does (slower)])],
    [], [enable_checking=no])
  AS_IF([test "x$enable_checking" = xyes],
    [AC_DEFINE([SICM_ALWAYS_CHECK], [1], [Every free and resize is checked, as with SICM_CHECK=1.])])
])
