/* init.c: the library's one global state and its reference-counted lifetime. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "config.h"
#include "internal.h"

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned init_refs;
static sicm_state state;

const char *sicm_devices_conf_path(void) { return SICM_SYSCONFDIR_CONF; }

/* The configuration file to read, or NULL for none. */
static const char *init_conf_path(void) {
  const char *env = getenv("SICM_DEVICES_CONF");
  if (env != NULL && env[0] != '\0')
    return env;
  return access(SICM_SYSCONFDIR_CONF, F_OK) == 0 ? SICM_SYSCONFDIR_CONF : NULL;
}

static int init_build(sicm_state *s) {
  if (sicm_topo_discover(&s->topo) != 0)
    return -1;
  const char *path = init_conf_path();
  if (path != NULL) {
    if (sicm_conf_parse(path, &s->topo, &s->conf) != 0)
      goto fail_topo;
    sicm_conf_apply(&s->conf, &s->topo);
  }
  if (sicm_devices_build(&s->topo, &s->conf, &s->devices) != 0)
    goto fail_conf;
  return 0;
fail_conf:
  sicm_conf_release(&s->conf);
fail_topo:
  sicm_topo_release(&s->topo);
  return -1;
}

int sicm_init(void) {
  int rc = 0;
  pthread_mutex_lock(&init_lock);
  if (init_refs == 0) {
    rc = init_build(&state);
    if (rc != 0) {
      int err = errno;
      state = (sicm_state){0};
      errno = err;
    }
  }
  if (rc == 0)
    __atomic_store_n(&init_refs, init_refs + 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&init_lock);
  return rc;
}

int sicm_fini(void) {
  pthread_mutex_lock(&init_lock);
  if (init_refs == 0) {
    pthread_mutex_unlock(&init_lock);
    return sicm_fail(EPERM, "sicm_fini: the library is not initialized");
  }
  if (init_refs == 1 && sicm_arenas_release_all() != 0) {
    pthread_mutex_unlock(&init_lock);
    return -1;
  }
  __atomic_store_n(&init_refs, init_refs - 1, __ATOMIC_RELEASE);
  if (init_refs == 0) {
    sicm_devices_release(&state.devices);
    sicm_conf_release(&state.conf);
    sicm_topo_release(&state.topo);
    state = (sicm_state){0};
  }
  pthread_mutex_unlock(&init_lock);
  return 0;
}

sicm_state *sicm_state_get(void) {
  /* Readers do not take init_lock: calling into the library concurrently
   * with the last sicm_fini() is a caller error, as with free(). */
  if (__atomic_load_n(&init_refs, __ATOMIC_ACQUIRE) == 0)
    return sicm_fail_null(EPERM, "libsicm is not initialized: call sicm_init() first");
  return &state;
}

int sicm_device_is_known(const sicm_state *s, const sicm_device *dev) {
  const sicm_device *first = s->devices.devices;
  return dev != NULL && dev >= first && dev < first + s->devices.count &&
         (size_t)((const char *)dev - (const char *)first) % sizeof *dev == 0;
}
