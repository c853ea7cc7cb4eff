/* SPDX-License-Identifier: BSD-3-Clause */
/* preload_shm.c: POSIX shared-memory segments on a device.  With
 * SICM_PRELOAD_SHM set, the preload's mmap() looks at every shared mapping
 * of a file in /dev/shm (what shm_open(3) opens) whose name matches a
 * pattern and whose length reaches a threshold, and gives that range of the
 * segment a memory policy with mbind(2).  tmpfs keeps such a policy with
 * the file, not with the mapping (a shared policy), so it holds for every
 * process that maps the segment, whether it loaded the preload or not, and
 * for the segment's whole life; shm_open, ftruncate, mmap and shm_unlink
 * keep their meaning, and no byte of the program's data is copied.
 *
 * The policy is MPOL_PREFERRED: a segment that outgrows the device's free
 * memory goes on on the nearest node instead of failing a fault with
 * SIGBUS, which a strict binding of tmpfs memory would do.  A segment is
 * left as the program made it when the device has not room for the mapped
 * length (less the reserve) or the kernel refuses the policy; either way
 * the report gets one line per segment and process. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <numaif.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../base_settings.h"
#include "preload.h"

#define SHM_DIR "/dev/shm/"
#define SHM_SEEN_MAX 256

static struct shm_config {
  int on;
  sicm_device *device;
  char device_spec[64];
  char match[128];
  size_t min, reserve;
  int report;           /* 0: off, 1: stderr, 2: report_path */
  char report_path[256];/* opened, written and closed at each line */
  char dir[PATH_MAX + 1]; /* /dev/shm, its symbolic links resolved, with a '/' */
  dev_t shm_dev;        /* st_dev of /dev/shm */
} shm;

/* Segments this process reported on (its (st_dev, st_ino)), so that a
 * segment mapped many times gives one line. */
static struct { dev_t dev; ino_t ino; } seen[SHM_SEEN_MAX];
static unsigned nseen;
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;

/* The kernel's mmap, reached without the dynamic linker: jemalloc maps
 * through here before any constructor has run. */
static void *kernel_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (off & (off_t)(sysconf(_SC_PAGESIZE) - 1)) {
    errno = EINVAL;
    return MAP_FAILED;
  }
  return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

static int set_device(void *ctx, const char *v, char *why, size_t len) {
  (void)ctx, (void)why, (void)len;
  return snprintf(shm.device_spec, sizeof shm.device_spec, "%s", v) >=
                 (int)sizeof shm.device_spec ? -1 : 0;
}

static int set_match(void *ctx, const char *v, char *why, size_t len) {
  (void)ctx, (void)why, (void)len;
  return snprintf(shm.match, sizeof shm.match, "%s", v) >= (int)sizeof shm.match ? -1 : 0;
}

static int set_min(void *ctx, const char *v, char *why, size_t len) {
  (void)ctx, (void)why, (void)len;
  return sc_setting_size(v, &shm.min);
}

static int set_reserve(void *ctx, const char *v, char *why, size_t len) {
  (void)ctx, (void)why, (void)len;
  return sc_setting_size(v, &shm.reserve);
}

static int set_report(void *ctx, const char *v, char *why, size_t len) {
  (void)ctx, (void)why, (void)len;
  shm.report = strcmp(v, "off") == 0 ? 0 : strcmp(v, "stderr") == 0 ? 1 : 2;
  return shm.report == 2 &&
                 snprintf(shm.report_path, sizeof shm.report_path, "%s", v) >=
                     (int)sizeof shm.report_path
             ? -1
             : 0;
}

/* SICM_PRELOAD_SHM's keys, in the order sicm(7) gives them. */
static const sc_setting shm_keys[] = {
    {"device", "hbm, dram, capacity, high_bw, low_lat, large_cap or node:N", set_device},
    {"match", "a pattern of fnmatch(3) for the segment's name", set_match},
    {"min", "a SIZE such as 1M", set_min},
    {"reserve", "a SIZE such as 32M", set_reserve},
    {"report", "stderr, off or a path", set_report},
};

static void seen_lock_take(void) {
  pthread_mutex_lock(&seen_lock);
}

static void seen_lock_give(void) {
  pthread_mutex_unlock(&seen_lock);
}

int pl_shm_start(const char *text) {
  if (text == NULL || *text == '\0')
    return 0;
  int on;
  if (sc_setting_bool(text, &on) == 0 && !on)
    return 0;
  snprintf(shm.device_spec, sizeof shm.device_spec, "high_bw");
  snprintf(shm.match, sizeof shm.match, "*");
  shm.min = (size_t)1 << 20;
  shm.reserve = (size_t)32 << 20;
  shm.report = 1;
  char why[SC_SETTINGS_WHY_MAX];
  if (sc_setting_bool(text, &on) != 0 &&
      sc_settings_parse("libsicm-preload", "SICM_PRELOAD_SHM", text, shm_keys,
                        sizeof shm_keys / sizeof shm_keys[0], NULL, why, sizeof why) != 0) {
    pl_warn("SICM_PRELOAD_SHM: ", why);
    return -1;
  }
  sicm_rank_by unused;
  shm.device = pl_device_resolve(shm.device_spec, &unused);
  struct stat dir;
  char real[PATH_MAX];
  if (shm.device == NULL)
    return -1;
  if (stat(SHM_DIR, &dir) != 0 || realpath(SHM_DIR, real) == NULL) {
    pl_warn("SICM_PRELOAD_SHM: no " SHM_DIR ": ", strerror(errno));
    return -1;
  }
  snprintf(shm.dir, sizeof shm.dir, "%s/", real);
  shm.shm_dev = dir.st_dev;
  pthread_atfork(seen_lock_take, seen_lock_give, seen_lock_give);
  __atomic_store_n(&shm.on, 1, __ATOMIC_RELEASE);
  return 0;
}

/* Whether this process has not reported on the segment yet (and now has). */
static int first_sight(const struct stat *st) {
  int first = 1;
  pthread_mutex_lock(&seen_lock);
  for (unsigned i = 0; i < nseen && first; i++)
    first = !(seen[i].dev == st->st_dev && seen[i].ino == st->st_ino);
  if (first && nseen == SHM_SEEN_MAX)
    first = 0; /* past the table, segments are placed without a line */
  else if (first) {
    seen[nseen].dev = st->st_dev;
    seen[nseen++].ino = st->st_ino;
  }
  pthread_mutex_unlock(&seen_lock);
  return first;
}

static void report(const struct stat *st, const char *name, size_t len, const char *what,
                   const char *detail) {
  if (!first_sight(st))
    return;
  if (shm.report == 0 && detail == NULL)
    return;
  int fd = shm.report == 2 ? open(shm.report_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : 2;
  if (fd < 0)
    return;
  pl_text t = {.len = 0};
  pl_text_str(&t, "libsicm-preload: pid ");
  pl_text_num(&t, (uint64_t)getpid());
  pl_text_str(&t, ", shm /");
  pl_text_str(&t, name);
  pl_text_str(&t, " (");
  pl_text_size(&t, len);
  pl_text_str(&t, " mapped): ");
  pl_text_str(&t, what);
  if (detail != NULL)
    pl_text_str(&t, detail);
  pl_text_str(&t, "\n");
  if (t.len == sizeof t.buf) /* cut: still one line */
    t.buf[t.len - 1] = '\n';
  pl_text_flush(&t, fd);
  if (fd != 2)
    close(fd);
}

/* The segment's name, from the descriptor's path; NULL when `fd` is not a
 * file of /dev/shm. */
static const char *segment_name(int fd, struct stat *st, char *path, size_t size) {
  if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode) || st->st_dev != shm.shm_dev)
    return NULL;
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, size - 1);
  if (n <= 0 || (size_t)n == size - 1)
    return NULL;
  path[n] = '\0';
  /* A segment unlinked before it is mapped reads "NAME (deleted)". */
  static const char deleted[] = " (deleted)";
  size_t tail = sizeof deleted - 1;
  if (st->st_nlink == 0 && (size_t)n > tail && strcmp(path + n - tail, deleted) == 0)
    path[n - tail] = '\0';
  size_t dir = strlen(shm.dir);
  return strncmp(path, shm.dir, dir) == 0 ? path + dir : NULL;
}

static void place_segment(void *addr, size_t len, int fd) {
  int saved = errno;
  struct stat st;
  char path[512];
  const char *name = segment_name(fd, &st, path, sizeof path);
  int mode = MPOL_DEFAULT;
  /* A policy the segment has already (set by this preload in another
   * mapping, or by the program or libsicm itself) is kept: tmpfs keeps it
   * for every process, so a new one would change theirs too. */
  if (name == NULL || fnmatch(shm.match, name, 0) != 0 || len < shm.min ||
      syscall(SYS_get_mempolicy, &mode, NULL, 0, addr, MPOL_F_ADDR) != 0 || mode != MPOL_DEFAULT) {
    errno = saved;
    return;
  }
  size_t free_bytes;
  char detail[160];
  if (sicm_device_get_free_bytes(shm.device, &free_bytes) == 0 &&
      (free_bytes < shm.reserve || free_bytes - shm.reserve < len)) {
    pl_text t = {.len = 0};
    pl_text_str(&t, "node ");
    pl_text_num(&t, (uint64_t)shm.device->node);
    pl_text_str(&t, " has ");
    pl_text_size(&t, free_bytes);
    pl_text_str(&t, " free, reserve ");
    pl_text_size(&t, shm.reserve);
    t.buf[t.len] = '\0';
    report(&st, name, len, "left as made: ", t.buf);
  } else {
    unsigned long mask[16] = {0};
    int node = shm.device->node;
    mask[node / (8 * sizeof mask[0])] |= 1UL << (node % (8 * sizeof mask[0]));
    if (syscall(SYS_mbind, addr, len, MPOL_PREFERRED, mask, 8 * sizeof mask, MPOL_MF_MOVE) != 0) {
      snprintf(detail, sizeof detail, "mbind: %s", strerror(errno));
      report(&st, name, len, "left as made: ", detail);
    } else {
      snprintf(detail, sizeof detail, "preferred node %d (%s; device=%s)", node,
               sicm_device_kind_name(shm.device->kind), shm.device_spec);
      report(&st, name, len, detail, NULL);
    }
  }
  errno = saved;
}

__attribute__((visibility("default"))) void *mmap(void *addr, size_t len, int prot, int flags,
                                                  int fd, off_t off) {
  void *at = kernel_mmap(addr, len, prot, flags, fd, off);
  if (at != MAP_FAILED && fd >= 0 && (flags & MAP_SHARED) &&
      __atomic_load_n(&shm.on, __ATOMIC_ACQUIRE))
    place_segment(at, len, fd);
  return at;
}

__attribute__((visibility("default"))) void *mmap64(void *addr, size_t len, int prot, int flags,
                                                    int fd, off_t off) {
  return mmap(addr, len, prot, flags, fd, off);
}
