/* SPDX-License-Identifier: BSD-3-Clause */
/* memkind_error.c: memkind_error_message, the texts of memkind's error
 * codes as memkind words them. */
#include <stdio.h>

#include "memkind_internal.h"

void memkind_error_message(int err, char *msg, size_t size) {
  static const struct { int err; const char *text; } texts[] = {
      {MEMKIND_ERROR_UNAVAILABLE, "Requested memory kind is not available"},
      {MEMKIND_ERROR_MBIND, "Call to mbind() failed"},
      {MEMKIND_ERROR_MMAP, "Call to mmap() failed"},
      {MEMKIND_ERROR_MALLOC, "Call to malloc() failed"},
      {MEMKIND_ERROR_ENVIRON, "Error parsing environment variable MEMKIND_*"},
      {MEMKIND_ERROR_INVALID, "Invalid input arguments to memkind routine"},
      {MEMKIND_ERROR_TOOMANY, "Attempted to initialize more than maximum number of kinds"},
      {MEMKIND_ERROR_BADOPS, "Invalid memkind_ops structure"},
      {MEMKIND_ERROR_HUGETLB, "Unable to allocate huge pages (none reserved on the kind's nodes)"},
      {MEMKIND_ERROR_MEMTYPE_NOT_AVAILABLE, "Requested memory type is not available"},
      {MEMKIND_ERROR_OPERATION_FAILED, "Operation failed"},
      {MEMKIND_ERROR_ARENAS_CREATE, "Call to jemalloc's arenas.create failed"},
      {MEMKIND_ERROR_RUNTIME, "Unspecified run-time error"},
  };
  if (msg == NULL || size == 0)
    return;
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
    if (texts[i].err == err) {
      snprintf(msg, size, "<memkind> %s", texts[i].text);
      return;
    }
  snprintf(msg, size, "<memkind> Undefined error number: %d", err);
}
