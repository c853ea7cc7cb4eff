/* SPDX-License-Identifier: BSD-3-Clause */
/* Let the placer keep the hottest arenas on the fast tier: two named
 * arenas, one touched in a loop; its rate is read back after a while.
 * Where the kernel does not report referenced pages, the start says why. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sicm.h>

int main(void) {
  if (sicm_init() != 0)
    return 1;
  sicm_device *home = sicm_device_of_node(sicm_node_self(), 0);
  sicm_arena hot = home ? sicm_arena_create(0, home) : NULL;
  sicm_arena cold = home ? sicm_arena_create(0, home) : NULL;
  char *h = hot ? sicm_arena_alloc(hot, 8 << 20) : NULL;
  char *c = cold ? sicm_arena_alloc(cold, 8 << 20) : NULL;
  if (h == NULL || c == NULL || sicm_arena_set_name(hot, "hot") || sicm_arena_set_name(cold, "cold"))
    return 1;
  memset(c, 0, 8 << 20);
  sicm_autoplace_config config;
  if (sicm_autoplace_config_init(&config) != 0)
    return 1;
  config.interval_ms = 100;
  if (sicm_autoplace_start(&config) != 0) {
    int unsupported = errno == ENOTSUP;
    printf("no automatic placement here: %s\n", sicm_error_detail());
    sicm_arena_destroy(hot);
    sicm_arena_destroy(cold);
    return sicm_fini() == 0 && unsupported ? 0 : 1;
  }
  for (int round = 0; round < 50; round++) { /* half a second of "kernel" */
    memset(h, round, 8 << 20);
    usleep(10000);
  }
  sicm_arena_rates rates;
  if (sicm_autoplace_stop() != 0 || sicm_arena_get_rates(hot, &rates) != 0)
    return 1;
  printf("hot: %.0f bytes referenced per second, %s the fast tier\n",
         rates.referenced_per_second, rates.on_fast ? "on" : "off");
  sicm_arena_destroy(hot);
  sicm_arena_destroy(cold);
  return sicm_fini() == 0 ? 0 : 1;
}
