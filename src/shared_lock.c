/* SPDX-License-Identifier: BSD-3-Clause */
/* shared_lock.c: the process-shared robust mutexes of a shared arena's
 * segment — taking them, recording who holds them, and telling a holder
 * that is gone from a live one.
 *
 * The kernel marks a robust mutex whose holder dies (EOWNERDEAD), but the
 * lock word can also name a task that does not hold it: a stray write into
 * the segment, or a holder whose robust-list cleanup never ran.  Waiters
 * wait in 20 ms slices; from 100 ms on, each slice they judge the holder
 * the lock word names against the record the holder writes after taking
 * the mutex (its pid, its start time, its pid namespace):
 *   - a task of the recorded process, which still has the recorded start
 *     time, holds it: wait on, however long;
 *   - a holder recorded in another pid namespace, or a task this process
 *     may not look at, cannot be checked from here: trusted, wait on;
 *   - a holder recorded in this pid namespace whose task is gone, or whose
 *     pid now belongs to a process that started later, is gone: unchanged
 *     for one more slice, it is no holder;
 *   - anything else (no record, or a record of another process than the
 *     lock word's task), unchanged for 1 s, is no holder: a real holder
 *     records itself nanoseconds after taking the mutex, so only a holder
 *     stopped in that window for a second is misjudged.
 * For a holder that is gone the waiter does what the kernel does for a dead
 * one: it sets FUTEX_OWNER_DIED in the lock word and wakes the waiters, so
 * whoever takes the mutex next gets EOWNERDEAD and repairs the heap.
 *
 * This reads glibc's pthread_mutex_t (__data.__lock, __data.__kind): the
 * robust-futex protocol of the kernel, which glibc implements. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "shared.h"

#define HOLDER_PID_BITS 22 /* pid_max is at most 2^22 */
#define SLICE_MS 20
#define JUDGE_AFTER_MS 100
#define UNRECORDED_MS 1000
#define SPINS 100

/* ---- this process, as a holder records it ---- */

static struct {
  uint64_t holder;   /* pid | start << HOLDER_PID_BITS; 0: not loaded */
  uint64_t ns;
} self;

/* A task's start time (field 22 of /proc/<id>/stat) and thread group;
 * 0, or -1 with errno (ENOENT: no such task here).  Asked for the thread
 * group (the lock word's task), a task that has exited and waits to be
 * reaped is no task either: it can hold nothing. */
static int task_read(pid_t id, uint64_t *start, pid_t *tgid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)id);
  FILE *f = fopen(path, "re");
  if (f == NULL) {
    /* /proc mounted with hidepid hides other users' tasks: ask kill(),
     * whose own errno (ESRCH: no such task) must not replace ENOENT. */
    int err = errno;
    if (err == ENOENT && (kill(id, 0) == 0 || errno == EPERM))
      err = EACCES;
    errno = err;
    return -1;
  }
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')'); /* the command may hold spaces and ')' */
  unsigned long long st = 0;
  char state = 0;
  if (p == NULL || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
                                     "%*d %*d %*d %*d %llu", &state, &st) != 2) {
    errno = EIO;
    return -1;
  }
  if (tgid != NULL && (state == 'Z' || state == 'X' || state == 'x')) {
    errno = ENOENT;
    return -1;
  }
  *start = st;
  if (tgid != NULL) {
    snprintf(path, sizeof path, "/proc/%d/status", (int)id);
    if ((f = fopen(path, "re")) == NULL)
      return -1;
    int found = 0;
    while (!found && fgets(buf, sizeof buf, f) != NULL)
      found = sscanf(buf, "Tgid: %d", tgid) == 1;
    fclose(f);
    if (!found) {
      errno = EIO;
      return -1;
    }
  }
  return 0;
}

static void self_load(void) {
  uint64_t start = 0;
  struct stat ns;
  pid_t pid = getpid();
  (void)task_read(pid, &start, NULL); /* without /proc waiters only trust it */
  /* Threads of a forked child may load at once: the same values, written
   * atomically, the holder (which says "loaded") last. */
  __atomic_store_n(&self.ns, stat("/proc/self/ns/pid", &ns) == 0 ? (uint64_t)ns.st_ino : 0,
                   __ATOMIC_RELAXED);
  __atomic_store_n(&self.holder, (uint64_t)pid | start << HOLDER_PID_BITS, __ATOMIC_RELEASE);
}

static void self_forget(void) { __atomic_store_n(&self.holder, 0, __ATOMIC_RELAXED); }

static pthread_once_t self_once = PTHREAD_ONCE_INIT;
static void self_register(void) { pthread_atfork(NULL, NULL, self_forget); }

/* Every process that uses a segment gets here through create or attach
 * (sc_shm_mutex_kind) first, which registers the fork handler; a forked
 * child, which keeps its parent's mappings, reloads at its first lock. */
static void self_ensure(void) {
  pthread_once(&self_once, self_register);
  if (__atomic_load_n(&self.holder, __ATOMIC_ACQUIRE) == 0)
    self_load();
}

/* ---- the mutexes ---- */

static int mutex_attr_init(pthread_mutexattr_t *attr) {
  int rc = pthread_mutexattr_init(attr);
  if (rc == 0 && (rc = pthread_mutexattr_setpshared(attr, PTHREAD_PROCESS_SHARED)) == 0)
    rc = pthread_mutexattr_setrobust(attr, PTHREAD_MUTEX_ROBUST);
  return rc;
}

int sc_shm_mutex_init(sc_shm_mutex *m) {
  pthread_mutexattr_t attr;
  int rc = mutex_attr_init(&attr);
  if (rc == 0)
    rc = pthread_mutex_init(&m->mutex, &attr);
  pthread_mutexattr_destroy(&attr);
  m->holder = m->holder_ns = 0;
  self_ensure();
  return rc;
}

int sc_shm_mutex_kind(void) {
  sc_shm_mutex probe;
  if (sc_shm_mutex_init(&probe) != 0)
    return -1;
  int kind = probe.mutex.__data.__kind;
  pthread_mutex_destroy(&probe.mutex);
  return kind;
}

uint64_t sc_shm_self_start(void) {
  self_ensure();
  return __atomic_load_n(&self.holder, __ATOMIC_RELAXED) >> HOLDER_PID_BITS;
}

uint64_t sc_shm_self_id(void) {
  self_ensure();
  return __atomic_load_n(&self.holder, __ATOMIC_RELAXED);
}

uint64_t sc_shm_self_ns(void) {
  self_ensure();
  return __atomic_load_n(&self.ns, __ATOMIC_RELAXED);
}

int sc_shm_owner_gone(uint64_t owner, uint64_t ns) {
  if (owner == 0)
    return 1;
  if (ns != sc_shm_self_ns())
    return 0;
  pid_t pid = (pid_t)(owner & ((1u << HOLDER_PID_BITS) - 1)), tgid = 0;
  uint64_t start;
  if (task_read(pid, &start, &tgid) != 0)
    return errno == ENOENT;
  return tgid != pid || start != owner >> HOLDER_PID_BITS;
}

static int *lock_word(sc_shm_mutex *m) { return &m->mutex.__data.__lock; }

static inline void holder_record(sc_shm_mutex *m) {
  uint64_t holder = __atomic_load_n(&self.holder, __ATOMIC_ACQUIRE);
  if (__builtin_expect(holder == 0, 0)) {
    self_load();
    holder = __atomic_load_n(&self.holder, __ATOMIC_ACQUIRE);
  }
  __atomic_store_n(&m->holder_ns, __atomic_load_n(&self.ns, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
  __atomic_store_n(&m->holder, holder, __ATOMIC_RELEASE);
}

/* What a waiter saw of the holder at its last look. */
typedef struct holder_watch {
  int word;
  uint64_t holder;
  int since_ms;
} holder_watch;

typedef enum holder_verdict { HOLDER_TRUSTED, HOLDER_GONE, HOLDER_UNSURE } holder_verdict;

/* The verdict on the task the lock word names (see the top). */
static holder_verdict holder_judge(pid_t tid, uint64_t holder, uint64_t ns) {
  pid_t holder_pid = (pid_t)(holder & ((1u << HOLDER_PID_BITS) - 1)), tgid = 0;
  uint64_t start;
  if (holder != 0 && ns != __atomic_load_n(&self.ns, __ATOMIC_RELAXED))
    return HOLDER_TRUSTED;
  int found = task_read(tid, &start, &tgid) == 0;
  if (!found && errno != ENOENT)
    return HOLDER_TRUSTED; /* there, but this process may not look */
  if (holder == 0 || (found && tgid != holder_pid))
    return HOLDER_UNSURE;
  if (!found)
    return HOLDER_GONE;
  if (task_read(holder_pid, &start, NULL) != 0)
    return errno == ENOENT ? HOLDER_GONE : HOLDER_TRUSTED;
  return start == holder >> HOLDER_PID_BITS ? HOLDER_TRUSTED : HOLDER_GONE;
}

/* Whether the task the lock word names is no holder: the same word and
 * record as at the last look, judged gone for one slice or unsure for
 * UNRECORDED_MS. */
static int holder_gone(sc_shm_mutex *m, int word, holder_watch *w, int waited_ms) {
  uint64_t holder = __atomic_load_n(&m->holder, __ATOMIC_ACQUIRE);
  uint64_t ns = __atomic_load_n(&m->holder_ns, __ATOMIC_RELAXED);
  holder_verdict verdict = holder_judge(word & FUTEX_TID_MASK, holder, ns);
  if (verdict == HOLDER_TRUSTED || word != w->word || holder != w->holder) {
    *w = (holder_watch){word, holder, waited_ms};
    return 0;
  }
  return waited_ms - w->since_ms >= (verdict == HOLDER_GONE ? SLICE_MS : UNRECORDED_MS);
}

/* As the kernel does for a holder that died. */
static void holder_declare_dead(sc_shm_mutex *m, int word) {
  int dead = FUTEX_OWNER_DIED | (word & FUTEX_WAITERS);
  if (__atomic_compare_exchange_n(lock_word(m), &word, dead, 0, __ATOMIC_ACQ_REL,
                                  __ATOMIC_RELAXED)) {
    __atomic_store_n(&m->holder, 0, __ATOMIC_RELAXED);
    syscall(SYS_futex, lock_word(m), FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
  }
}

/* Waits in slices: besides judging the holder, a process killed between
 * releasing the lock and waking a waiter can leave the lock free and a
 * waiter asleep (the kill -9 tests saw it on this kernel); a lost wake-up
 * then costs one slice instead of forever. */
static int mutex_wait(sc_shm_mutex *m) {
  holder_watch watch = {0, 0, 0};
  for (int waited_ms = 0;; waited_ms += SLICE_MS) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += SLICE_MS * 1000 * 1000;
    if (until.tv_nsec >= 1000000000) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000;
    }
    int rc = pthread_mutex_timedlock(&m->mutex, &until);
    if (rc != ETIMEDOUT)
      return rc;
    int word = __atomic_load_n(lock_word(m), __ATOMIC_ACQUIRE);
    if (waited_ms >= JUDGE_AFTER_MS && (word & FUTEX_TID_MASK) != 0 &&
        !(word & FUTEX_OWNER_DIED) && holder_gone(m, word, &watch, waited_ms))
      holder_declare_dead(m, word);
  }
}

/* Any other kind sends glibc down another protocol (PI, recursive, ...)
 * over a word it did not lay out. */
static int kind_check(sc_shm_mutex *m, int kind) {
  int found = __atomic_load_n(&m->mutex.__data.__kind, __ATOMIC_RELAXED);
  return found == kind ? 0 : sc_shm_damaged("lock word (mutex kind)", (uint64_t)(unsigned)found);
}

/* Takes m, spinning a little first if `spin`; a holder that is gone is
 * treated as dead.  Returns 0, EOWNERDEAD (taken; the holder died), an
 * errno of pthread_mutex_timedlock(), or -1 after sc_fail (EUCLEAN: m's kind
 * is not `kind`, so its word is not ours to interpret). */
static inline int mutex_lock(sc_shm_mutex *m, int kind, int spin) {
  if (kind_check(m, kind) != 0)
    return -1;
  int rc = pthread_mutex_trylock(&m->mutex);
  /* Critical sections are tens of nanoseconds: spinning a little before
   * sleeping saves the holder a futex wake and us a context switch.  (A
   * lock word naming this very thread reads EBUSY too, never EDEADLK, for
   * this kind of mutex.) */
  for (unsigned n = 0; spin && rc == EBUSY && n < SPINS; n++) {
    for (unsigned i = 0; i < 8; i++)
      sc_cpu_relax();
    rc = pthread_mutex_trylock(&m->mutex);
  }
  if (rc == EBUSY)
    rc = mutex_wait(m);
  if (rc == 0 || rc == EOWNERDEAD)
    holder_record(m);
  return rc;
}

static void mutex_unlock(sc_shm_mutex *m) {
  __atomic_store_n(&m->holder, 0, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&m->mutex);
}

/* ---- the heap lock and the migration lock ---- */

int sc_shm_lock(sc_shared_arena *s) {
  sc_shm_header *h = s->header;
  int rc = mutex_lock(&h->lock, s->lock_kind, 1);
  if (rc == 0)
    return 0;
  if (rc < 0)
    return -1;
  if (rc != EOWNERDEAD)
    return sc_fail(rc, "the shared arena's lock: %s", strerror(rc));
  if (sc_shm_repair(s) != 0) {
    /* Unlocking without marking it consistent says to every process that
     * the heap is beyond repair. */
    int err = errno;
    mutex_unlock(&h->lock);
    errno = err;
    return -1;
  }
  pthread_mutex_consistent(&h->lock.mutex);
  return 0;
}

void sc_shm_unlock(sc_shared_arena *s) { mutex_unlock(&s->header->lock); }

int sc_shm_migrate_lock(sc_shared_arena *s) {
  sc_shm_mutex *m = &s->header->migrate_lock;
  int rc = mutex_lock(m, s->lock_kind, 0);
  if (rc < 0)
    return -1;
  if (rc == EOWNERDEAD)
    rc = pthread_mutex_consistent(&m->mutex);
  return rc ? sc_fail(rc, "the shared arena's migration lock: %s", strerror(rc)) : 0;
}

void sc_shm_migrate_unlock(sc_shared_arena *s) { mutex_unlock(&s->header->migrate_lock); }
