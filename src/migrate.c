/* migrate.c: moving a whole arena to other devices — synchronously or in
 * the background — with rollback on failure and a report.
 *
 * An arena's pages all lie in its windows, so a migration re-binds each
 * window with mbind(MPOL_MF_MOVE | MPOL_MF_STRICT): pages move, and pages
 * touched later fault in on the new devices.  The binding recorded in the
 * arena changes first (under window_lock), so windows reserved meanwhile
 * get the new binding too.  The used part of large windows is split into
 * chunks that several threads move at once; what lies above the used part
 * holds nothing but is re-bound (with MOVE, for pieces opened meanwhile). */
#define _GNU_SOURCE
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define CHUNK_MIN ((size_t)64 << 20) /* below this per thread, one thread moves all */
#define CHUNK_ALIGN ((size_t)2 << 20)
#define STRICT_RETRIES 3             /* busy pages fail transiently under writers */

static unsigned migrate_threads;     /* 0: not set, use the CPUs we may run on */

int sicm_migrate_set_threads(unsigned threads) {
  if (threads == 0 || threads > 256)
    return sicm_fail(EINVAL, "migration threads must be 1 to 256, not %u", threads);
  __atomic_store_n(&migrate_threads, threads, __ATOMIC_RELAXED);
  return 0;
}

static unsigned threads_configured(void) {
  unsigned n = __atomic_load_n(&migrate_threads, __ATOMIC_RELAXED);
  if (n != 0)
    return n;
  const char *env = getenv("SICM_MIGRATE_THREADS");
  if (env != NULL && atoi(env) > 0 && atoi(env) <= 256)
    return (unsigned)atoi(env);
  cpu_set_t set;
  return sched_getaffinity(0, sizeof set, &set) == 0 ? (unsigned)CPU_COUNT(&set) : 1;
}

typedef struct chunk {
  char *base;
  size_t len;
  int count;           /* 1: count off-target pages first (the used part) */
} chunk;

typedef struct move_job {
  const sicm_binding *to;
  chunk *chunks;
  unsigned nchunks;
  unsigned next;       /* atomic: next chunk to take */
  int strict;
  const int *cancel;   /* atomic, may be NULL */
  int error;           /* atomic: first errno */
  size_t bytes_moved;  /* atomic */
} move_job;

static int node_in(const sicm_binding *b, int node) {
  const unsigned bits = 8 * sizeof(unsigned long);
  return node >= 0 && node < 1024 && (b->nodemask[node / bits] >> (node % bits)) & 1;
}

/* Resident bytes of [base, base+len) not on the binding's nodes. */
static size_t bytes_off_target(char *base, size_t len, const sicm_binding *to) {
  enum { BATCH = 1024 };
  size_t page = (size_t)sysconf(_SC_PAGESIZE), off_target = 0;
  void *pages[BATCH];
  int status[BATCH];
  for (size_t off = 0; off < len; off += BATCH * page) {
    size_t n = (len - off) / page < BATCH ? (len - off) / page : BATCH;
    for (size_t i = 0; i < n; i++)
      pages[i] = base + off + i * page;
    if (move_pages(0, n, pages, NULL, status, 0) != 0)
      break;
    for (size_t i = 0; i < n; i++)
      off_target += status[i] >= 0 && !node_in(to, status[i]) ? page : 0;
  }
  return off_target;
}

static int chunk_move(move_job *job, const chunk *c) {
  const sicm_binding *to = job->to;
  size_t before = c->count ? bytes_off_target(c->base, c->len, to) : 0;
  unsigned flags = MPOL_MF_MOVE | (job->strict ? MPOL_MF_STRICT : 0);
  int rc, tries = 0;
  do
    rc = mbind(c->base, c->len, to->policy, to->nodemask, sizeof to->nodemask * 8, flags);
  while (rc != 0 && errno == EIO && ++tries < STRICT_RETRIES);
  if (rc != 0)
    return errno;
  __atomic_fetch_add(&job->bytes_moved, before, __ATOMIC_RELAXED);
  return 0;
}

static void *move_worker(void *arg) {
  move_job *job = arg;
  for (;;) {
    if (__atomic_load_n(&job->error, __ATOMIC_RELAXED) != 0 ||
        (job->cancel && __atomic_load_n(job->cancel, __ATOMIC_RELAXED)))
      break;
    unsigned i = __atomic_fetch_add(&job->next, 1, __ATOMIC_RELAXED);
    if (i >= job->nchunks)
      break;
    int err = chunk_move(job, &job->chunks[i]);
    int none = 0;
    if (err != 0)
      __atomic_compare_exchange_n(&job->error, &none, err, false, __ATOMIC_RELAXED,
                                  __ATOMIC_RELAXED);
  }
  return NULL;
}

/* Splits the windows into chunks: the used part in pieces for `threads`
 * movers, then the rest of each window.  Returns the chunk count or -1. */
static int chunks_plan(const sicm_window *w, unsigned nwindows, unsigned threads, chunk **out) {
  size_t used = 0;
  for (unsigned i = 0; i < nwindows; i++)
    used += w[i].used;
  size_t piece = used / threads / 4;  /* a few chunks per thread balance the load */
  piece = piece < CHUNK_MIN ? CHUNK_MIN : (piece + CHUNK_ALIGN - 1) & ~(CHUNK_ALIGN - 1);
  unsigned n = 0, cap = nwindows;
  for (unsigned i = 0; i < nwindows; i++)
    cap += (unsigned)(w[i].used / piece) + 1;
  chunk *chunks = calloc(cap, sizeof *chunks);
  if (chunks == NULL)
    return -1;
  for (unsigned i = 0; i < nwindows; i++) {
    size_t used_end = (w[i].used + CHUNK_ALIGN - 1) & ~(CHUNK_ALIGN - 1);
    if (used_end > w[i].size)
      used_end = w[i].size;
    for (size_t off = 0; off < used_end; off += piece)
      chunks[n++] = (chunk){w[i].base + off, off + piece < used_end ? piece : used_end - off, 1};
    if (used_end < w[i].size)
      chunks[n++] = (chunk){w[i].base + used_end, w[i].size - used_end, 0};
  }
  *out = chunks;
  return (int)n;
}

/* Moves the windows to `to`; returns 0 or an errno, with bytes moved. */
static int windows_move(const sicm_window *w, unsigned nwindows, const sicm_binding *to,
                        int strict, const int *cancel, size_t *bytes_moved, unsigned *threads) {
  size_t used = 0;
  for (unsigned i = 0; i < nwindows; i++)
    used += w[i].used;
  unsigned nthreads = threads_configured();
  if (used / CHUNK_MIN < nthreads)
    nthreads = used / CHUNK_MIN > 0 ? (unsigned)(used / CHUNK_MIN) : 1;
  move_job job = {.to = to, .strict = strict, .cancel = cancel};
  int n = chunks_plan(w, nwindows, nthreads, &job.chunks);
  if (n < 0)
    return ENOMEM;
  job.nchunks = (unsigned)n;
  pthread_t helpers[256];
  unsigned started = 0;
  for (; started + 1 < nthreads; started++)
    if (pthread_create(&helpers[started], NULL, move_worker, &job) != 0)
      break; /* fewer helpers: slower, still correct */
  move_worker(&job);
  for (unsigned i = 0; i < started; i++)
    pthread_join(helpers[i], NULL);
  free(job.chunks);
  *bytes_moved = job.bytes_moved;
  *threads = started + 1;
  if (job.error == 0 && job.next < job.nchunks) /* stopped early: cancelled */
    return ECANCELED;
  return job.error;
}

static unsigned windows_snapshot(sicm_arena_rec *rec, sicm_window *out) {
  unsigned n = rec->nwindows;
  memcpy(out, rec->windows, n * sizeof *out);
  return n;
}

/* Pages of the arena still off the binding, after a failed move. */
static size_t pages_off_target(const sicm_window *w, unsigned n, const sicm_binding *to) {
  size_t bytes = 0;
  for (unsigned i = 0; i < n; i++)
    bytes += bytes_off_target(w[i].base, w[i].used, to);
  return bytes / (size_t)sysconf(_SC_PAGESIZE);
}

/* Why a strict move failed: the target lacked memory, or pages were busy. */
static int failure_cause(int err, const sicm_binding *to, size_t failed_bytes) {
  if (err != EIO)
    return err;
  long long free_total = 0;
  for (unsigned i = 0; i < to->ndevices; i++) {
    long long free_node = 0;
    if (numa_node_size64(to->devices[i]->node, &free_node) >= 0)
      free_total += free_node;
  }
  return free_total < (long long)failed_bytes + (16ll << 20) ? ENOMEM : EIO;
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The whole migration of one arena; rec->migrate_lock held by the caller. */
static int migrate_locked(sicm_arena_rec *rec, const sicm_binding *to, const int *cancel,
                          sicm_migration_report *report) {
  sicm_window windows[SICM_WINDOWS_MAX];
  uint64_t start = now_ns();
  pthread_mutex_lock(&rec->window_lock);
  sicm_binding from = rec->binding;
  rec->binding = *to;
  unsigned n = windows_snapshot(rec, windows);
  pthread_mutex_unlock(&rec->window_lock);

  *report = (sicm_migration_report){0};
  /* Preferred placement may leave pages elsewhere; only binding is strict. */
  int strict = to->policy == MPOL_BIND || to->policy == MPOL_INTERLEAVE;
  int err = windows_move(windows, n, to, strict, cancel, &report->bytes_moved, &report->threads);
  if (err != 0) {
    /* Back to where the arena was: its binding, then every page it has. */
    pthread_mutex_lock(&rec->window_lock);
    rec->binding = from;
    n = windows_snapshot(rec, windows);
    pthread_mutex_unlock(&rec->window_lock);
    if (err != ECANCELED) {
      report->pages_failed = pages_off_target(windows, n, to);
      err = failure_cause(err, to, report->pages_failed * (size_t)sysconf(_SC_PAGESIZE));
    }
    size_t moved_back;
    unsigned threads;
    windows_move(windows, n, &from, 0, NULL, &moved_back, &threads);
  }
  report->error = err;
  report->nanoseconds = now_ns() - start;
  rec->last_migration = *report;
  rec->migrated = 1;
  return err;
}

static const char *cause_text(int err) {
  switch (err) {
  case ENOMEM: return "the target devices lack free memory for the arena's pages";
  case EIO: return "some pages could not be moved (pinned or busy)";
  case EPERM: return "moving pages mapped by several processes needs CAP_SYS_NICE";
  case ECANCELED: return "the migration was cancelled";
  default: return strerror(err);
  }
}

/* Checks arguments and builds the target binding; the live arena or NULL. */
static sicm_arena_rec *migrate_prepare(sicm_arena sa, sicm_device *const *devs, unsigned ndevs,
                                       unsigned flags, sicm_binding *to) {
  sicm_state *s = sicm_state_get();
  sicm_arena_rec *rec = s ? sicm_arena_resolve(sa) : NULL;
  if (rec == NULL)
    return NULL;
  if (flags & (SICM_ARENA_HUGEPAGES | SICM_ARENA_NOHUGEPAGES))
    return sicm_fail_null(EINVAL, "huge-page flags belong to sicm_arena_create_devices");
  return sicm_binding_make(s, devs, ndevs, flags, to) == 0 ? rec : NULL;
}

static int migrate_finish(int err, const sicm_migration_report *report) {
  if (err == 0)
    return 0;
  return sicm_fail(err, "arena migration failed and was rolled back: %s (%zu pages failed)",
                   cause_text(err), report->pages_failed);
}

int sicm_arena_set_devices(sicm_arena sa, sicm_device *const *devs, unsigned ndevs,
                           unsigned flags) {
  sicm_binding to;
  sicm_arena_rec *rec = migrate_prepare(sa, devs, ndevs, flags, &to);
  if (rec == NULL)
    return -1;
  sicm_migration_report report;
  pthread_mutex_lock(&rec->migrate_lock);
  int err = migrate_locked(rec, &to, NULL, &report);
  pthread_mutex_unlock(&rec->migrate_lock);
  return migrate_finish(err, &report);
}

int sicm_arena_set_device(sicm_arena sa, sicm_device *dev) {
  return sicm_arena_set_devices(sa, &dev, 1, 0);
}

int sicm_arena_last_migration(sicm_arena sa, sicm_migration_report *report) {
  sicm_arena_rec *rec = sicm_arena_resolve(sa);
  if (rec == NULL)
    return -1;
  if (report == NULL)
    return sicm_fail(EINVAL, "sicm_arena_last_migration: report is NULL");
  pthread_mutex_lock(&rec->migrate_lock);
  int migrated = rec->migrated;
  *report = rec->last_migration;
  pthread_mutex_unlock(&rec->migrate_lock);
  return migrated ? 0 : sicm_fail(ENOENT, "the arena was never migrated");
}

/* ---- asynchronous migrations ---- */

struct sicm_migration {
  pthread_t thread;
  sicm_arena_rec *rec;
  sicm_binding to;
  int cancel;                      /* atomic */
  int done;                        /* atomic */
  int error;
  sicm_migration_report report;
};

static void *migration_thread(void *arg) {
  sicm_migration *m = arg;
  pthread_mutex_lock(&m->rec->migrate_lock);
  m->error = migrate_locked(m->rec, &m->to, &m->cancel, &m->report);
  pthread_mutex_unlock(&m->rec->migrate_lock);
  __atomic_store_n(&m->done, 1, __ATOMIC_RELEASE);
  return NULL;
}

sicm_migration *sicm_arena_set_devices_async(sicm_arena sa, sicm_device *const *devs,
                                             unsigned ndevs, unsigned flags) {
  sicm_binding to;
  sicm_arena_rec *rec = migrate_prepare(sa, devs, ndevs, flags, &to);
  if (rec == NULL)
    return NULL;
  sicm_migration *m = calloc(1, sizeof *m);
  if (m == NULL)
    return sicm_fail_null(ENOMEM, "out of memory");
  m->rec = rec;
  m->to = to;
  if (pthread_create(&m->thread, NULL, migration_thread, m) != 0) {
    free(m);
    return sicm_fail_null(EAGAIN, "no thread could be started for the migration");
  }
  return m;
}

int sicm_migration_poll(const sicm_migration *m) {
  if (m == NULL)
    return sicm_fail(EINVAL, "sicm_migration_poll: NULL migration");
  return __atomic_load_n(&m->done, __ATOMIC_ACQUIRE);
}

int sicm_migration_cancel(sicm_migration *m) {
  if (m == NULL)
    return sicm_fail(EINVAL, "sicm_migration_cancel: NULL migration");
  __atomic_store_n(&m->cancel, 1, __ATOMIC_RELAXED);
  return 0;
}

int sicm_migration_wait(sicm_migration *m, sicm_migration_report *report) {
  if (m == NULL)
    return sicm_fail(EINVAL, "sicm_migration_wait: NULL migration");
  pthread_join(m->thread, NULL);
  if (report != NULL)
    *report = m->report;
  int rc = migrate_finish(m->error, &m->report);
  int err = errno;
  free(m);
  errno = err;
  return rc;
}
