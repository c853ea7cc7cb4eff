/* migrate.c: moving a whole arena to other devices — synchronously or in
 * the background — with rollback on failure and a report.
 *
 * An arena's pages all lie in its windows.  A migration first records the
 * new binding (windows reserved meanwhile get it) and re-binds each window
 * with mbind and no MOVE flag, so every page touched from then on faults in
 * on the target; then it moves the pages already resident in the used part
 * of the windows.  Arenas in huge pages are split into chunks that several
 * threads move with move_pages(2), which holds the mmap lock only for
 * reading, so the threads really run in parallel.  Arenas in 4 KiB pages are
 * moved by one thread with mbind(MPOL_MF_MOVE), faster per page (see
 * windows_move).  Resident pages are counted before and after, so the report
 * says exactly what moved and what failed. */
#define _GNU_SOURCE
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "arena.h"

#define CHUNK_MIN ((size_t)64 << 20) /* below this per thread, one thread moves all */
#define CHUNK_ALIGN ((size_t)2 << 20)

/* Set by sicm_migrate_set_threads (the program's choice beats the
 * environment's, sc_options.migrate_threads); 0: not set. */
static unsigned migrate_threads;

int sicm_migrate_set_threads(unsigned threads) {
  if (threads == 0 || threads > 256)
    return sc_fail(EINVAL, "migration threads must be 1 to 256, not %u", threads);
  __atomic_store_n(&migrate_threads, threads, __ATOMIC_RELAXED);
  return 0;
}

static unsigned threads_configured(const sc_state *s) {
  unsigned n = __atomic_load_n(&migrate_threads, __ATOMIC_RELAXED);
  if (n != 0)
    return n;
  if (s->options.migrate_threads != 0)
    return s->options.migrate_threads;
  cpu_set_t set;
  return sched_getaffinity(0, sizeof set, &set) == 0 ? (unsigned)CPU_COUNT(&set) : 1;
}

typedef struct chunk {
  char *base;
  size_t len;
} chunk;

typedef struct move_job {
  const sc_binding *to;
  int strict;           /* pages left off the target are a failure */
  int by_mbind;         /* 4 KiB pages: one mbind(MPOL_MF_MOVE) per chunk */
  int move_flag;        /* MPOL_MF_MOVE, or MPOL_MF_MOVE_ALL for a shared arena */
  int nodes[SICM_ARENA_DEVICES_MAX];
  unsigned nnodes;
  chunk *chunks;
  unsigned nchunks;
  unsigned next;        /* atomic: next chunk to take */
  const int *cancel;    /* atomic, may be NULL */
  int error;            /* atomic: errno of the first failure */
  size_t bytes_moved;   /* atomic */
  size_t pages_failed;  /* atomic */
} move_job;

static void job_fail(move_job *job, int err) {
  int none = 0;
  __atomic_compare_exchange_n(&job->error, &none, err, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* Why one page did not move, as the errno the migration reports. */
static int page_error(int status) {
  switch (-status) {
  case ENOMEM: return ENOMEM;          /* the target node is full */
  case EACCES: return EPERM;           /* mapped by other processes too */
  default: return EIO;                 /* busy, pinned, or being freed */
  }
}

/* Large batches: each move_pages call that moves drains every CPU's LRU
 * cache and waits for an expedited RCU grace period. */
enum { BATCH = 65536, MOVE_ATTEMPTS = 4 };

/* Keeps the entries of pages/nodes whose page is resident off the target;
 * returns how many.  status holds the pages' current nodes. */
static size_t keep_off_target(const move_job *job, void **pages, int *nodes, const int *status,
                              size_t n) {
  size_t kept = 0;
  for (size_t i = 0; i < n; i++)
    if (status[i] >= 0 && !sc_nodemask_has(&job->to->nodes, status[i])) {
      pages[kept] = pages[i];
      nodes[kept++] = nodes[i];
    }
  return kept;
}

/* Moves the pages of one batch that are off the target; returns the bytes
 * moved and adds the pages that would not move to job->pages_failed. */
static size_t batch_move(move_job *job, char *base, size_t npages, size_t first_index,
                         void **pages, int *nodes, int *status) {
  size_t page = sc_page_size();
  int interleave = job->to->policy == MPOL_INTERLEAVE;
  for (size_t i = 0; i < npages; i++) {
    pages[i] = base + i * page;
    /* Interleave by 2 MiB, not by page: the subpages of a huge page asked
     * to go to different nodes would move the whole huge page each time. */
    nodes[i] = job->nodes[interleave ? ((first_index + i) * page / CHUNK_ALIGN) % job->nnodes : 0];
  }
  if (move_pages(0, npages, pages, NULL, status, 0) < 0) {
    job_fail(job, errno);
    return 0;
  }
  size_t off_target = keep_off_target(job, pages, nodes, status, npages), remaining = off_target;
  int page_status = 0, call_error = 0;
  for (unsigned attempt = 0; remaining > 0 && attempt < MOVE_ATTEMPTS; attempt++) {
    if (attempt > 0 && !interleave) /* a full device: try the arena's others */
      for (size_t i = 0; i < remaining; i++)
        nodes[i] = job->nodes[attempt % job->nnodes];
    if (move_pages(0, remaining, pages, nodes, status, job->move_flag) < 0 && errno != ENOENT) {
      call_error = errno; /* e.g. ENOMEM for the whole call: counted as failed below */
      break;
    }
    for (size_t i = 0; i < remaining && page_status == 0; i++)
      if (status[i] < 0 && status[i] != -EBUSY)
        page_status = status[i];
    /* Ask again: a huge page moves whole with its first subpage, and its
     * other subpages then report EBUSY although they moved. */
    if (move_pages(0, remaining, pages, NULL, status, 0) < 0) {
      call_error = errno;
      break;
    }
    remaining = keep_off_target(job, pages, nodes, status, remaining);
  }
  if (remaining > 0 && job->strict) {
    __atomic_fetch_add(&job->pages_failed, remaining, __ATOMIC_RELAXED);
    job_fail(job, call_error ? call_error : page_error(page_status ? page_status : -EBUSY));
  }
  return (off_target - remaining) * page;
}

/* The errno that describes a failed job: a failed strict move is ENOMEM
 * when the target lacks room. */
static int job_errno(const move_job *job) {
  if (job->error != EIO)
    return job->error;
  long long free_total = 0;
  for (unsigned i = 0; i < job->nnodes; i++) {
    long long free_node = 0;
    if (numa_node_size64(job->nodes[i], &free_node) >= 0)
      free_total += free_node;
  }
  size_t needed = job->pages_failed * sc_page_size();
  return free_total < (long long)needed + (16ll << 20) ? ENOMEM : EIO;
}

/* Resident pages of [base, base + npages pages) off the target. */
static size_t count_off_target(const move_job *job, char *base, size_t npages, void **pages,
                               int *status) {
  size_t page = sc_page_size(), off = 0;
  for (size_t done = 0; done < npages; done += BATCH) {
    size_t n = npages - done < BATCH ? npages - done : BATCH;
    for (size_t i = 0; i < n; i++)
      pages[i] = base + (done + i) * page;
    if (move_pages(0, n, pages, NULL, status, 0) < 0)
      return off;
    for (size_t i = 0; i < n; i++)
      off += status[i] >= 0 && !sc_nodemask_has(&job->to->nodes, status[i]);
  }
  return off;
}

/* Moves a chunk of 4 KiB pages with mbind(MPOL_MF_MOVE): it walks the page
 * table once instead of looking up each page, which measured 1.5x faster
 * than move_pages for 4 KiB pages in one thread; it holds the mmap lock for
 * writing, so it runs in one thread only.  Returns the bytes moved. */
static size_t chunk_mbind(move_job *job, const chunk *c, void **pages, int *status) {
  const sc_binding *to = job->to;
  size_t page = sc_page_size(), npages = c->len / page;
  size_t off = count_off_target(job, c->base, npages, pages, status);
  unsigned flags = (unsigned)job->move_flag | (job->strict ? MPOL_MF_STRICT : 0);
  for (unsigned attempt = 0; attempt < MOVE_ATTEMPTS; attempt++) {
    if (mbind(c->base, c->len, to->policy, to->nodes.bits, SC_NODES_MAX, flags) == 0)
      return off * page;
    if (errno != EIO) /* EIO: some pages did not move (busy or no room): again */
      break;
  }
  int err = errno;
  size_t failed = count_off_target(job, c->base, npages, pages, status);
  if (job->strict) {
    __atomic_fetch_add(&job->pages_failed, failed, __ATOMIC_RELAXED);
    job_fail(job, err);
  }
  return (off - failed) * page;
}

static void *move_worker(void *arg) {
  move_job *job = arg;
  size_t page = sc_page_size();
  void **pages = malloc(BATCH * sizeof *pages);
  int *nodes = malloc(BATCH * sizeof *nodes), *status = malloc(BATCH * sizeof *status);
  if (!pages || !nodes || !status)
    job_fail(job, ENOMEM);
  for (;;) {
    if (__atomic_load_n(&job->error, __ATOMIC_RELAXED) != 0 ||
        (job->cancel && __atomic_load_n(job->cancel, __ATOMIC_RELAXED)))
      break;
    unsigned i = __atomic_fetch_add(&job->next, 1, __ATOMIC_RELAXED);
    if (i >= job->nchunks)
      break;
    const chunk *c = &job->chunks[i];
    size_t npages = c->len / page, moved = 0;
    if (job->by_mbind)
      moved = chunk_mbind(job, c, pages, status);
    else
      for (size_t off = 0; off < npages; off += BATCH)
        moved += batch_move(job, c->base + off * page, npages - off < BATCH ? npages - off : BATCH,
                            ((uintptr_t)c->base / page) + off, pages, nodes, status);
    __atomic_fetch_add(&job->bytes_moved, moved, __ATOMIC_RELAXED);
  }
  free(pages);
  free(nodes);
  free(status);
  return NULL;
}

/* Splits the used part of the windows into chunks for `threads` movers;
 * returns the chunk count or -1. */
static int chunks_plan(const sc_window *w, unsigned nwindows, unsigned threads, chunk **out) {
  size_t used = 0;
  for (unsigned i = 0; i < nwindows; i++)
    used += w[i].used;
  size_t piece = used / threads / 4;  /* a few chunks per thread balance the load */
  piece = piece < CHUNK_MIN ? CHUNK_MIN : (piece + CHUNK_ALIGN - 1) & ~(CHUNK_ALIGN - 1);
  unsigned n = 0, cap = 0;
  for (unsigned i = 0; i < nwindows; i++)
    cap += (unsigned)(w[i].used / piece) + 1;
  chunk *chunks = calloc(cap ? cap : 1, sizeof *chunks);
  if (chunks == NULL)
    return -1;
  size_t page = sc_page_size();
  for (unsigned i = 0; i < nwindows; i++) {
    size_t used_end = (w[i].used + page - 1) & ~(page - 1);
    for (size_t off = 0; off < used_end; off += piece)
      chunks[n++] = (chunk){w[i].base + off, off + piece < used_end ? piece : used_end - off};
  }
  *out = chunks;
  return (int)n;
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

/* Moves the used part of the windows to `to`; 0, or -1 with errno and the
 * cause.  The policy of the windows is set by the caller. */
static int windows_move(const sc_window *w, unsigned nwindows, const sc_binding *to,
                        int strict, int huge, int move_flag, const int *cancel,
                        sicm_migration_report *report) {
  size_t used = 0;
  for (unsigned i = 0; i < nwindows; i++)
    used += w[i].used;
  /* Huge pages: parallel move_pages.  4 KiB pages: one thread with mbind;
   * in the TCG guest, parallel movers of 4 KiB pages were slower than one
   * (every unmap then needs a TLB-shootdown IPI to the other mover's CPU). */
  unsigned nthreads = huge ? threads_configured(sc_state_get()) : 1;
  if (used / CHUNK_MIN < nthreads)
    nthreads = used / CHUNK_MIN > 0 ? (unsigned)(used / CHUNK_MIN) : 1;
  move_job job = {.to = to, .strict = strict, .by_mbind = !huge, .move_flag = move_flag,
                  .cancel = cancel, .nnodes = to->ndevices};
  for (unsigned i = 0; i < to->ndevices; i++)
    job.nodes[i] = to->devices[i]->node;
  int n = chunks_plan(w, nwindows, nthreads, &job.chunks);
  if (n < 0)
    return sc_fail(ENOMEM, "out of memory planning the migration");
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
  report->bytes_moved += job.bytes_moved;
  report->pages_failed += job.pages_failed;
  report->threads = started + 1;
  if (job.error == 0 && job.next < job.nchunks) /* stopped early: cancelled */
    return sc_fail(ECANCELED, "%s", cause_text(ECANCELED));
  if (job.error == 0)
    return 0;
  int err = job_errno(&job);
  return sc_fail(err, "%s", cause_text(err));
}

/* Binds every window to `to` (no page moves: cheap), so that pages touched
 * from now on fault in on the target; 0 or -1. */
static int windows_bind(const sc_window *w, unsigned n, const sc_binding *to) {
  for (unsigned i = 0; i < n; i++)
    if (mbind(w[i].base, w[i].size, to->policy, to->nodes.bits, SC_NODES_MAX, 0) != 0)
      return sc_fail(errno, "mbind of the arena's windows to the target failed: %s",
                     strerror(errno));
  return 0;
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Back to where the arena was after a failed move: its binding, then every
 * page it has.  Best effort: what does not move back stays where it is,
 * and the migration's own failure is what the caller reports. */
static void migrate_roll_back(sc_arena *a, const sc_binding *from, int huge) {
  sc_window windows[SC_WINDOWS_MAX];
  pthread_mutex_lock(&a->window_lock);
  a->binding = *from;
  pthread_mutex_unlock(&a->window_lock);
  unsigned n = sc_window_snapshot(a, windows);
  sicm_migration_report back = {0};
  (void)windows_bind(windows, n, from); /* pages move back below even if this fails */
  (void)windows_move(windows, n, from, 0, huge, a->ops->move_flag, NULL, &back);
}

/* Moves the arena; a->migrate_lock held by the caller.  0, or -1 with
 * errno and detail, the arena rolled back; the report either way. */
static int migrate_locked(sc_arena *a, const sc_binding *to, const int *cancel,
                          sicm_migration_report *report) {
  sc_window windows[SC_WINDOWS_MAX];
  uint64_t start = now_ns();
  *report = (sicm_migration_report){0};
  /* An arena other processes share: they must not move it meanwhile, its
   * binding may have changed there, and pages only they touched must be
   * mapped here to be moved at all. */
  if (a->ops->move_begin != NULL && a->ops->move_begin(a) != 0) {
    report->error = errno;
    return -1;
  }
  /* New binding first (windows reserved from now on get it), then the
   * windows' policy, then a snapshot of what is used: every page touched
   * after the policy changed is already on the target. */
  pthread_mutex_lock(&a->window_lock);
  sc_binding from = a->binding;
  a->binding = *to;
  pthread_mutex_unlock(&a->window_lock);
  unsigned n = sc_window_snapshot(a, windows);
  int rc = windows_bind(windows, n, to);
  n = sc_window_snapshot(a, windows);
  /* Preferred placement may leave pages elsewhere; only binding is strict. */
  int strict = to->policy == MPOL_BIND || to->policy == MPOL_INTERLEAVE;
  int huge = (a->flags & SICM_ARENA_HUGEPAGES) || __atomic_load_n(&a->thp_advised, __ATOMIC_RELAXED);
  if (rc == 0)
    rc = windows_move(windows, n, to, strict, huge, a->ops->move_flag, cancel, report);
  int err = rc ? errno : 0;
  if (rc != 0) {
    char cause[256];
    snprintf(cause, sizeof cause, "%s", sicm_error_detail());
    migrate_roll_back(a, &from, huge);
    sc_fail(err, "arena migration failed and was rolled back: %s (%zu pages failed)", cause,
            report->pages_failed);
  }
  if (a->ops->move_end != NULL && a->ops->move_end(a, rc == 0) != 0 && rc == 0) {
    rc = -1; /* the pages moved, but other processes were not told */
    err = errno;
  }
  report->error = err;
  report->nanoseconds = now_ns() - start;
  a->last_migration = *report;
  a->migrated = 1;
  __atomic_fetch_add(rc == 0 ? &a->migrations_done : &a->migrations_failed, 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&a->migration_ns, report->nanoseconds, __ATOMIC_RELAXED);
  __atomic_fetch_add(&a->migration_bytes, report->bytes_moved, __ATOMIC_RELAXED);
  errno = err;
  return rc;
}

/* Checks arguments and builds the target binding; the live arena or NULL. */
static sc_arena *migrate_prepare(sicm_arena sa, sicm_device *const *devs, unsigned ndevs,
                                       unsigned flags, sc_binding *to) {
  sc_state *s = sc_state_get();
  sc_arena *a = s ? sc_arena_resolve(sa) : NULL;
  if (a == NULL)
    return NULL;
  if (flags & (SICM_ARENA_HUGEPAGES | SICM_ARENA_NOHUGEPAGES))
    return sc_fail_null(EINVAL, "huge-page flags belong to sicm_arena_create_devices");
  return sc_binding_make(s, devs, ndevs, flags, to) == 0 ? a : NULL;
}

int sicm_arena_set_devices(sicm_arena sa, sicm_device *const *devs, unsigned ndevs,
                           unsigned flags) {
  sc_binding to;
  sc_arena *a = migrate_prepare(sa, devs, ndevs, flags, &to);
  if (a == NULL)
    return -1;
  sicm_migration_report report;
  pthread_mutex_lock(&a->migrate_lock);
  int rc = migrate_locked(a, &to, NULL, &report);
  int err = errno;
  pthread_mutex_unlock(&a->migrate_lock);
  errno = err;
  return rc;
}

int sicm_arena_set_device(sicm_arena sa, sicm_device *dev) {
  return sicm_arena_set_devices(sa, &dev, 1, 0);
}

int sicm_arena_last_migration(sicm_arena sa, sicm_migration_report *report) {
  sc_arena *a = sc_arena_resolve(sa);
  if (a == NULL)
    return -1;
  if (report == NULL)
    return sc_fail(EINVAL, "sicm_arena_last_migration: report is NULL");
  pthread_mutex_lock(&a->migrate_lock);
  int migrated = a->migrated;
  *report = a->last_migration;
  pthread_mutex_unlock(&a->migrate_lock);
  return migrated ? 0 : sc_fail(ENOENT, "the arena was never migrated");
}

/* ---- asynchronous migrations ---- */

struct sicm_migration {
  pthread_t thread;
  sc_arena *arena;
  sc_binding to;
  int cancel;                      /* atomic */
  int done;                        /* atomic */
  int error;                       /* errno of a failed migration, 0 */
  char detail[256];                /* its description, from the mover thread */
  sicm_migration_report report;
};

static void *migration_thread(void *arg) {
  sicm_migration *m = arg;
  pthread_mutex_lock(&m->arena->migrate_lock);
  if (migrate_locked(m->arena, &m->to, &m->cancel, &m->report) != 0) {
    m->error = errno;
    snprintf(m->detail, sizeof m->detail, "%s", sicm_error_detail());
  }
  pthread_mutex_unlock(&m->arena->migrate_lock);
  __atomic_store_n(&m->done, 1, __ATOMIC_RELEASE);
  return NULL;
}

sicm_migration *sicm_arena_set_devices_async(sicm_arena sa, sicm_device *const *devs,
                                             unsigned ndevs, unsigned flags) {
  sc_binding to;
  sc_arena *a = migrate_prepare(sa, devs, ndevs, flags, &to);
  if (a == NULL)
    return NULL;
  sicm_migration *m = calloc(1, sizeof *m);
  if (m == NULL)
    return sc_fail_null(ENOMEM, "out of memory");
  m->arena = a;
  m->to = to;
  if (pthread_create(&m->thread, NULL, migration_thread, m) != 0) {
    free(m);
    return sc_fail_null(EAGAIN, "no thread could be started for the migration");
  }
  return m;
}

int sicm_migration_poll(const sicm_migration *m) {
  if (m == NULL)
    return sc_fail(EINVAL, "sicm_migration_poll: NULL migration");
  return __atomic_load_n(&m->done, __ATOMIC_ACQUIRE);
}

int sicm_migration_cancel(sicm_migration *m) {
  if (m == NULL)
    return sc_fail(EINVAL, "sicm_migration_cancel: NULL migration");
  __atomic_store_n(&m->cancel, 1, __ATOMIC_RELAXED);
  return 0;
}

int sicm_migration_wait(sicm_migration *m, sicm_migration_report *report) {
  if (m == NULL)
    return sc_fail(EINVAL, "sicm_migration_wait: NULL migration");
  pthread_join(m->thread, NULL);
  if (report != NULL)
    *report = m->report;
  int err = m->error;
  if (err != 0)
    sc_fail(err, "%s", m->detail);
  free(m);
  return err ? -1 : 0;
}
