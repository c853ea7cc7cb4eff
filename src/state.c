/* SPDX-License-Identifier: BSD-3-Clause */
/* state.c: the one library state — topology, configuration, devices and
 * options — and the reference count that says whether it is live.  init.c
 * builds and releases it; every other file only reads it. */
#include <errno.h>

#include "devices.h"

static sc_state state;
static unsigned state_live; /* atomic */

sc_state *sc_state_storage(void) { return &state; }

void sc_state_publish(int live) { __atomic_store_n(&state_live, (unsigned)live, __ATOMIC_RELEASE); }

sc_state *sc_state_get(void) {
  /* Readers take no lock: calling into the library concurrently with the
   * last sicm_fini() is a caller error, as with free(). */
  if (!__atomic_load_n(&state_live, __ATOMIC_ACQUIRE))
    return sc_fail_null(EPERM, "libsicm is not initialized: call sicm_init() first");
  return &state;
}

int sc_device_is_known(const sc_state *s, const sicm_device *dev) {
  const sicm_device *first = s->devices.devices;
  return dev != NULL && dev >= first && dev < first + s->devices.count &&
         (size_t)((const char *)dev - (const char *)first) % sizeof *dev == 0;
}
