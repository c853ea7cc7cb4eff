/* SPDX-License-Identifier: BSD-3-Clause */
/* init.c: sicm_init and sicm_fini — the reference-counted lifetime of the
 * library state (state.c), the one path that builds and releases it.  It
 * sits above every layer: it reads the options, builds the devices, reads
 * jemalloc's size classes for the arenas, releases the default arenas at
 * the end, and registers the fork handlers that take every layer's locks. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arena_je.h"
#include "config.h"
#include "migrate.h"
#include "report.h"
#include "shared.h"

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned init_refs;

const char *sicm_devices_conf_path(void) { return SICM_SYSCONFDIR_CONF; }

/* The configuration file to read, or NULL for none. */
static const char *init_conf_path(void) {
  const char *env = sc_env_path("SICM_DEVICES_CONF", PATH_MAX);
  if (env != NULL)
    return env;
  return access(SICM_SYSCONFDIR_CONF, F_OK) == 0 ? SICM_SYSCONFDIR_CONF : NULL;
}

/* Environment options, read strictly (base.h); sicm(7) documents each. */
static void init_options(sc_options *o, unsigned flags) {
  sc_migrate_read_options();
  sc_check_setup();
  int share = (flags & SICM_INIT_SHARE_TOPOLOGY) != 0;
  o->share_topology = sc_env_switch("SICM_SHARE_TOPOLOGY", share);
}

static int init_build(sc_state *s, unsigned flags) {
  init_options(&s->options, flags);
  if (sc_je_classes_init() != 0 || sc_topo_discover(&s->topo, s->options.share_topology) != 0)
    return -1;
  const char *path = init_conf_path();
  if (path != NULL) {
    if (sc_conf_parse(path, &s->topo, &s->conf) != 0)
      goto fail_topo;
    sc_conf_apply(&s->conf, &s->topo);
  }
  if (sc_devices_build(&s->topo, &s->conf, &s->devices) != 0)
    goto fail_conf;
  return 0;
fail_conf:
  sc_conf_release(&s->conf);
fail_topo:
  sc_topo_release(&s->topo);
  return -1;
}

/* fork(): a child must find no lock held by a thread it does not have.
 * The handlers take the locks in the order the code nests them, outermost
 * first.  glibc runs prepare handlers last-registered first, so jemalloc
 * is started before ours are registered: ours are then taken outside
 * jemalloc's, as in every call. */
static void fork_prepare(void) {
  pthread_mutex_lock(&init_lock);
  sc_shared_fork_lock();
  sc_arenas_fork_lock();
  sc_autoplace_report_fork_lock();
  sc_check_fork_lock();
  sc_fronts_fork_lock();
}

static void fork_release(int child) {
  sc_fronts_fork_unlock(child);
  sc_check_fork_unlock();
  sc_autoplace_report_fork_unlock();
  sc_arenas_fork_unlock(child);
  sc_shared_fork_unlock();
  pthread_mutex_unlock(&init_lock);
}

static void fork_parent(void) { fork_release(0); }
static void fork_child(void) {
  int err = errno; /* fork() returned 0: the child's errno is the parent's */
  fork_release(1);
  sc_je_upkeep_fork_child();
  sc_arenas_fork_child();
  sc_shared_fork_child();
  sc_autoplace_fork_child();
  errno = err;
}

/* The handlers are registered when the library is loaded, before any
 * thread can be in sicm_init.  Registered there, lazily, they would miss a
 * fork already running its prepare handlers: glibc (2.35 on) lets handlers
 * be registered meanwhile and skips them for that fork, so a child could
 * find init_lock held by a thread it does not have. */
static int fork_registered;

__attribute__((constructor)) static void fork_register(void) {
  sc_je_start();
  sc_arenas_set_default_kind(sc_je_arena_create);
  fork_registered = pthread_atfork(fork_prepare, fork_parent, fork_child) == 0;
}

int sicm_init_with(unsigned flags) {
  if (flags & ~SICM_INIT_SHARE_TOPOLOGY)
    return sc_fail(EINVAL, "sicm_init_with: unknown flags 0x%x", flags & ~SICM_INIT_SHARE_TOPOLOGY);
  if (!fork_registered)
    return sc_fail(ENOMEM, "sicm_init: no memory to register the fork handlers");
  int rc = 0;
  pthread_mutex_lock(&init_lock);
  if (init_refs == 0) {
    sc_state *s = sc_state_storage();
    rc = init_build(s, flags);
    if (rc != 0) {
      int err = errno;
      *s = (sc_state){0};
      errno = err;
    }
  }
  if (rc == 0 && init_refs++ == 0) {
    sc_state_publish(1);
    sc_report_setup();
    sc_autoplace_setup();
  }
  pthread_mutex_unlock(&init_lock);
  return rc;
}

int sicm_init(void) { return sicm_init_with(0); }

int sicm_init_topology_source(void) {
  sc_state *s = sc_state_get();
  return s ? (int)s->topo.source : sc_fail(EPERM, "sicm_init_topology_source: not initialized");
}

int sicm_fini(void) {
  pthread_mutex_lock(&init_lock);
  if (init_refs == 0) {
    pthread_mutex_unlock(&init_lock);
    return sc_fail(EPERM, "sicm_fini: the library is not initialized");
  }
  /* Refused while the program's arenas live: then nothing stops, not
   * the placer, not the report. */
  if (init_refs == 1 && sc_arenas_none_live() != 0) {
    pthread_mutex_unlock(&init_lock);
    return -1;
  }
  if (init_refs == 1) {
    /* The placer first: the report then holds its last interval, and no
     * interval runs while the arenas go. */
    sc_autoplace_before_fini();
    sc_report_before_fini();
  }
  if (init_refs == 1 && sc_arenas_release_all() != 0) {
    pthread_mutex_unlock(&init_lock);
    return -1;
  }
  if (--init_refs == 0) {
    /* The upkeep thread must not outlive the library (a dlclose would
     * unmap the code it runs). */
    sicm_background_threads(0);
    sc_state *s = sc_state_storage();
    sc_state_publish(0);
    sc_devices_release(&s->devices);
    sc_conf_release(&s->conf);
    sc_topo_release(&s->topo);
    *s = (sc_state){0};
  }
  pthread_mutex_unlock(&init_lock);
  return 0;
}
