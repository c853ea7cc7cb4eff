/* SPDX-License-Identifier: BSD-3-Clause */
/* Start libsicm, report why it could not start, stop it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sicm.h>

int main(void) {
  if (sicm_init() != 0) {
    fprintf(stderr, "sicm_init: %s (%s)\n", sicm_error_detail(), strerror(errno));
    return 1;
  }
  printf("libsicm started: %u devices\n", sicm_devices()->count);
  return sicm_fini() == 0 ? 0 : 1;
}
