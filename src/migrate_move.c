/* SPDX-License-Identifier: BSD-3-Clause */
/* migrate_move.c: moving the resident pages of an arena's windows to a
 * binding, and saying what moved.  Only resident pages are looked at
 * (arena_resident.c), up to each window's reach (what jemalloc committed),
 * so a move costs what the arena holds, not the range it ever took.
 * Pages move with move_pages(2), which takes the mmap lock only for
 * reading and says for each page where it went or why it stayed.  Arenas
 * in 4 KiB pages move from one thread (a second mover's TLB-shootdown IPIs
 * cost more than it gains; BENCHMARKS.md).  Arenas in huge pages are split
 * into chunks for several threads; how they move their huge pages
 * (SICM_MIGRATE_HUGE, mbind among them) was chosen by bench_migrate.
 * Resident pages off the target are counted before and after, so the
 * report says exactly what moved and what failed. */
#define _GNU_SOURCE
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "migrate.h"

#define CHUNK_MIN ((size_t)64 << 20) /* below this per thread, one thread moves all */
#define HUGE_PAGE ((size_t)2 << 20)
#define MBIND_PIECE ((size_t)2 << 20) /* see chunk_mbind */
#define FEW_PAGES 16                  /* see chunk_count */

/* Set by sicm_migrate_set_threads (the program's choice beats the
 * environment's); 0: not set. */
static unsigned migrate_threads;
/* SICM_MIGRATE_THREADS (0: the CPUs we may run on) and SICM_MIGRATE_HUGE,
 * read by each sicm_init. */
static unsigned env_threads;
static sc_move_method env_huge_method;

void sc_migrate_read_options(void) {
  unsigned threads = (unsigned)sc_env_integer("SICM_MIGRATE_THREADS", 1, 256, 0,
                                              "a whole number from 1 to 256");
  static const char *const names[] = {"heads", "subpages", "mbind", NULL};
  static const sc_move_method methods[] = {SC_MOVE_HEADS, SC_MOVE_SUBPAGES, SC_MOVE_MBIND};
  sc_move_method huge = methods[sc_env_choice("SICM_MIGRATE_HUGE", names, 0,
                                              "heads, subpages or mbind")];
  __atomic_store_n(&env_threads, threads, __ATOMIC_RELAXED);
  __atomic_store_n(&env_huge_method, huge, __ATOMIC_RELAXED);
}

sc_migrate_options sc_migrate_options_get(void) {
  return (sc_migrate_options){__atomic_load_n(&env_threads, __ATOMIC_RELAXED),
                              __atomic_load_n(&env_huge_method, __ATOMIC_RELAXED)};
}

int sicm_migrate_set_threads(unsigned threads) {
  if (threads == 0 || threads > 256)
    return sc_fail(EINVAL, "migration threads must be 1 to 256, not %u", threads);
  __atomic_store_n(&migrate_threads, threads, __ATOMIC_RELAXED);
  return 0;
}

static unsigned threads_configured(void) {
  unsigned n = __atomic_load_n(&migrate_threads, __ATOMIC_RELAXED);
  if (n == 0)
    n = __atomic_load_n(&env_threads, __ATOMIC_RELAXED);
  if (n != 0)
    return n;
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
  sc_move_method method;
  int small_pages;      /* 4 KiB pages: each page moves alone */
  int by_mbind;         /* huge pages by SC_MOVE_MBIND: mbind(MPOL_MF_MOVE) per chunk */
  int by_heads;         /* huge pages by SC_MOVE_HEADS */
  int move_flag;        /* MPOL_MF_MOVE, or MPOL_MF_MOVE_ALL for a shared arena */
  int nodes[SICM_ARENA_DEVICES_MAX];
  unsigned nnodes;
  chunk *chunks;
  unsigned nchunks;
  size_t chunk_pages_max;
  unsigned next;        /* atomic: next chunk to take */
  sc_move_watch *watch; /* may be NULL */
  int error;            /* atomic: errno of the first failure */
  size_t bytes_moved;   /* atomic */
  size_t pages_failed;  /* atomic */
} move_job;

/* One mover thread's state while it works on a chunk. */
typedef struct mover {
  move_job *job;
  sc_page_list heads;   /* SC_MOVE_HEADS: one page per 2 MiB block */
  size_t off_target;    /* counting: resident pages off the target */
  size_t absent;        /* counting: listed pages with no page behind them */
  char *low, *high;     /* counting: the span of those pages */
  size_t moved;         /* bytes moved in this chunk */
} mover;

/* Bytes the mover just moved: its chunk's count, and the watch's. */
static void mover_moved(mover *m, size_t bytes) {
  m->moved += bytes;
  if (m->job->watch)
    __atomic_fetch_add(&m->job->watch->moved, bytes, __ATOMIC_RELAXED);
}

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

enum { MOVE_ATTEMPTS = 4 };

static int on_target(const move_job *job, int status) {
  return status < 0 || sc_nodemask_has(&job->to->nodes, status);
}

/* A page that is no longer there (or is the shared zero page): the kernel
 * may free a huge page's unused subpages while it moves it.  Such a page
 * did not move, and has nothing left to move. */
static int page_gone(int status) {
  return status == -ENOENT || status == -EFAULT;
}

/* Keeps the entries of l whose page is resident off the target (status
 * holds the pages' nodes) with the node each should go to; returns how
 * many, and adds the pages gone to *gone.  Interleaving goes by page in
 * 4 KiB arenas, as the kernel's does, and by 2 MiB in the others:
 * subpages of a huge page sent to different nodes would move the whole
 * huge page each time. */
static size_t keep_off_target(const move_job *job, sc_page_list *l, size_t n, size_t *gone) {
  int interleave = sc_policy_interleaves(job->to->policy);
  uintptr_t unit = job->small_pages ? sc_page_size() : HUGE_PAGE;
  size_t kept = 0;
  for (size_t i = 0; i < n; i++)
    if (page_gone(l->status[i]))
      ++*gone;
    else if (!on_target(job, l->status[i])) {
      l->pages[kept] = l->pages[i];
      l->nodes[kept++] = job->nodes[interleave ? ((uintptr_t)l->pages[i] / unit) % job->nnodes : 0];
    }
  return kept;
}

/* After a move_pages call that moved 4 KiB pages, keeps the entries of l
 * whose page is still off the target (status holds where each page is, or
 * why it did not move), with the node each was sent to; returns how many,
 * and adds the pages gone meanwhile to *gone. */
static size_t keep_unmoved(const move_job *job, sc_page_list *l, size_t n, size_t *gone) {
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    int status = l->status[i];
    if (page_gone(status)) {
      ++*gone;
      continue;
    }
    if (status >= 0 && sc_nodemask_has(&job->to->nodes, status))
      continue;
    l->pages[kept] = l->pages[i];
    l->nodes[kept++] = l->nodes[i];
  }
  return kept;
}

/* Moves the first page of each 2 MiB block among l's n pages: the kernel
 * moves a transparent huge page whole with it, and looks each of the other
 * 511 entries up only to find it busy. */
static void heads_move(mover *m, sc_page_list *l, size_t n) {
  sc_page_list *h = &m->heads;
  h->n = 0;
  for (size_t i = 0; i < n; i++)
    if (h->n == 0 || (uintptr_t)l->pages[i] / HUGE_PAGE != (uintptr_t)h->pages[h->n - 1] / HUGE_PAGE) {
      h->pages[h->n] = l->pages[i];
      h->nodes[h->n++] = l->nodes[i];
    }
  (void)move_pages(0, h->n, h->pages, h->nodes, h->status, m->job->move_flag); /* checked below */
}

/* Moves the pages of one batch that are off the target (move_pages). */
static int batch_move(sc_page_list *l, void *ctx) {
  mover *m = ctx;
  move_job *job = m->job;
  size_t page = sc_page_size();
  if (move_pages(0, l->n, l->pages, NULL, l->status, 0) < 0) {
    job_fail(job, errno);
    return -1;
  }
  size_t absent = 0, gone = 0; /* absent before the move, and gone during it */
  size_t off_target = keep_off_target(job, l, l->n, &absent), remaining = off_target;
  int page_status = 0, call_error = 0;
  if (remaining > 0 && job->by_heads) {
    heads_move(m, l, remaining);
    if (move_pages(0, remaining, l->pages, NULL, l->status, 0) < 0) {
      job_fail(job, errno);
      return -1;
    }
    remaining = keep_off_target(job, l, remaining, &gone);
  }
  for (unsigned attempt = 0; remaining > 0 && attempt < MOVE_ATTEMPTS; attempt++) {
    if (attempt > 0 && !sc_policy_interleaves(job->to->policy)) /* a full device: the others */
      for (size_t i = 0; i < remaining; i++)
        l->nodes[i] = job->nodes[attempt % job->nnodes];
    if (move_pages(0, remaining, l->pages, l->nodes, l->status, job->move_flag) < 0 &&
        errno != ENOENT) {
      call_error = errno; /* e.g. ENOMEM for the whole call: counted as failed below */
      break;
    }
    for (size_t i = 0; i < remaining && page_status == 0; i++)
      if (l->status[i] < 0 && l->status[i] != -EBUSY)
        page_status = l->status[i];
    if (job->small_pages) {
      remaining = keep_unmoved(job, l, remaining, &gone);
      continue;
    }
    /* Ask again: a huge page moves whole with its first subpage, and its
     * other subpages then report EBUSY although they moved. */
    if (move_pages(0, remaining, l->pages, NULL, l->status, 0) < 0) {
      call_error = errno;
      break;
    }
    remaining = keep_off_target(job, l, remaining, &gone);
  }
  if (remaining > 0 && job->strict) {
    __atomic_fetch_add(&job->pages_failed, remaining, __ATOMIC_RELAXED);
    job_fail(job, call_error ? call_error : page_error(page_status ? page_status : -EBUSY));
  }
  mover_moved(m, (off_target - remaining - gone) * page);
  return 0;
}

/* Counts the pages of one batch that are off the target, and their span. */
static int batch_count(sc_page_list *l, void *ctx) {
  mover *m = ctx;
  if (move_pages(0, l->n, l->pages, NULL, l->status, 0) < 0) {
    job_fail(m->job, errno);
    return -1;
  }
  for (size_t i = 0; i < l->n; i++)
    if (page_gone(l->status[i]))
      m->absent++;
    else if (!on_target(m->job, l->status[i])) {
      char *p = l->pages[i];
      if (m->off_target++ == 0)
        m->low = p;
      m->high = p + sc_page_size();
    }
  return 0;
}

/* Hands the chunk's resident pages to l's flush; 0, or -1 with the job
 * failed.  A chunk of FEW_PAGES or less is listed whole, without mincore:
 * the query reports its absent pages as ENOENT, which counts as on the
 * target, and asking for a few absent pages costs less than mincore's
 * fixed cost (it takes and frees a page per call). */
static int chunk_list(mover *m, sc_page_list *l, const chunk *c, sc_page_list_flush flush) {
  l->flush = flush;
  size_t npages = c->len / sc_page_size();
  long listed = npages <= FEW_PAGES ? sc_page_list_append_run(l, c->base, npages)
                                    : sc_resident_pages(c->base, c->len, l);
  if (listed >= 0 && sc_page_list_flush_now(l) == 0)
    return 0;
  job_fail(m->job, errno);
  return -1;
}

/* Resident pages of the chunk off the target (and their span, and the
 * listed pages that are absent, in m). */
static long chunk_count(mover *m, sc_page_list *l, const chunk *c) {
  m->off_target = 0;
  m->absent = 0;
  return chunk_list(m, l, c, batch_count) == 0 ? (long)m->off_target : -1;
}

/* mbind(MPOL_MF_MOVE) of [p, p + len); 0, or -1 with errno. */
static int span_mbind(const move_job *job, char *p, size_t len) {
  const sc_binding *to = job->to;
  unsigned flags = (unsigned)job->move_flag | (job->strict ? MPOL_MF_STRICT : 0);
  for (unsigned attempt = 0; attempt < MOVE_ATTEMPTS; attempt++) {
    if (mbind(p, len, to->policy, to->nodes.bits, SC_NODES_MAX, flags) == 0)
      return 0;
    if (errno != EIO) /* EIO: some pages did not move (busy or no room): again */
      break;
  }
  return -1;
}

/* Moves a chunk with mbind(MPOL_MF_MOVE) over the span of its pages off
 * the target, MBIND_PIECE at a time: mbind holds the mmap lock for
 * writing, and a thread that touches a page being moved waits for the
 * lock, so one call over 64 MiB stalled writers for the whole move.
 * Nothing to move costs no mbind. */
static void chunk_mbind(mover *m, sc_page_list *l, const chunk *c) {
  move_job *job = m->job;
  long off = chunk_count(m, l, c);
  if (off <= 0)
    return;
  size_t absent_before = m->absent;
  int rc = 0;
  for (char *p = m->low; p < m->high && rc == 0;) {
    char *end = (char *)sc_round_up((uintptr_t)p + 1, MBIND_PIECE);
    end = end < m->high ? end : m->high;
    rc = span_mbind(job, p, (size_t)(end - p));
    p = end;
  }
  int err = rc != 0 ? errno : 0;
  long failed = chunk_count(m, l, c); /* may count pages that fell back meanwhile */
  if (failed < 0)
    return;
  /* Pages absent now that were there before went away, not to the target. */
  long gone = m->absent > absent_before ? (long)(m->absent - absent_before) : 0;
  long moved = off - failed - gone;
  mover_moved(m, (size_t)(moved > 0 ? moved : 0) * sc_page_size());
  if (rc == 0) {
    /* mbind passes over a page that other processes map too, without an
     * error even when strict: move_pages tries what is left, and says why
     * it stays. */
    if (failed > 0)
      (void)chunk_list(m, l, c, batch_move);
  } else if (job->strict) {
    __atomic_fetch_add(&job->pages_failed, (size_t)failed, __ATOMIC_RELAXED);
    job_fail(job, err);
  }
}

static void *move_worker(void *arg) {
  move_job *job = arg;
  mover m = {.job = job};
  /* A few pages' list lives on the stack: a small move costs little more
   * than its system calls. */
  void *few_pages[FEW_PAGES];
  int few_nodes[FEW_PAGES], few_status[FEW_PAGES];
  int few = job->chunk_pages_max <= FEW_PAGES;
  sc_page_list list = {.pages = few_pages, .nodes = few_nodes, .status = few_status,
                       .cap = FEW_PAGES, .flush = batch_move, .ctx = &m};
  if ((!few && sc_page_list_init(&list, job->chunk_pages_max, batch_move, &m) != 0) ||
      (job->by_heads && sc_page_list_init(&m.heads, list.cap, NULL, NULL) != 0))
    job_fail(job, ENOMEM);
  for (;;) {
    if (__atomic_load_n(&job->error, __ATOMIC_RELAXED) != 0 ||
        (job->watch && __atomic_load_n(&job->watch->cancel, __ATOMIC_RELAXED)))
      break;
    unsigned i = __atomic_fetch_add(&job->next, 1, __ATOMIC_RELAXED);
    if (i >= job->nchunks)
      break;
    const chunk *c = &job->chunks[i];
    m.moved = 0;
    if (job->by_mbind)
      chunk_mbind(&m, &list, c);
    else
      (void)chunk_list(&m, &list, c, batch_move); /* failures are in job */
    __atomic_fetch_add(&job->bytes_moved, m.moved, __ATOMIC_RELAXED);
  }
  if (!few)
    sc_page_list_free(&list);
  sc_page_list_free(&m.heads);
  return NULL;
}

/* Splits the used part of the windows into chunks for `threads` movers;
 * returns the chunk count or -1. */
static int chunks_plan(const sc_window *w, unsigned nwindows, unsigned threads,
                       size_t resident, move_job *job) {
  size_t piece = resident / threads / 4;  /* a few chunks per thread balance the load */
  piece = piece < CHUNK_MIN ? CHUNK_MIN : (piece + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
  unsigned n = 0, cap = 0;
  for (unsigned i = 0; i < nwindows; i++)
    cap += (unsigned)(w[i].reach / piece) + 1;
  chunk *chunks = calloc(cap ? cap : 1, sizeof *chunks);
  if (chunks == NULL)
    return -1;
  size_t page = sc_page_size(), most = 0;
  for (unsigned i = 0; i < nwindows; i++) {
    size_t reach_end = (w[i].reach + page - 1) & ~(page - 1);
    for (size_t off = 0; off < reach_end; off += piece) {
      chunks[n] = (chunk){w[i].base + off, off + piece < reach_end ? piece : reach_end - off};
      most = chunks[n].len / page > most ? chunks[n].len / page : most;
      n++;
    }
  }
  job->chunks = chunks;
  job->nchunks = n;
  job->chunk_pages_max = most;
  return 0;
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

/* The errno that describes a failed job: a failed strict move is ENOMEM
 * when the target lacks room. */
long long sc_binding_free(const sc_binding *b) {
  long long total = 0;
  for (unsigned i = 0; i < b->ndevices; i++) {
    long long node_free = 0;
    if (numa_node_size64(b->devices[i]->node, &node_free) >= 0)
      total += node_free;
  }
  return total;
}

static int job_errno(const move_job *job) {
  if (job->error != EIO)
    return job->error;
  size_t needed = job->pages_failed * sc_page_size();
  return sc_binding_free(job->to) < (long long)needed + (16ll << 20) ? ENOMEM : EIO;
}

int sc_pages_move(const sc_window *w, unsigned nwindows, const sc_binding *to, int strict,
                  int huge, int move_flag, sc_move_watch *watch, sicm_migration_report *report) {
  move_job job = {.to = to, .strict = strict,
                  .method = __atomic_load_n(&env_huge_method, __ATOMIC_RELAXED),
                  .move_flag = move_flag, .watch = watch, .nnodes = to->ndevices};
  /* 4 KiB pages: one thread.  Parallel movers of 4 KiB pages gain nothing
   * (every unmap needs a TLB-shootdown IPI to the other mover's CPU); mbind
   * holds the mmap lock for writing: more threads would only wait. */
  job.small_pages = !huge;
  job.by_mbind = huge && job.method == SC_MOVE_MBIND && !to->huge_page;
  /* Weighted interleave: the kernel places each page mbind moves by the
   * weights, from its address, as it places a page faulted in there. */
  job.by_mbind |= to->policy == MPOL_WEIGHTED_INTERLEAVE && !to->huge_page;
  /* A hugetlb page moves whole with its head; mbind of a part of it fails. */
  job.by_heads = huge && (job.method == SC_MOVE_HEADS || to->huge_page);
  /* Pages larger than the movers' chunks: one mover, or two would race for one page. */
  unsigned nthreads = job.small_pages || job.by_mbind || to->huge_page > HUGE_PAGE
                          ? 1 : threads_configured();
  long pages = nthreads > 1 ? sc_windows_resident_pages(w, nwindows) : 0; /* planning several */
  if (pages < 0)
    return -1;
  size_t resident = (size_t)pages * sc_page_size();
  if (resident / CHUNK_MIN < nthreads)
    nthreads = resident / CHUNK_MIN > 0 ? (unsigned)(resident / CHUNK_MIN) : 1;
  for (unsigned i = 0; i < to->ndevices; i++)
    job.nodes[i] = to->devices[i]->node;
  if (chunks_plan(w, nwindows, nthreads, resident, &job) != 0)
    return sc_fail(ENOMEM, "out of memory planning the migration");
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
