/* SPDX-License-Identifier: BSD-3-Clause */
/* sicm_mpi_report.c: SICM_MPI_REPORT, where each block of a hinted arena
 * was when the program gave it back.  At every MPI_Free_mem of such a
 * block (so at MPI_Win_free of a hinted window too), one line names the
 * arena (with sicm_arena=@call, the window or block itself: "mpi:win#3
 * 64MiB"), the block's size and the arena's resident bytes per node, read
 * from the kernel just before the free.  Arenas live only as long as their
 * blocks, so this is the one moment the census still has something to
 * count: an unmodified code's global arrays are gone by the time SICM_STATS
 * writes its report at exit.  Each line is one write(2) to a file opened
 * for appending, so ranks that share the file never interleave. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sicm_autoplace.h"
#include "sicm_mpi.h"

#define REPORT_NODES 64

static int world_rank(void) {
  int up = 0, down = 0, rank = -1;
  if (PMPI_Initialized(&up) == MPI_SUCCESS && up && PMPI_Finalized(&down) == MPI_SUCCESS &&
      !down)
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

/* Appends to line (room bytes, *at used) what fmt makes; past the room,
 * the line is cut. */
static void append(char *line, size_t *at, size_t room, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *line, size_t *at, size_t room, const char *fmt, ...) {
  if (*at >= room)
    return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line + *at, room - *at, fmt, ap);
  va_end(ap);
  *at = n < 0 || (size_t)n >= room - *at ? room : *at + (size_t)n;
}

int range_nodes_each(const void *base, size_t bytes, int (*visit)(void *ctx, int node),
                     void *ctx) {
  enum { BATCH = 256 };
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t at = (uintptr_t)base & ~(page - 1), end = (uintptr_t)base + bytes;
  while (at < end) {
    void *pages[BATCH];
    int status[BATCH];
    unsigned n = 0;
    for (; n < BATCH && at < end; n++, at += page)
      pages[n] = (void *)at;
    if (syscall(SYS_move_pages, 0, (unsigned long)n, pages, NULL, status, 0) != 0)
      return -1;
    for (unsigned i = 0; i < n; i++)
      if (status[i] >= 0 && visit(ctx, status[i]) != 0)
        return 1;
  }
  return 0;
}

/* Counts a page of a window's part that is a fixed arena (which holds no
 * block, so the arena's own census would count nothing) on its node. */
static int resident_add(void *ctx, int node) {
  if (node < REPORT_NODES)
    ((size_t *)ctx)[node] += (size_t)sysconf(_SC_PAGESIZE);
  return 0;
}

void report_block_end(sicm_arena arena, const char *name, const void *base, size_t bytes) {
  const char *dest = getenv("SICM_MPI_REPORT");
  if (dest == NULL || *dest == '\0' || strcmp(dest, "0") == 0 || strcmp(dest, "off") == 0)
    return;
  int saved = errno;
  size_t resident[REPORT_NODES] = {0};
  char arena_name[NAME_MAX_LEN] = "", host[64] = "";
  int census = base != NULL ? range_nodes_each(base, bytes, resident_add, resident)
                            : sicm_arena_residency(arena, resident, REPORT_NODES);
  int census_errno = census != 0 ? errno : 0;
  if (name == NULL)
    name = sicm_arena_get_name(arena, arena_name, sizeof arena_name) >= 0 ? arena_name : "";
  gethostname(host, sizeof host - 1);
  size_t len = strlen(dest), at = 0;
  int json = len > 5 && strcmp(dest + len - 5, ".json") == 0;
  char line[2048];
  append(line, &at, sizeof line,
         json ? "{\"host\": \"%s\", \"pid\": %d, \"rank\": %d, \"arena\": \"%s\", "
                "\"block\": %zu, \"resident\": {"
              : "libsicm-mpi: %s pid %d rank %d: %s: block of %zu bytes freed; resident by node:",
         host, (int)getpid(), world_rank(), name, bytes);
  const char *sep = "";
  for (size_t node = 0; census == 0 && node < REPORT_NODES; node++) {
    if (resident[node] == 0)
      continue;
    append(line, &at, sizeof line, json ? "%s\"%zu\": %zu" : "%s %zu=%zu", sep, node, resident[node]);
    sep = json ? ", " : "";
  }
  if (census != 0)
    append(line, &at, sizeof line, json ? "}, \"error\": \"%s\"}\n" : " unknown (%s)\n",
           strerror(census_errno));
  else
    append(line, &at, sizeof line, json ? "}}\n" : "\n");
  if (at >= sizeof line) { /* cut: end it as a line all the same */
    at = sizeof line;
    line[at - 1] = '\n';
  }
  int fd = strcmp(dest, "stderr") == 0 || strcmp(dest, "1") == 0
               ? 2
               : open(dest, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd >= 0) {
    ssize_t unused = write(fd, line, at);
    (void)unused;
    if (fd != 2)
      close(fd);
  }
  errno = saved;
}
