/* SPDX-License-Identifier: BSD-3-Clause */
/* Say what the data needs — bandwidth, and at least 64 MiB free now — and
 * get the device that fits. */
#include <errno.h>
#include <stdio.h>
#include <sicm.h>

int main(void) {
  if (sicm_init() != 0)
    return 1;
  sicm_intent intent = SICM_INTENT_INIT;
  intent.wants = SICM_INTENT_BANDWIDTH;
  intent.min_free = (size_t)64 << 20;
  sicm_device *dev = sicm_device_for_intent(&intent);
  if (dev == NULL && errno == ENODEV)
    printf("no device has 64 MiB free\n");
  else if (dev == NULL)
    return 1;
  else
    printf("node %d (%s) fits\n", dev->node, sicm_device_kind_name(dev->kind));
  return sicm_fini() == 0 ? 0 : 1;
}
