/* SPDX-License-Identifier: BSD-3-Clause */
/* c_check.h: the failure counter of the plain C tests (programs that must
 * not link GoogleTest or libsicm): CHECK reports and counts, never stops. */
#ifndef SICM_C_CHECK_H
#define SICM_C_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK_MSG(cond, ...)                                      \
  do {                                                            \
    if (!(cond)) {                                                \
      failures++;                                                 \
      fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);             \
      fprintf(stderr, __VA_ARGS__);                               \
      fputc('\n', stderr);                                        \
    }                                                             \
  } while (0)
#define CHECK(cond) CHECK_MSG(cond, "%s", #cond)

#endif
