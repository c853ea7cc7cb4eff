/* SPDX-License-Identifier: BSD-3-Clause */
/* shared_segment.c: shared arenas as POSIX shared-memory objects — names,
 * the one address every process maps a segment at, create, attach, detach
 * and unlink.  The kind's operations table is shared_ops.c's.
 *
 * The creator picks the middle of the largest free range of its address
 * space, aligned to the 16 GiB chunks of the pointer-to-arena table, and
 * records it in the header.  Other processes of the same program have that
 * range free too, almost always; an attacher maps the segment there with
 * MAP_FIXED_NOREPLACE, so it fails instead of replacing a mapping. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <numaif.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "shared.h"

static int name_check(const char *name) {
  size_t len = name ? strlen(name) : 0;
  int ok = len >= 2 && len <= SC_SHM_NAME_MAX && name[0] == '/' && strcmp(name, "/.") != 0 &&
           strcmp(name, "/..") != 0;
  for (size_t i = 1; ok && i < len; i++)
    ok = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
         (name[i] >= '0' && name[i] <= '9') || name[i] == '.' || name[i] == '_' || name[i] == '-';
  if (!ok)
    return sc_fail(EINVAL, "bad shared arena name \"%.40s\": use '/' and 1 to 200 of "
                             "[A-Za-z0-9._-]", name ? name : "(null)");
  return 0;
}

/* Describes what occupies [lo, hi) in this process, for the EEXIST error. */
static void range_holder(uintptr_t lo, uintptr_t hi, char *out, size_t len) {
  snprintf(out, len, "an unknown mapping");
  FILE *maps = fopen("/proc/self/maps", "re");
  if (maps == NULL)
    return;
  char line[512];
  uintptr_t a, b;
  while (fgets(line, sizeof line, maps) != NULL)
    if (sscanf(line, "%lx-%lx", &a, &b) == 2 && a < hi && b > lo) {
      line[strcspn(line, "\n")] = '\0';
      snprintf(out, len, "%.280s", line);
      break;
    }
  fclose(maps);
}

/* Maps the object at exactly `base`; 0, or -1 (EEXIST: the range is taken). */
static int map_at(int fd, uintptr_t base, size_t size, const char *name) {
  void *p = mmap((void *)base, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE,
                 fd, 0);
  if (p != MAP_FAILED && (uintptr_t)p == base)
    return 0;
  if (p != MAP_FAILED) /* a kernel before 4.17 took the address as a hint */
    munmap(p, size);
  else if (errno != EEXIST)
    return sc_fail(errno, "cannot map shared arena %s: %s", name, strerror(errno));
  char holder[300];
  range_holder(base, base + size, holder, sizeof holder);
  return sc_fail(EEXIST, "shared arena %s needs 0x%lx-0x%lx, which this process already "
                           "uses: %s", name, base, base + size, holder);
}

/* Whether a is a shared arena on the object of stat *st_arg. */
static int shared_is(const sc_arena *a, const void *st_arg) {
  const struct stat *st = st_arg;
  const sc_shared_arena *sh = (const sc_shared_arena *)(const void *)a->kind_data;
  return a->ops == &sc_shm_ops && sh->dev == (uint64_t)st->st_dev &&
         sh->ino == (uint64_t)st->st_ino;
}

/* ---- creation, and segments whose creator died ----
 * The creator holds an open-file-description lock on the whole object from
 * just after creating it until its magic is written; the kernel drops the
 * lock when the creator dies, however it dies.  So an object without magic
 * is being built while the lock is held, or while it is still empty and
 * younger than a second (the creator has not taken the lock yet); otherwise
 * it is abandoned: attach refuses it with ENOENT at once, and a create of
 * its name reclaims it. */

#define CREATION_GRACE_NS 1000000000ll

static int creation_lock(int fd, short type) {
  struct flock lock = {.l_type = type, .l_whence = SEEK_SET};
  return fcntl(fd, F_OFD_SETLK, &lock);
}

/* Whether the object open as fd, whose magic is 0, is abandoned; `held`:
 * this process holds its creation lock. */
static int creation_abandoned(int fd, const struct stat *st, int held) {
  struct flock lock = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
  if (!held && (fcntl(fd, F_OFD_GETLK, &lock) != 0 || lock.l_type != F_UNLCK))
    return 0;
  if (st->st_size > 0)
    return 1;
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  long long age = (now.tv_sec - st->st_ctim.tv_sec) * 1000000000ll + now.tv_nsec - st->st_ctim.tv_nsec;
  return age >= CREATION_GRACE_NS;
}

static int crash_create_step = -1;
void sc_shm_crash_in_create(int step) { crash_create_step = step; }
static void crash_point(int step) {
  if (crash_create_step == step)
    raise(SIGKILL);
}

/* Test hook: a pause of up to sc_shm_delay_in_create's bound at the points
 * where creation races with another creator's reclaim. */
enum { DELAY_CREATE_UNLOCKED, DELAY_CREATE_BIND, DELAY_RECLAIM_LOCKED };
static unsigned delay_max_us;
void sc_shm_delay_in_create(unsigned max_us) { delay_max_us = max_us; }
static void delay_point(int point) {
  if (delay_max_us == 0)
    return;
  static __thread unsigned seed;
  seed = seed * 1103515245u + 12345u + (unsigned)getpid() * 7u + (unsigned)point;
  unsigned us = (seed >> 8) % delay_max_us;
  nanosleep(&(struct timespec){us / 1000000, (long)(us % 1000000) * 1000}, NULL);
}

/* Unlinks `name` if it is an abandoned object.  The verdict is taken
 * holding the object's creation lock, and the magic and size are read
 * again under it: read before, they may be a creator's that finished and
 * let go since.  Holding the lock, no creator is building the object and
 * no other process reclaims it; the name is then checked to still be this
 * object, so that a reclaim never unlinks the arena another process just
 * created there.  0 if the name is free now, else -1. */
static int abandoned_reclaim(const char *name) {
  int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
  if (fd < 0)
    return errno == ENOENT ? 0 : -1;
  struct stat st, now;
  uint64_t magic = 0;
  int reclaim = creation_lock(fd, F_WRLCK) == 0;
  delay_point(DELAY_RECLAIM_LOCKED);
  reclaim = reclaim && fstat(fd, &st) == 0 &&
            (st.st_size < (off_t)sizeof magic || pread(fd, &magic, sizeof magic, 0) > 0) &&
            magic == 0 && creation_abandoned(fd, &st, 1);
  if (reclaim) { /* still the object at that name? */
    int again = shm_open(name, O_RDONLY | O_CLOEXEC, 0);
    reclaim = again >= 0 && fstat(again, &now) == 0 && now.st_ino == st.st_ino &&
              now.st_dev == st.st_dev && shm_unlink(name) == 0;
    if (again >= 0)
      close(again);
  }
  close(fd);
  return reclaim ? 0 : -1;
}

/* Whether `name` still names the object open as fd. */
static int object_named(int fd, const char *name) {
  struct stat mine, named;
  int again = shm_open(name, O_RDONLY | O_CLOEXEC, 0);
  int same = again >= 0 && fstat(fd, &mine) == 0 && fstat(again, &named) == 0 &&
             mine.st_ino == named.st_ino && mine.st_dev == named.st_dev;
  if (again >= 0)
    close(again);
  return same;
}

/* Creates the object `name`, reclaiming an abandoned one of that name, and
 * takes its creation lock.  The lock is retried while a reclaimer holds it
 * for its look; once held, the name is checked to still be ours (a
 * creator stopped for longer than the grace period before taking the lock
 * may have been reclaimed: it then tries again, as a new creator). */
static int object_create(const char *name, unsigned mode) {
  for (int attempt = 0; attempt < 100; attempt++) {
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0 && errno == EEXIST) {
      if (abandoned_reclaim(name) == 0)
        fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
      else
        errno = EEXIST;
    }
    if (fd < 0) {
      int err = errno;
      return sc_fail(err, "cannot create shared arena %s: %s", name,
                     err == EEXIST ? "a shared arena of that name exists" : strerror(err));
    }
    crash_point(0);
    delay_point(DELAY_CREATE_UNLOCKED);
    int locked;
    while ((locked = creation_lock(fd, F_WRLCK)) != 0 && (errno == EAGAIN || errno == EACCES))
      nanosleep(&(struct timespec){0, 100 * 1000}, NULL);
    /* A kernel before 3.15 has no OFD locks: no reclaim there, so the name
     * stays ours. */
    if (locked != 0 || object_named(fd, name)) {
      crash_point(1);
      return fd;
    }
    close(fd);
  }
  return sc_fail(EAGAIN, "cannot create shared arena %s: its name was reclaimed under this "
                         "process 100 times", name);
}

/* Checks a segment's size (rounded up to pages here) and that the file
 * system at `dir` can supply it, and picks its address: 0 with errno if
 * not.  Pages come from the file system when first touched; one it cannot
 * supply would be SIGBUS in whichever process touches it. */
static uintptr_t segment_place(size_t *size, const char *dir) {
  if (*size < SC_SHM_SIZE_MIN || *size > SC_SHM_SIZE_MAX) {
    sc_fail(EINVAL, "arena size %zu is not within 64 KiB .. 64 TiB", *size);
    return 0;
  }
  *size = sc_round_up(*size, sc_page_size());
  struct statvfs fs;
  if (statvfs(dir, &fs) != 0) {
    sc_fail(errno, "%s: %s", dir, strerror(errno));
    return 0;
  }
  if ((uint64_t)fs.f_bavail * fs.f_frsize < *size) {
    sc_fail(ENOSPC, "%s has %llu bytes free, fewer than the %zu the arena may use", dir,
            (unsigned long long)fs.f_bavail * fs.f_frsize, *size);
    return 0;
  }
  uintptr_t base = sc_address_hole(*size, SC_CHUNK_SIZE);
  if (base == 0)
    sc_fail(ENOMEM, "no free address range of %zu bytes", *size);
  return base;
}

/* Maps the object open as fd (sized already) at base, binds it, formats its
 * heap and registers the arena.  On failure nothing stays mapped; the
 * caller removes the object. */
static sicm_arena segment_build(int fd, uintptr_t base, size_t size, const char *name,
                                const sc_binding *binding, const struct stat *st) {
  if (map_at(fd, base, size, name) != 0)
    return NULL;
  crash_point(2);
  sc_shm_header *h = (sc_shm_header *)base;
  sc_shared_arena segment = {.header = h, .size = size};
  /* Bind before the first touch: on shared memory this is the object's
   * policy, so pages any process touches later go there too. */
  delay_point(DELAY_CREATE_BIND);
  int rc = mbind(h, size, binding->policy, binding->nodes.bits, SC_NODES_MAX, 0);
  if (rc != 0) {
    sc_fail(errno, "mbind to the arena's device failed: %s", strerror(errno));
  } else {
    h->creator_pid = (int32_t)getpid();
    h->creator_start = sc_shm_self_start();
    rc = sc_shm_heap_format(&segment);
  }
  crash_point(3);
  sicm_arena sa = NULL;
  if (rc == 0) {
    h->version = SC_SHM_VERSION;
    h->layout = sc_shm_layout_signature();
    h->base = base;
    snprintf(h->name, sizeof h->name, "%s", name);
    sc_shm_binding_write(h, binding);
    __atomic_store_n(&h->magic, SC_SHM_MAGIC, __ATOMIC_RELEASE);
    sa = sc_shm_register(&segment, binding, st);
  }
  if (sa == NULL) {
    int err = errno;
    char cause[256];
    snprintf(cause, sizeof cause, "%s", sicm_error_detail());
    munmap(h, size);
    return sc_fail_null(err, "cannot create arena %s: %s", name, cause);
  }
  return sa;
}

/* The binding of a segment's one device: base pages only (a segment is a
 * file of tmpfs or of the caller's directory, whose page size is its own). */
static int segment_binding(const sc_state *s, sicm_device *dev, sc_binding *binding) {
  if (sc_binding_make(s, &dev, 1, 0, binding) != 0)
    return -1;
  if (binding->huge_page)
    return sc_fail(ENOTSUP, "shared and file-backed arenas take devices of base pages");
  return 0;
}

sicm_arena sicm_arena_create_shared(const char *name, size_t size, sicm_device *dev,
                                    unsigned mode) {
  sc_state *s = sc_state_get();
  sc_binding binding;
  if (s == NULL || name_check(name) != 0 || segment_binding(s, dev, &binding) != 0)
    return NULL;
  if (mode > 0777)
    return sc_fail_null(EINVAL, "mode 0%o is not a permission mode", mode);
  uintptr_t base = segment_place(&size, "/dev/shm");
  if (base == 0)
    return NULL;
  int fd = object_create(name, mode ? mode : 0600);
  if (fd < 0)
    return NULL;
  struct stat st;
  /* fchmod: the umask must not narrow the mode the creator asked for. */
  if (fchmod(fd, mode ? mode : 0600) != 0 || ftruncate(fd, (off_t)size) != 0 ||
      fstat(fd, &st) != 0) {
    int err = errno;
    shm_unlink(name);
    close(fd);
    return sc_fail_null(err, "cannot size shared arena %s: %s", name, strerror(err));
  }
  sicm_arena sa = segment_build(fd, base, size, name, &binding, &st);
  if (sa == NULL) {
    int err = errno;
    shm_unlink(name);
    close(fd);
    errno = err;
    return NULL;
  }
  creation_lock(fd, F_UNLCK);
  close(fd);
  return sa;
}

/* ---- file-backed arenas ---- */

/* A file of no name in dir, of `size` bytes (O_TMPFILE; where the file
 * system has none, a name removed at once), so that nothing is left behind
 * by any exit.  Some file systems (9p) open an O_TMPFILE they cannot size,
 * or size a file only while it has a name: it is sized before the name goes. */
static int unnamed_file(const char *dir, size_t size) {
  int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0 && ftruncate(fd, (off_t)size) == 0)
    return fd;
  if (fd >= 0)
    close(fd);
  else if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
    return -1;
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/.sicm-file-XXXXXX", dir) >= (int)sizeof path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  fd = mkostemp(path, O_CLOEXEC);
  if (fd < 0)
    return -1;
  int sized = ftruncate(fd, (off_t)size), err = errno;
  unlink(path);
  if (sized != 0) {
    close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

sicm_arena sicm_arena_create_file(const char *dir, size_t size, sicm_device *dev) {
  sc_state *s = sc_state_get();
  sc_binding binding;
  if (s == NULL || segment_binding(s, dev, &binding) != 0)
    return NULL;
  if (dir == NULL || dir[0] == '\0')
    return sc_fail_null(EINVAL, "no directory for a file-backed arena");
  uintptr_t base = segment_place(&size, dir);
  if (base == 0)
    return NULL;
  int fd = unnamed_file(dir, size);
  if (fd < 0)
    return sc_fail_null(errno, "cannot make a file of %zu bytes in %s: %s", size, dir,
                          strerror(errno));
  struct stat st;
  char name[SC_SHM_NAME_MAX + 1];
  snprintf(name, sizeof name, "file:%s", dir);
  sicm_arena sa = NULL;
  if (fstat(fd, &st) != 0)
    sc_fail(errno, "cannot read a file in %s: %s", dir, strerror(errno));
  else
    sa = segment_build(fd, base, size, name, &binding, &st);
  int err = errno;
  close(fd); /* the mapping keeps the file until the arena goes */
  errno = err;
  return sa;
}

/* ---- attach ---- */

/* Reads the header of an object into *h, waiting up to 2 s for a creator
 * that is still building it, and checks what attach relies on: every field
 * that places the mapping or bounds the heap.  0 or -1 with errno. */
static int header_read(int fd, const char *name, sc_shm_header *h, struct stat *st) {
  for (int waited_ms = 0;; waited_ms += 10) {
    if (fstat(fd, st) != 0)
      return sc_fail(errno, "fstat %s: %s", name, strerror(errno));
    memset(h, 0, sizeof *h);
    ssize_t got = st->st_size > 0 ? pread(fd, h, sizeof *h, 0) : 0;
    if (got < 0)
      return sc_fail(errno, "cannot read shared arena %s: %s", name, strerror(errno));
    if (h->magic == SC_SHM_MAGIC && (size_t)got == sizeof *h)
      break;
    if (h->magic == SC_SHM_MAGIC)
      return sc_fail(EBADMSG, "%s is truncated: %lld bytes, shorter than its header", name,
                       (long long)st->st_size);
    if (h->magic != 0 && h->magic != SC_SHM_MAGIC)
      return sc_fail(EPROTO, "%s is not a libsicm shared arena", name);
    if (creation_abandoned(fd, st, 0))
      return sc_fail(ENOENT, "shared arena %s was never finished: its creator (pid %d, 0 if it "
                               "died before recording itself) died while creating it; creating "
                               "it again reclaims the name", name,
                       (size_t)got >= offsetof(sc_shm_header, creator_start) ? h->creator_pid : 0);
    if (waited_ms >= 2000)
      return sc_fail(EAGAIN, "%s is not initialized (still being created?)", name);
    nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
  }
  if (h->version != SC_SHM_VERSION)
    return sc_fail(EPROTO, "%s is a shared arena of version %u; this library reads version %u",
                     name, h->version, SC_SHM_VERSION);
  if (h->layout != sc_shm_layout_signature())
    return sc_fail(EPROTO, "%s has another layout (0x%08x, here 0x%08x): built for another "
                             "libc or architecture", name, h->layout, sc_shm_layout_signature());
  /* A 16 GiB-aligned base other than 0 is above any vm.mmap_min_addr. */
  if (h->base == 0 || h->base % SC_CHUNK_SIZE != 0 || h->size > SC_SHM_SIZE_MAX ||
      (h->base + h->size - 1) >> SC_ADDRESS_BITS)
    return sc_fail(EPROTO, "%s has a damaged header: base address 0x%llx (for %llu bytes) is "
                             "0, unaligned or beyond the user address space", name,
                     (unsigned long long)h->base, (unsigned long long)h->size);
  if (h->size < SC_SHM_SIZE_MIN || h->size % sc_page_size() != 0)
    return sc_fail(EPROTO, "%s has a damaged header (size %llu)", name,
                     (unsigned long long)h->size);
  if ((uint64_t)st->st_size < h->size)
    return sc_fail(EBADMSG, "%s is truncated: %lld of its %llu bytes", name,
                     (long long)st->st_size, (unsigned long long)h->size);
  uint64_t heap_begin = sc_shm_heap_begin();
  if (h->heap_begin != heap_begin || h->header_size != heap_begin)
    return sc_fail(EPROTO, "%s has a damaged header: its heap begins at 0x%llx, not 0x%llx", name,
                     (unsigned long long)h->heap_begin, (unsigned long long)heap_begin);
  if (h->heap_end != h->size - SC_SHM_BLOCK_HEADER)
    return sc_fail(EPROTO, "%s has a damaged header: its heap ends at 0x%llx, not at the end of "
                             "its %llu bytes", name, (unsigned long long)h->heap_end,
                     (unsigned long long)h->size);
  return 0;
}

/* One attach at a time in this process: two threads attaching one arena
 * must get one mapping and one handle. */
static pthread_mutex_t attach_lock = PTHREAD_MUTEX_INITIALIZER;

void sc_shared_fork_lock(void) { pthread_mutex_lock(&attach_lock); }
void sc_shared_fork_unlock(void) { pthread_mutex_unlock(&attach_lock); }

void sc_shared_fork_child(void) {
  for (unsigned slot = 0; slot < SC_ARENA_SLOTS; slot++) {
    sc_arena *a = sc_arena_slots[slot];
    if (a != NULL && a->ops == &sc_shm_ops && a->live_generation != 0)
      sc_shm_cache_fork_child(a);
  }
}

static sicm_arena attach_locked(int fd, const char *name) {
  sc_shm_header *copy = malloc(sizeof *copy);
  struct stat st;
  if (copy == NULL)
    return sc_fail_null(ENOMEM, "out of memory");
  int rc = header_read(fd, name, copy, &st);
  sc_shared_arena segment = {.header = (sc_shm_header *)(uintptr_t)copy->base,
                             .size = copy->size, .heap_begin = copy->heap_begin,
                             .heap_end = copy->heap_end, .lock_kind = sc_shm_mutex_kind()};
  free(copy);
  if (rc != 0)
    return NULL;
  sicm_arena existing = sc_arena_find(shared_is, &st);
  if (existing != NULL)
    return existing;
  if (map_at(fd, (uintptr_t)segment.header, segment.size, name) != 0)
    return NULL;
  sc_binding binding;
  sicm_arena sa = NULL;
  if (sc_shm_binding_read(segment.header, &binding) == 0)
    sa = sc_shm_register(&segment, &binding, &st);
  if (sa == NULL) {
    int err = errno;
    munmap(segment.header, segment.size);
    errno = err;
  } else {
    /* Blocks that processes gone since cached go back now (a damaged heap
     * fails the calls that use it, not the attach). */
    int err = errno;
    if (sc_shm_lock(&segment) == 0) {
      (void)sc_shm_cache_reclaim(&segment);
      sc_shm_unlock(&segment);
    }
    errno = err;
  }
  return sa;
}

sicm_arena sicm_arena_attach(const char *name) {
  if (sc_state_get() == NULL || name_check(name) != 0)
    return NULL;
  int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
  if (fd < 0)
    return sc_fail_null(errno, errno == ENOENT ? "no shared arena %s" : "cannot open %s: %s",
                          name, strerror(errno));
  pthread_mutex_lock(&attach_lock);
  sicm_arena sa = attach_locked(fd, name);
  int err = errno;
  pthread_mutex_unlock(&attach_lock);
  close(fd);
  errno = err;
  return sa;
}

/* The live shared arena of a handle, or NULL with errno. */
static sc_arena *shared_resolve(sicm_arena sa) {
  sc_arena *a = sc_arena_resolve(sa);
  if (a != NULL && a->ops != &sc_shm_ops)
    return sc_fail_null(EINVAL, "not a shared arena; use sicm_arena_destroy()");
  return a;
}

int sicm_arena_detach(sicm_arena sa) {
  return shared_resolve(sa) ? sicm_arena_destroy(sa) : -1;
}

int sicm_arena_unlink(const char *name) {
  if (name_check(name) != 0)
    return -1;
  if (shm_unlink(name) != 0)
    return sc_fail(errno, "cannot unlink shared arena %s: %s", name, strerror(errno));
  return 0;
}

int sicm_arena_check(sicm_arena sa, sicm_heap_report *report) {
  sc_arena *a = shared_resolve(sa);
  if (a == NULL)
    return -1;
  sc_shared_arena *s = sc_shared_of(a);
  if (sc_shm_cache_flush_mine(a) != 0 || sc_shm_lock(s) != 0)
    return -1;
  int rc = sc_shm_cache_reclaim(s) < 0 ? -1 : sc_shm_check_locked(s, report);
  int err = errno;
  sc_shm_unlock(s);
  errno = err;
  return rc;
}
