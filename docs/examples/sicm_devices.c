/* SPDX-License-Identifier: BSD-3-Clause */
/* List every device with its kind, capacity and free memory now. */
#include <stdio.h>
#include <sicm.h>

int main(void) {
  if (sicm_init() != 0)
    return 1;
  const sicm_device_list *list = sicm_devices();
  for (unsigned i = 0; i < list->count; i++) {
    const sicm_device *d = &list->devices[i];
    size_t free_bytes;
    if (sicm_device_get_free_bytes(d, &free_bytes) != 0)
      free_bytes = 0; /* EIO: the kernel cannot say */
    printf("node %d %-8s page %zu: %zu MiB, %zu MiB free\n", d->node,
           sicm_device_kind_name(d->kind), d->page_size, d->capacity >> 20, free_bytes >> 20);
  }
  return sicm_fini() == 0 ? 0 : 1;
}
