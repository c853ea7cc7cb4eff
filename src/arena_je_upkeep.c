/* SPDX-License-Identifier: BSD-3-Clause */
/* arena_je_upkeep.c: upkeep of the private arenas through jemalloc —
 * moving a block out of a sparse slab (jemalloc's utilization query) and
 * the upkeep thread that gives back their aged free pages. */
#define _GNU_SOURCE /* pthread_setname_np */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <stdbool.h>
#include <string.h>

#include "arena_je.h"

/* What jemalloc's "experimental.utilization.query" says of a block (its
 * inspect_extent_util_stats_verbose_t). */
typedef struct slab_use {
  void *slabcur;                    /* the slab its bin allocates from now */
  size_t nfree, nregs, size;        /* of the block's slab; size in bytes */
  size_t bin_nfree, bin_nregs;      /* of every slab of its bin in its arena */
} slab_use;

/* Worth moving: a small block (a slab of several regions) with free
 * neighbours, not in the slab its bin fills next, and used less than the
 * bin's slabs are on average (used / nregs < bin_used / bin_nregs). */
static int worth_moving(void *ptr, size_t *usize) {
  slab_use u;
  size_t len = sizeof u;
  if (je_mallctl("experimental.utilization.query", &u, &len, &ptr, sizeof ptr) != 0 ||
      u.nregs <= 1 || u.nfree == 0 || u.bin_nregs == 0)
    return 0;
  if (u.slabcur != NULL && (uintptr_t)ptr - (uintptr_t)u.slabcur < u.size)
    return 0;
  *usize = je_sallocx(ptr, 0);
  return (u.nregs - u.nfree) * u.bin_nregs < (u.bin_nregs - u.bin_nfree) * u.nregs;
}

void *sicm_defrag_reallocate(void *ptr) {
  int saved_errno = errno;
  uint64_t generation;
  sc_arena *a = ptr != NULL ? sc_arena_of_ptr(ptr, &generation) : NULL;
  if (a != NULL && sc_check_on) /* stops on a block that is not live */
    sc_check_dies(ptr, "sicm_defrag_reallocate");
  size_t usize = 0;
  unsigned shard = 0;
  size_t len = sizeof shard;
  void *moved = NULL;
  /* Private arenas only: their pages carry size-class tags, by which an
   * address inside a block (not its start) is told and left alone. */
  if (a != NULL && sc_page_tag_of(ptr) != NULL && a->ops->usable_size(a, ptr) != 0 &&
      worth_moving(ptr, &usize) &&
      je_mallctl("arenas.lookup", &shard, &len, &ptr, sizeof ptr) == 0) {
    sc_je_hook_failed = 0;
    moved = je_mallocx(usize, MALLOCX_ARENA(shard) | MALLOCX_TCACHE_NONE);
  }
  if (moved != NULL) {
    sc_page_class_set(moved, sc_size_class(usize));
    memcpy(moved, ptr, usize);
    je_sdallocx(ptr, usize, MALLOCX_TCACHE_NONE);
  }
  if (a != NULL && sc_check_on)
    sc_check_born(moved != NULL ? moved : ptr, generation);
  errno = saved_errno;
  return moved;
}

/* The upkeep thread.  jemalloc's own background threads race with arena
 * destruction: a worker paused while an arena is destroyed can still be
 * waiting for jemalloc's background-thread lock when they are switched
 * off, which then holds that lock while it joins the worker (jemalloc
 * 5.3.0; fixed in its pull request 2966).  Arenas come and go here at any
 * time, so jemalloc's threads stay off, and one thread of ours runs the
 * same decay-driven purge of every private arena (sc_arenas_upkeep()).
 * toggle_lock orders the calls; upkeep_lock guards the thread's word. */
enum { UPKEEP_INTERVAL_MS = 250 };
static pthread_mutex_t toggle_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t upkeep_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t upkeep_wake = PTHREAD_COND_INITIALIZER;
static int upkeep_on, upkeep_running; /* under upkeep_lock; running also under toggle_lock */
static pthread_t upkeep_thread;

static void *upkeep_main(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "sicm_upkeep");
  pthread_mutex_lock(&upkeep_lock);
  while (upkeep_on) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += UPKEEP_INTERVAL_MS * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    pthread_cond_timedwait(&upkeep_wake, &upkeep_lock, &until);
    if (!upkeep_on)
      break;
    pthread_mutex_unlock(&upkeep_lock);
    sc_arenas_upkeep();
    pthread_mutex_lock(&upkeep_lock);
  }
  pthread_mutex_unlock(&upkeep_lock);
  return NULL;
}

void sc_je_upkeep_decay(sc_arena *a) {
  sc_je_arena *je = sc_je_of(a);
  unsigned n = __atomic_load_n(&je->nshards, __ATOMIC_ACQUIRE);
  for (unsigned i = 0; i < n; i++) {
    char cmd[64];
    snprintf(cmd, sizeof cmd, "arena.%u.decay", je->shards[i]);
    je_mallctl(cmd, NULL, NULL, NULL, 0);
  }
}

static int upkeep_start(void) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old); /* the program's signals are not its */
  pthread_mutex_lock(&upkeep_lock);
  upkeep_on = 1;
  pthread_mutex_unlock(&upkeep_lock);
  int err = pthread_create(&upkeep_thread, NULL, upkeep_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_mutex_lock(&upkeep_lock);
  upkeep_on = upkeep_running = err == 0;
  pthread_mutex_unlock(&upkeep_lock);
  return err ? sc_fail(EAGAIN, "the upkeep thread could not start (%s)", strerror(err)) : 0;
}

static void upkeep_stop(void) {
  pthread_mutex_lock(&upkeep_lock);
  upkeep_on = 0;
  pthread_cond_signal(&upkeep_wake);
  pthread_mutex_unlock(&upkeep_lock);
  pthread_join(upkeep_thread, NULL);
  upkeep_running = 0;
}

int sicm_background_threads(int enable) {
  if (enable != 0 && enable != 1)
    return sc_fail(EINVAL, "sicm_background_threads: enable is %d, not 0 or 1", enable);
  pthread_mutex_lock(&toggle_lock);
  int rc = 0;
  if (enable && !upkeep_running)
    rc = upkeep_start();
  else if (!enable && upkeep_running)
    upkeep_stop();
  pthread_mutex_unlock(&toggle_lock);
  return rc;
}

void sc_je_upkeep_fork_child(void) {
  /* The thread is the parent's: the child starts with upkeep off.  The
   * locks are made anew rather than taken around fork(): a thread may
   * have held one, and jemalloc's handlers already hold as many locks as
   * ThreadSanitizer tracks at once. */
  pthread_mutex_init(&toggle_lock, NULL);
  pthread_mutex_init(&upkeep_lock, NULL);
  pthread_cond_init(&upkeep_wake, NULL);
  upkeep_on = upkeep_running = 0;
}
