/* SPDX-License-Identifier: BSD-3-Clause */
/* device_share.c: one hwloc topology per node, in a file of shared memory
 * that the first process writes and the others adopt instead of running
 * hwloc's discovery (hwloc/shmem.h).
 *
 * The file, <dir>/sicm-topology-<uid>-<tag>, is one page of our header and
 * then hwloc's copy of the topology, whose pointers hold only at the address
 * the writer chose (the middle of its largest free range, as shared arenas
 * do).  The header carries a key naming everything the discovery depended
 * on — boot, online CPUs and nodes, node memory sizes, the cgroup's cpuset,
 * HWLOC_* variables, hwloc's version — and a checksum of hwloc's part.  A
 * file is adopted only if it is ours (owner, mode 0600), its key equals the
 * one this process computes and its checksum holds; a stale or damaged file
 * of ours is replaced, anyone else's is left alone.  Writers publish by
 * rename, so a reader sees a whole file or none, and take a lock file so
 * that ranks starting together discover once.  Whatever fails, the process
 * discovers the topology itself: sharing saves time, never correctness. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <hwloc/shmem.h>
#include <numa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "devices.h"

extern char **environ;

#define SHARE_MAGIC "sicm-topology\n"
#define SHARE_FORMAT 1u
#define SHARE_KEY_MAX 3072
#define SHARE_LENGTH_MAX ((uint64_t)256 << 20)
#define SHARE_ALIGN ((size_t)2 << 20)
/* How long a process waits for another to publish before discovering. */
#define SHARE_LOCK_WAIT_MS 2000

typedef struct share_header {
  char magic[16];
  uint32_t format;
  uint32_t key_length;
  uint64_t address;       /* where hwloc's part must be mapped */
  uint64_t length;        /* bytes of hwloc's part, from one page in */
  uint64_t checksum;      /* of hwloc's part */
  char key[SHARE_KEY_MAX];
} share_header;

typedef struct share_file {
  char path[4096], lock_path[4096];
  char key[SHARE_KEY_MAX];
  size_t key_length;
  int refused;            /* share_refuse has said why */
} share_file;

/* What share_adopt found when it adopted nothing. */
typedef enum share_found {
  SHARE_ADOPTED,
  SHARE_ABSENT,     /* no file, or one of ours that is stale or damaged */
  SHARE_FOREIGN,    /* another user's file, or one others may write */
  SHARE_BUSY,       /* a good file, but its address is taken here */
} share_found;

static uint64_t hash_bytes(const void *data, size_t len, uint64_t h) {
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++)
    h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

/* Word-wise: hwloc's part is a few hundred KiB on a large node. */
static uint64_t checksum(const void *data, size_t len) {
  const uint64_t *w = data;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < len / 8; i++)
    h = (h ^ w[i]) * 0x100000001b3ull + (h >> 29);
  return h;
}

static void key_add(share_file *pl, const char *label, const char *value) {
  size_t room = sizeof pl->key - pl->key_length;
  int n = snprintf(pl->key + pl->key_length, room, "%s=%s;", label, value);
  pl->key_length = n < 0 || (size_t)n >= room ? sizeof pl->key : pl->key_length + (size_t)n;
}

/* Appends the first line of a file ("-" when it cannot be read). */
static void key_add_file(share_file *pl, const char *label, const char *path) {
  char line[1024] = "-";
  FILE *f = fopen(path, "re");
  if (f != NULL) {
    if (fgets(line, sizeof line, f) == NULL)
      strcpy(line, "-");
    fclose(f);
  }
  line[strcspn(line, "\n")] = '\0';
  key_add(pl, label, line);
}

/* The cgroup (v2) of this process: its path, and the cpuset hwloc keeps. */
static void key_add_cgroup(share_file *pl) {
  char line[1024] = "", path[1200];
  FILE *f = fopen("/proc/self/cgroup", "re");
  if (f != NULL) {
    while (fgets(line, sizeof line, f) != NULL && strncmp(line, "0::", 3) != 0)
      line[0] = '\0';
    fclose(f);
  }
  line[strcspn(line, "\n")] = '\0';
  const char *dir = strncmp(line, "0::", 3) == 0 ? line + 3 : "";
  key_add(pl, "cgroup", dir[0] ? dir : "-");
  snprintf(path, sizeof path, "/sys/fs/cgroup%s/cpuset.cpus.effective", dir);
  key_add_file(pl, "cpuset", path);
  snprintf(path, sizeof path, "/sys/fs/cgroup%s/cpuset.mems.effective", dir);
  key_add_file(pl, "memset", path);
}

/* Fills the key and the paths; -1 when the key does not fit. */
static int share_file_init(share_file *pl) {
  memset(pl, 0, sizeof *pl);
  char value[64];
  snprintf(value, sizeof value, "%u;hwloc=%x;page=%zu", SHARE_FORMAT, hwloc_get_api_version(),
           sc_page_size());
  key_add(pl, "format", value);
  /* Who shares: the file's name comes from this part, so that processes
   * in other cgroups or with other HWLOC_* settings never replace it. */
  key_add_cgroup(pl);
  for (char **e = environ; e && *e; e++)
    if (strncmp(*e, "HWLOC_", 6) == 0)
      key_add(pl, "env", *e);
  uint64_t tag = hash_bytes(pl->key, pl->key_length, 0xcbf29ce484222325ull);
  /* What was found: changes with a reboot or a hot-plug. */
  key_add_file(pl, "boot", "/proc/sys/kernel/random/boot_id");
  key_add_file(pl, "cpus", "/sys/devices/system/cpu/online");
  key_add_file(pl, "nodes", "/sys/devices/system/node/online");
  key_add_file(pl, "memory", "/sys/devices/system/node/has_memory");
  for (int node = 0; node <= numa_max_node(); node++) {
    char path[96], label[24];
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d/meminfo", node);
    snprintf(label, sizeof label, "node%d", node);
    key_add_file(pl, label, path);
  }
  if (pl->key_length >= sizeof pl->key)
    return -1;
  const char *dir = sc_env_path("SICM_TOPOLOGY_DIR", sizeof pl->path - 64);
  if (dir == NULL)
    dir = "/dev/shm";
  int n = snprintf(pl->path, sizeof pl->path, "%s/sicm-topology-%u-%016llx", dir,
                   (unsigned)geteuid(), (unsigned long long)tag);
  int m = snprintf(pl->lock_path, sizeof pl->lock_path, "%s.lock", pl->path);
  return n > 0 && m > 0 && (size_t)m < sizeof pl->lock_path ? 0 : -1;
}

/* Whether a file is ours alone: a file others may write could hold
 * pointers made to crash us. */
static int file_is_ours(const struct stat *st) {
  return S_ISREG(st->st_mode) && st->st_uid == geteuid() && (st->st_mode & 077) == 0;
}

/* Says why the node's file is not used, once per sicm_init (*said). */
static void share_refuse(const char *path, const struct stat *st, int *said) {
  if (*said)
    return;
  *said = 1;
  const char *type = S_ISREG(st->st_mode)    ? "a regular file"
                     : S_ISFIFO(st->st_mode) ? "a FIFO"
                     : S_ISSOCK(st->st_mode) ? "a socket"
                     : S_ISDIR(st->st_mode)  ? "a directory"
                     : S_ISLNK(st->st_mode)  ? "a symbolic link"
                     : S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode) ? "a device node"
                                                                     : "not a regular file";
  fprintf(stderr, "libsicm: shared topology: %s is %s of uid %u, mode 0%o, not a file of "
                  "this user alone; this process discovers the topology itself\n",
          path, type, (unsigned)st->st_uid, (unsigned)(st->st_mode & 07777));
}

/* Opens the node's file or its lock file when it is ours alone; -1 with
 * errno ENOENT when there is none, EPERM after share_refuse when it is not
 * ours.  Whatever another user put at the name is looked at, never opened
 * blocking (a FIFO would block the open for ever) nor followed. */
static int share_open(const char *path, int flags, struct stat *st, int *said) {
  int exists = lstat(path, st) == 0;
  if (!exists && (errno != ENOENT || !(flags & O_CREAT)))
    return -1;
  if (exists && !file_is_ours(st)) {
    share_refuse(path, st, said);
    errno = EPERM;
    return -1;
  }
  int fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0600);
  if (fd < 0 && errno != ENOENT) { /* put there since the lstat */
    if (lstat(path, st) == 0)
      share_refuse(path, st, said);
    errno = EPERM;
    return -1;
  }
  if (fd >= 0 && (fstat(fd, st) != 0 || !file_is_ours(st))) {
    share_refuse(path, st, said);
    close(fd);
    errno = EPERM;
    return -1;
  }
  return fd;
}

static share_found share_adopt(share_file *pl, hwloc_topology_t *hw) {
  struct stat st;
  int fd = share_open(pl->path, O_RDONLY, &st, &pl->refused);
  if (fd < 0)
    return errno == ENOENT ? SHARE_ABSENT : SHARE_FOREIGN;
  share_found found = SHARE_ABSENT;
  share_header *h = malloc(sizeof *h);
  const uint64_t offset = sc_page_size();
  if (h == NULL || pread(fd, h, sizeof *h, 0) != (ssize_t)sizeof *h ||
      memcmp(h->magic, SHARE_MAGIC, sizeof SHARE_MAGIC) != 0 || h->format != SHARE_FORMAT ||
      h->key_length != pl->key_length || memcmp(h->key, pl->key, pl->key_length) != 0)
    goto out;
  if (h->address % SHARE_ALIGN || h->length % offset || h->length == 0 ||
      h->length > SHARE_LENGTH_MAX || (h->address + h->length) >> SC_ADDRESS_BITS ||
      (uint64_t)st.st_size != offset + h->length)
    goto out;
  void *copy = mmap(NULL, h->length, PROT_READ, MAP_SHARED, fd, (off_t)offset);
  if (copy == MAP_FAILED)
    goto out;
  int intact = checksum(copy, h->length) == h->checksum;
  munmap(copy, h->length);
  if (!intact)
    goto out;
  if (hwloc_shmem_topology_adopt(hw, fd, offset, (void *)(uintptr_t)h->address, h->length,
                                 0) == 0)
    found = SHARE_ADOPTED;
  else if (errno == EBUSY)
    found = SHARE_BUSY;
out:
  free(h);
  close(fd);
  return found;
}

/* The lock file, held: an fd to close, or -1 when it could not be had in
 * time (then this process discovers on its own and publishes nothing). */
static int share_lock(share_file *pl) {
  struct stat st;
  int fd = share_open(pl->lock_path, O_RDWR | O_CREAT, &st, &pl->refused);
  if (fd < 0)
    return -1;
  const struct timespec pause = {0, 1000000};
  for (int waited = 0; waited < SHARE_LOCK_WAIT_MS; waited++) {
    if (flock(fd, LOCK_EX | LOCK_NB) == 0)
      return fd;
    if (errno != EWOULDBLOCK && errno != EINTR)
      break;
    nanosleep(&pause, NULL);
  }
  close(fd);
  return -1;
}

/* hwloc resolves memory attributes on first use, by writing into the
 * topology, and 2.9.0's hwloc_shmem_topology_write leaves the copy's
 * unresolved (it resolves the original twice): an adopter's read-only copy
 * would fault.  So the writer adopts its own copy writable and queries each
 * attribute once, which resolves it in the file; then the copy is final,
 * and its checksum is taken from this same mapping. */
static int share_copy_finish(int fd, uint64_t offset, void *address, size_t length,
                             uint64_t *sum) {
  hwloc_topology_t copy;
  if (hwloc_shmem_topology_adopt(&copy, fd, offset, address, length, 0) != 0)
    return -1;
  int writable = mprotect(address, length, PROT_READ | PROT_WRITE) == 0;
  const char *name;
  for (unsigned id = 0; writable && hwloc_memattr_get_name(copy, id, &name) == 0; id++) {
    unsigned nr = 0;
    hwloc_memattr_get_targets(copy, id, NULL, 0, &nr, NULL, NULL);
  }
  if (writable)
    *sum = checksum(address, length);
  hwloc_topology_destroy(copy);
  return writable ? 0 : -1;
}

/* Writes hw under a temporary name and renames it over the file. */
static int share_publish(const share_file *pl, hwloc_topology_t hw) {
  char tmp[4200];
  size_t length;
  const uint64_t offset = sc_page_size();
  if (hwloc_shmem_topology_get_length(hw, &length, 0) != 0 || length > SHARE_LENGTH_MAX)
    return -1;
  uintptr_t address = sc_address_hole(length, SHARE_ALIGN);
  snprintf(tmp, sizeof tmp, "%s.%ld.tmp", pl->path, (long)getpid());
  share_header *h = calloc(1, sizeof *h);
  int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (h == NULL || fd < 0 || address == 0 ||
      hwloc_shmem_topology_write(hw, fd, offset, (void *)address, length, 0) != 0 ||
      share_copy_finish(fd, offset, (void *)address, length, &h->checksum) != 0)
    goto fail;
  memcpy(h->magic, SHARE_MAGIC, sizeof SHARE_MAGIC);
  h->format = SHARE_FORMAT;
  h->key_length = (uint32_t)pl->key_length;
  memcpy(h->key, pl->key, pl->key_length);
  h->address = address;
  h->length = length;
  if (pwrite(fd, h, sizeof *h, 0) != (ssize_t)sizeof *h || rename(tmp, pl->path) != 0)
    goto fail;
  free(h);
  close(fd);
  return 0;
fail:
  free(h);
  if (fd >= 0) {
    close(fd);
    unlink(tmp);
  }
  return -1;
}

hwloc_topology_t sc_topo_share_load(sicm_topology_source *source) {
  share_file *pl = malloc(sizeof *pl);
  hwloc_topology_t hw = NULL;
  *source = SICM_TOPOLOGY_DISCOVERED;
  if (pl == NULL || share_file_init(pl) != 0) {
    free(pl);
    return sc_topo_load_hwloc(0);
  }
  share_found found = share_adopt(pl, &hw);
  int lock = found == SHARE_ABSENT ? share_lock(pl) : -1;
  if (lock >= 0)
    found = share_adopt(pl, &hw); /* another may have published meanwhile */
  if (found == SHARE_ADOPTED) {
    *source = SICM_TOPOLOGY_ADOPTED;
  } else {
    hw = sc_topo_load_hwloc(0);
    if (hw != NULL && lock >= 0 && found == SHARE_ABSENT && share_publish(pl, hw) == 0)
      *source = SICM_TOPOLOGY_PUBLISHED;
  }
  if (lock >= 0)
    close(lock);
  free(pl);
  return hw;
}
