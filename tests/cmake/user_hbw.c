/* SPDX-License-Identifier: BSD-3-Clause */
/* user_hbw.c: an hbwmalloc program of the user projects (CMake's
 * sicm::memkind, pkg-config's sicm-memkind): one block, preferred HBM. */
#include <hbwmalloc.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  hbw_set_policy(HBW_POLICY_PREFERRED); /* no HBM here: the local node */
  char *p = hbw_malloc(1 << 20);
  if (p == NULL)
    return 1;
  memset(p, 7, 1 << 20);
  int ok = p[(1 << 20) - 1] == 7;
  hbw_free(p);
  printf("hbw user: %s\n", ok ? "ok" : "wrong");
  return ok ? 0 : 2;
}
