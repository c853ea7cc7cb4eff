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
