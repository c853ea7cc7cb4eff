/* SPDX-License-Identifier: BSD-3-Clause */
/* report.c: what the library did, for people — sicm_stats_print() and
 * the report SICM_STATS asks for at exit.  Per live arena: its devices,
 * bytes held and allocated, resident bytes per node, migrations and their
 * time; then totals for arenas destroyed before, then the placer's part
 * (autoplace_report.c).  It sits above every layer it reports on, beside
 * init.c.  Reads only through the public calls on a handle, so an arena
 * destroyed meanwhile is skipped, not read after its end. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "report.h"

#define REPORT_NODES 64

typedef struct arena_line {
  sicm_arena handle;
  unsigned slot;
  int library_default;
  unsigned ndevices;
  sicm_device *devices[SICM_ARENA_DEVICES_MAX];
  sicm_arena_stats stats;
  size_t peak_held;
  sicm_arena_rates rates;
  char name[SICM_ARENA_NAME_MAX];
  size_t resident[REPORT_NODES];
  uint64_t migrations, failed, nanoseconds, bytes_moved;
} arena_line;

/* A snapshot of slot `slot`'s arena; 0 if it is not live. */
static int line_take(unsigned slot, arena_line *out) {
  sc_arena *a = __atomic_load_n(&sc_arena_slots[slot], __ATOMIC_ACQUIRE);
  uint64_t generation = a ? __atomic_load_n(&a->live_generation, __ATOMIC_ACQUIRE) : 0;
  if (generation == 0)
    return 0;
  memset(out, 0, sizeof *out);
  out->handle = sc_arena_handle(a, generation);
  out->slot = slot;
  out->library_default = a->library_default;
  int saved = errno;
  int n = sicm_arena_get_devices(out->handle, out->devices, SICM_ARENA_DEVICES_MAX);
  int ok = n >= 0 && sicm_arena_get_stats(out->handle, &out->stats) == 0 &&
           sicm_arena_get_rates(out->handle, &out->rates) == 0;
  sc_arena_name_copy(a, out->name);
  if (ok)
    sicm_arena_residency(out->handle, out->resident, REPORT_NODES); /* best effort */
  errno = saved;
  if (!ok)
    return 0; /* destroyed meanwhile */
  out->ndevices = (unsigned)n < SICM_ARENA_DEVICES_MAX ? (unsigned)n : SICM_ARENA_DEVICES_MAX;
  out->peak_held = __atomic_load_n(&a->peak_held, __ATOMIC_RELAXED);
  if (out->peak_held < out->stats.held) /* arenas whose held is not the hooks' (shared) */
    out->peak_held = out->stats.held;
  out->migrations = __atomic_load_n(&a->migrations_done, __ATOMIC_RELAXED);
  out->failed = __atomic_load_n(&a->migrations_failed, __ATOMIC_RELAXED);
  out->nanoseconds = __atomic_load_n(&a->migration_ns, __ATOMIC_RELAXED);
  out->bytes_moved = __atomic_load_n(&a->migration_bytes, __ATOMIC_RELAXED);
  return 1;
}

static void text_line(FILE *out, const arena_line *l) {
  fprintf(out, "arena %u%s%s%s:", l->slot, l->name[0] ? " " : "", l->name,
          l->library_default ? " (default)" : "");
  for (unsigned i = 0; i < l->ndevices; i++)
    fprintf(out, "%s node %d %s", i ? "," : " devices", l->devices[i]->node,
            sicm_device_kind_name(l->devices[i]->kind));
  fprintf(out, "; held %zu (peak %zu), allocated %zu; resident", l->stats.held, l->peak_held,
          l->stats.allocated);
  int any = 0;
  for (unsigned n = 0; n < REPORT_NODES; n++)
    if (l->resident[n] != 0)
      fprintf(out, "%s node %u %zu", any++ ? "," : "", n, l->resident[n]);
  fprintf(out, "%s; migrations %llu (%.6f s, %llu bytes moved), %llu failed\n", any ? "" : " none",
          (unsigned long long)l->migrations, (double)l->nanoseconds / 1e9,
          (unsigned long long)l->bytes_moved, (unsigned long long)l->failed);
  const sicm_arena_rates *r = &l->rates;
  if (r->intervals)
    fprintf(out, "  rates: %llu intervals, referenced %.0f bytes/s (last %llu), resident %llu; "
                 "%.3f s on the fast tier, %.3f s off it; placer moves %llu in, %llu out; %s\n",
            (unsigned long long)r->intervals, r->referenced_per_second,
            (unsigned long long)r->referenced_last, (unsigned long long)r->resident,
            (double)r->fast_ns / 1e9, (double)r->slow_ns / 1e9, (unsigned long long)r->moves_in,
            (unsigned long long)r->moves_out,
            r->mode == SICM_AUTOPLACE_PIN ? "pinned" : r->mode ? "excluded" : "placed");
}

static void json_line(FILE *out, const arena_line *l, int first) {
  fprintf(out, "%s{\"arena\": %u, \"name\": \"%s\", \"default\": %s, \"devices\": [",
          first ? "" : ", ", l->slot, l->name, l->library_default ? "true" : "false");
  for (unsigned i = 0; i < l->ndevices; i++)
    fprintf(out, "%s{\"node\": %d, \"kind\": \"%s\"}", i ? ", " : "", l->devices[i]->node,
            sicm_device_kind_name(l->devices[i]->kind));
  fprintf(out, "], \"held\": %zu, \"peak_held\": %zu, \"allocated\": %zu, \"resident\": {",
          l->stats.held, l->peak_held, l->stats.allocated);
  int any = 0;
  for (unsigned n = 0; n < REPORT_NODES; n++)
    if (l->resident[n] != 0)
      fprintf(out, "%s\"%u\": %zu", any++ ? ", " : "", n, l->resident[n]);
  fprintf(out,
          "}, \"migrations\": %llu, \"migrations_failed\": %llu, \"migration_seconds\": %.6f, "
          "\"bytes_moved\": %llu",
          (unsigned long long)l->migrations, (unsigned long long)l->failed,
          (double)l->nanoseconds / 1e9, (unsigned long long)l->bytes_moved);
  const sicm_arena_rates *r = &l->rates;
  fprintf(out,
          ", \"intervals\": %llu, \"referenced_per_second\": %.0f, \"referenced_last\": %llu, "
          "\"fast_seconds\": %.6f, \"slow_seconds\": %.6f, \"moves_in\": %llu, \"moves_out\": %llu, "
          "\"on_fast\": %s, \"placement\": \"%s\"}",
          (unsigned long long)r->intervals, r->referenced_per_second,
          (unsigned long long)r->referenced_last, (double)r->fast_ns / 1e9,
          (double)r->slow_ns / 1e9, (unsigned long long)r->moves_in,
          (unsigned long long)r->moves_out, r->on_fast ? "true" : "false",
          r->mode == SICM_AUTOPLACE_PIN ? "pinned" : r->mode ? "excluded" : "placed");
}

/* The MPI rank from the launcher's environment, or -1. */
static long mpi_rank(void) {
  static const char *const names[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                                      "SLURM_PROCID"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const char *v = getenv(names[i]);
    char *end;
    long rank = v && *v ? strtol(v, &end, 10) : -1;
    if (v && *v && *end == '\0' && rank >= 0)
      return rank;
  }
  return -1;
}

static void header_print(FILE *out, int json) {
  if (!json) {
    fprintf(out, "sicm stats, pid %ld (bytes; resident pages per NUMA node)\n", (long)getpid());
    return;
  }
  /* One line, one object: several processes may append to one file. */
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  for (char *c = host; *c; c++)
    if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20)
      *c = '?';
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  long rank = mpi_rank();
  fprintf(out, "{\"pid\": %ld, ", (long)getpid());
  if (rank >= 0)
    fprintf(out, "\"rank\": %ld, ", rank);
  else
    fprintf(out, "\"rank\": null, ");
  fprintf(out, "\"host\": \"%s\", \"time\": %.6f, \"arenas\": [", host,
          (double)now.tv_sec + (double)now.tv_nsec / 1e9);
}

/* Every live arena, one line each; their count. */
static unsigned arenas_print(FILE *out, int json) {
  arena_line line;
  unsigned live = 0;
  /* One refresh of the kinds' statistics serves every arena: each
   * refresh covers all arenas, so one per arena would make the report
   * quadratic in them. */
  sc_stats_snapshot_begin();
  for (unsigned slot = 0; slot < SC_ARENA_SLOTS; slot++) {
    if (!line_take(slot, &line))
      continue;
    if (json)
      json_line(out, &line, live == 0);
    else
      text_line(out, &line);
    live++;
  }
  sc_stats_snapshot_end();
  return live;
}

static void gone_print(FILE *out, int json, unsigned live) {
  sc_arenas_gone gone;
  sc_arenas_gone_read(&gone);
  unsigned long long arenas = gone.arenas, migrations = gone.migrations, failed = gone.failed,
                     moved = gone.bytes_moved;
  double seconds = (double)gone.nanoseconds / 1e9;
  if (json)
    fprintf(out,
            "], \"destroyed\": {\"arenas\": %llu, \"migrations\": %llu, "
            "\"migrations_failed\": %llu, \"migration_seconds\": %.6f, \"bytes_moved\": %llu}",
            arenas, migrations, failed, seconds, moved);
  else
    fprintf(out,
            "%u live arenas; destroyed before: %llu arenas, migrations %llu (%.6f s, %llu bytes "
            "moved), %llu failed\n",
            live, arenas, migrations, seconds, moved, failed);
}

/* The whole report in one buffer (malloc'd, *len bytes), so that it
 * leaves in one write: reports of several processes or threads never
 * interleave.  NULL with ENOMEM. */
static char *report_text(unsigned flags, size_t *len) {
  char *text = NULL;
  FILE *out = open_memstream(&text, len);
  if (out == NULL)
    return sc_fail_null(ENOMEM, "out of memory for the report");
  int json = (flags & SICM_STATS_JSON) != 0;
  header_print(out, json);
  unsigned live = arenas_print(out, json);
  gone_print(out, json, live);
  sc_autoplace_report_print(out, json);
  if (json)
    fputs("}\n", out);
  if (fclose(out) != 0) {
    free(text);
    return sc_fail_null(ENOMEM, "out of memory for the report");
  }
  return text;
}

int sicm_stats_print(FILE *out, unsigned flags) {
  if (sc_state_get() == NULL)
    return -1;
  if ((flags & ~(unsigned)SICM_STATS_JSON) != 0)
    return sc_fail(EINVAL, "sicm_stats_print: unknown flags 0x%x", flags);
  if (out == NULL)
    out = stderr;
  size_t len;
  char *text = report_text(flags, &len);
  if (text == NULL)
    return -1;
  int ok = fwrite(text, 1, len, out) == len && fflush(out) == 0 && !ferror(out);
  free(text);
  return ok ? 0 : sc_fail(EIO, "sicm_stats_print: writing failed");
}

/* ---- SICM_STATS: the report at exit ---- */

static char report_path[PATH_MAX];
static unsigned report_flags;
static int report_wanted, report_done;

/* 1 when the path is a symbolic link of this user's, 0 when it is none,
 * -1 when it is another user's: in a directory such as /tmp, another
 * user's link would send the report into any file this process may
 * write. */
static int link_kind(const char *path) {
  struct stat link;
  if (lstat(path, &link) != 0 || !S_ISLNK(link.st_mode))
    return 0;
  return link.st_uid == geteuid() ? 1 : -1;
}

/* The report's file, opened to append; -1 after one line on stderr when it
 * cannot be, or is not a regular file of this user nor /dev/null: a FIFO, a
 * socket or another device is refused, never waited on (O_NONBLOCK: a FIFO without a reader
 * fails at once, one with a reader is refused by its type), and so is a
 * file or a symbolic link another user owns. */
static int report_open(void) {
  if (report_path[0] == '\0')
    return STDERR_FILENO;
  int link = link_kind(report_path);
  if (link < 0) {
    fprintf(stderr, "libsicm: SICM_STATS=%s is another user's symbolic link; no report "
                    "written\n", report_path);
    return -1;
  }
  /* No link was there: none may be followed (one made meanwhile fails). */
  int fd = open(report_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
                                 (link ? 0 : O_NOFOLLOW), 0644);
  struct stat st;
  int regular = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if ((regular && st.st_uid == geteuid()) || (fd >= 0 && sc_stat_is_null_device(&st)))
    return fd; /* /dev/null: the report is discarded, as asked */
  if (regular)
    fprintf(stderr, "libsicm: SICM_STATS=%s is another user's file; no report written\n",
            report_path);
  else if (fd >= 0 || errno == ENXIO)
    fprintf(stderr, "libsicm: SICM_STATS=%s is not a regular file; no report written\n",
            report_path);
  else
    fprintf(stderr, "libsicm: SICM_STATS: cannot open %s: %s; no report written\n", report_path,
            strerror(errno));
  if (fd >= 0)
    close(fd);
  return -1;
}

static void report_write(void) {
  if (__atomic_exchange_n(&report_done, 1, __ATOMIC_ACQ_REL))
    return;
  size_t len;
  char *text = report_text(report_flags, &len);
  if (text == NULL) {
    fprintf(stderr, "libsicm: SICM_STATS: %s; no report written\n", sicm_error_detail());
    return;
  }
  int fd = report_open();
  ssize_t n = 0;
  if (fd >= 0) {
    /* One write: O_APPEND writes to a regular file do not interleave. */
    do
      n = write(fd, text, len);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)len)
      fprintf(stderr, "libsicm: SICM_STATS: writing %s failed: %s\n",
              report_path[0] ? report_path : "stderr", n < 0 ? strerror(errno) : "short write");
    if (fd != STDERR_FILENO)
      close(fd);
  }
  free(text);
}

void sc_report_setup(void) {
  const char *env = sc_env_path("SICM_STATS", sizeof report_path);
  if (env == NULL || strcmp(env, "0") == 0 || report_wanted)
    return;
  report_wanted = 1;
  if (strcmp(env, "json") == 0) {
    report_flags = SICM_STATS_JSON;
  } else if (strcmp(env, "1") != 0 && strcmp(env, "text") != 0) {
    snprintf(report_path, sizeof report_path, "%s", env);
    size_t n = strlen(report_path);
    if (n > 5 && strcmp(report_path + n - 5, ".json") == 0)
      report_flags = SICM_STATS_JSON;
  }
  atexit(report_write);
}

void sc_report_before_fini(void) {
  if (report_wanted)
    report_write();
}
