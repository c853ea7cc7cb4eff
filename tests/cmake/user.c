/* SPDX-License-Identifier: BSD-3-Clause */
/* user.c: the program of the CMake user project — one arena, one block. */
#include <sicm.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  if (sicm_init() != 0)
    return 1;
  const sicm_device_list *devs = sicm_devices();
  unsigned ndevices = devs->count;
  sicm_arena sa = sicm_arena_create(0, &devs->devices[0]);
  char *p = sa ? sicm_arena_alloc(sa, 4096) : NULL;
  if (p == NULL)
    return 2;
  strcpy(p, "placed");
  int ok = sicm_arena_lookup(p) == sa && strcmp(p, "placed") == 0;
  sicm_free(p);
  if (sicm_arena_destroy(sa) != 0 || sicm_fini() != 0)
    return 3;
  printf("cmake user: %u devices, %s\n", ndevices, ok ? "ok" : "wrong");
  return ok ? 0 : 4;
}
