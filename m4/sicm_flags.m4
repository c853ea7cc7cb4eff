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

# SICM_WARNINGS: the warning set the project builds clean with.
AC_DEFUN([SICM_WARNINGS], [
  WARN_CFLAGS="-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter"
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
