/* shm_segment.c: shared arenas as POSIX shared-memory objects — names, the
 * one address every process maps a segment at, create, attach, detach and
 * unlink, and what the arena calls need from a segment (statistics,
 * placement shared by all processes, pages mapped for migration).
 *
 * The creator picks the middle of the largest free range of its address
 * space, aligned to the 16 GiB chunks of the pointer-to-arena table, and
 * records it in the header.  Other processes of the same program have that
 * range free too, almost always; an attacher maps the segment there with
 * MAP_FIXED_NOREPLACE, so it fails instead of replacing a mapping. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "shm.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

static int name_check(const char *name) {
  size_t len = name ? strlen(name) : 0;
  int ok = len >= 2 && len <= SHM_NAME_MAX && name[0] == '/' && strcmp(name, "/.") != 0 &&
           strcmp(name, "/..") != 0;
  for (size_t i = 1; ok && i < len; i++)
    ok = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
         (name[i] >= '0' && name[i] <= '9') || name[i] == '.' || name[i] == '_' || name[i] == '-';
  if (!ok)
    return sicm_fail(EINVAL, "bad shared arena name \"%.40s\": use '/' and 1 to 200 of "
                             "[A-Za-z0-9._-]", name ? name : "(null)");
  return 0;
}

static uintptr_t round_up(uintptr_t v, uintptr_t to) { return (v + to - 1) & ~(to - 1); }

/* The middle of the largest unmapped range, chunk-aligned, if `size` bytes
 * fit there; 0 if not. */
static uintptr_t address_choose(size_t size) {
  FILE *maps = fopen("/proc/self/maps", "re");
  if (maps == NULL)
    return 0;
  const uintptr_t top = ((uintptr_t)1 << SICM_ADDRESS_BITS) - SICM_CHUNK_SIZE;
  uintptr_t best_lo = 0, best_hi = 0, end_prev = SICM_CHUNK_SIZE, lo, hi;
  char line[512];
  while (fgets(line, sizeof line, maps) != NULL) {
    if (sscanf(line, "%lx-%lx", &lo, &hi) != 2)
      continue;
    if (lo > top)
      lo = top;
    if (lo > end_prev && lo - end_prev > best_hi - best_lo) {
      best_lo = end_prev;
      best_hi = lo;
    }
    if (hi > end_prev)
      end_prev = hi;
  }
  fclose(maps);
  if (top > end_prev && top - end_prev > best_hi - best_lo) {
    best_lo = end_prev;
    best_hi = top;
  }
  uintptr_t span = round_up(size, SICM_CHUNK_SIZE);
  best_lo = round_up(best_lo, SICM_CHUNK_SIZE);
  best_hi &= ~(uintptr_t)(SICM_CHUNK_SIZE - 1);
  if (best_hi <= best_lo || best_hi - best_lo < span)
    return 0;
  return best_lo + (((best_hi - best_lo - span) / 2) & ~(uintptr_t)(SICM_CHUNK_SIZE - 1));
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
    return sicm_fail(errno, "cannot map shared arena %s: %s", name, strerror(errno));
  char holder[300];
  range_holder(base, base + size, holder, sizeof holder);
  return sicm_fail(EEXIST, "shared arena %s needs 0x%lx-0x%lx, which this process already "
                           "uses: %s", name, base, base + size, holder);
}

static void binding_from_header(const shm_header *h, sicm_binding *b) {
  memset(b, 0, sizeof *b);
  const unsigned bits = 8 * sizeof(unsigned long);
  b->policy = h->policy;
  for (unsigned i = 0; i < h->nnodes && i < SICM_ARENA_DEVICES_MAX; i++) {
    int node = h->nodes[i];
    if (node < 0 || node >= 1024)
      continue;
    b->nodemask[node / bits] |= 1ul << (node % bits);
    sicm_device *dev = sicm_device_of_node(node, 0);
    if (dev != NULL)
      b->devices[b->ndevices++] = dev;
  }
}

static void binding_to_header(shm_header *h, const sicm_binding *b) {
  h->policy = b->policy;
  h->nnodes = b->ndevices;
  for (unsigned i = 0; i < b->ndevices; i++)
    h->nodes[i] = b->devices[i]->node;
}

sicm_arena sicm_arena_create_shared(const char *name, size_t size, sicm_device *dev,
                                    unsigned mode) {
  sicm_state *s = sicm_state_get();
  sicm_binding binding;
  if (s == NULL || name_check(name) != 0 || sicm_binding_make(s, &dev, 1, 0, &binding) != 0)
    return NULL;
  if (size < SHM_SIZE_MIN || size > SHM_SIZE_MAX)
    return sicm_fail_null(EINVAL, "shared arena size %zu is not within 64 KiB .. 64 TiB", size);
  if (mode > 0777)
    return sicm_fail_null(EINVAL, "mode 0%o is not a permission mode", mode);
  size = round_up(size, (uintptr_t)sysconf(_SC_PAGESIZE));
  /* Pages come from /dev/shm when first touched; one it cannot supply
   * would be SIGBUS in whichever process touches it. */
  struct statvfs fs;
  if (statvfs("/dev/shm", &fs) == 0 && (uint64_t)fs.f_bavail * fs.f_frsize < size)
    return sicm_fail_null(ENOSPC, "/dev/shm has %llu bytes free, fewer than the %zu the arena "
                                  "may use", (unsigned long long)fs.f_bavail * fs.f_frsize, size);
  uintptr_t base = address_choose(size);
  if (base == 0)
    return sicm_fail_null(ENOMEM, "no free address range of %zu bytes", size);
  int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode ? mode : 0600);
  if (fd < 0)
    return sicm_fail_null(errno, "cannot create shared arena %s: %s", name, strerror(errno));
  struct stat st;
  /* fchmod: the umask must not narrow the mode the creator asked for. */
  if (fchmod(fd, mode ? mode : 0600) != 0 || ftruncate(fd, (off_t)size) != 0 ||
      fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    shm_unlink(name);
    return sicm_fail_null(err, "cannot size shared arena %s: %s", name, strerror(err));
  }
  if (map_at(fd, base, size, name) != 0) {
    int err = errno;
    close(fd);
    shm_unlink(name);
    errno = err;
    return NULL;
  }
  close(fd);
  shm_header *h = (shm_header *)base;
  /* Bind before the first touch: on shared memory this is the object's
   * policy, so pages any process touches later go there too. */
  int err = mbind(h, size, binding.policy, binding.nodemask, sizeof binding.nodemask * 8, 0)
                ? errno
                : shm_heap_format(h, size);
  sicm_arena sa = NULL;
  if (err == 0) {
    h->version = SHM_VERSION;
    h->layout = shm_layout_signature();
    h->base = base;
    h->creator_pid = (int32_t)getpid();
    snprintf(h->name, sizeof h->name, "%s", name);
    binding_to_header(h, &binding);
    __atomic_store_n(&h->magic, SHM_MAGIC, __ATOMIC_RELEASE);
    sa = sicm_arena_register_shared(h, size, &binding, st.st_dev, st.st_ino);
    err = sa ? 0 : errno;
  }
  if (sa == NULL) {
    munmap(h, size);
    shm_unlink(name);
    return sicm_fail_null(err, "cannot create shared arena %s: %s", name, strerror(err));
  }
  return sa;
}

/* Reads the header of an object into *h, waiting up to 2 s for its creator
 * to finish; 0 or -1 with errno. */
static int header_read(int fd, const char *name, shm_header *h, struct stat *st) {
  for (int waited_ms = 0;; waited_ms += 10) {
    if (fstat(fd, st) != 0)
      return sicm_fail(errno, "fstat %s: %s", name, strerror(errno));
    memset(h, 0, sizeof *h);
    ssize_t got = st->st_size > 0 ? pread(fd, h, sizeof *h, 0) : 0;
    if (got < 0)
      return sicm_fail(errno, "cannot read shared arena %s: %s", name, strerror(errno));
    if (h->magic == SHM_MAGIC && (size_t)got == sizeof *h)
      break;
    if (h->magic == SHM_MAGIC)
      return sicm_fail(EBADMSG, "%s is truncated: %lld bytes, shorter than its header", name,
                       (long long)st->st_size);
    if (h->magic != 0 && h->magic != SHM_MAGIC)
      return sicm_fail(EPROTO, "%s is not a libsicm shared arena", name);
    if (waited_ms >= 2000)
      return sicm_fail(EAGAIN, "%s is not initialized (still being created?)", name);
    nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
  }
  if (h->version != SHM_VERSION)
    return sicm_fail(EPROTO, "%s is a shared arena of version %u; this library reads version %u",
                     name, h->version, SHM_VERSION);
  if (h->layout != shm_layout_signature())
    return sicm_fail(EPROTO, "%s has another layout (0x%08x, here 0x%08x): built for another "
                             "libc or architecture", name, h->layout, shm_layout_signature());
  if (h->size < SHM_SIZE_MIN || h->size > SHM_SIZE_MAX || h->base % SICM_CHUNK_SIZE != 0 ||
      (h->base + h->size - 1) >> SICM_ADDRESS_BITS)
    return sicm_fail(EPROTO, "%s has a damaged header (size %llu, base 0x%llx)", name,
                     (unsigned long long)h->size, (unsigned long long)h->base);
  if ((uint64_t)st->st_size < h->size)
    return sicm_fail(EBADMSG, "%s is truncated: %lld of its %llu bytes", name,
                     (long long)st->st_size, (unsigned long long)h->size);
  return 0;
}

sicm_arena sicm_arena_attach(const char *name) {
  if (sicm_state_get() == NULL || name_check(name) != 0)
    return NULL;
  int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
  if (fd < 0)
    return sicm_fail_null(errno, errno == ENOENT ? "no shared arena %s" : "cannot open %s: %s",
                          name, strerror(errno));
  shm_header *copy = malloc(sizeof *copy);
  struct stat st;
  if (copy == NULL) {
    close(fd);
    return sicm_fail_null(ENOMEM, "out of memory");
  }
  int rc = header_read(fd, name, copy, &st);
  uintptr_t base = (uintptr_t)copy->base;
  size_t size = copy->size;
  free(copy);
  if (rc != 0) {
    int err = errno;
    close(fd);
    errno = err;
    return NULL;
  }
  sicm_arena existing = sicm_arena_find_shared(st.st_dev, st.st_ino);
  if (existing != NULL) {
    close(fd);
    return existing;
  }
  rc = map_at(fd, base, size, name);
  int err = errno;
  close(fd);
  if (rc != 0) {
    errno = err;
    return NULL;
  }
  shm_header *h = (shm_header *)base;
  sicm_binding binding;
  binding_from_header(h, &binding);
  sicm_arena sa = sicm_arena_register_shared(h, size, &binding, st.st_dev, st.st_ino);
  if (sa == NULL) {
    err = errno;
    munmap(h, size);
    errno = err;
  }
  return sa;
}

int sicm_arena_detach(sicm_arena sa) {
  sicm_arena_rec *rec = sicm_arena_resolve(sa);
  if (rec == NULL)
    return -1;
  if (rec->shm == NULL)
    return sicm_fail(EINVAL, "not a shared arena; use sicm_arena_destroy()");
  return sicm_arena_destroy(sa);
}

int sicm_arena_unlink(const char *name) {
  if (name_check(name) != 0)
    return -1;
  if (shm_unlink(name) != 0)
    return sicm_fail(errno, "cannot unlink shared arena %s: %s", name, strerror(errno));
  return 0;
}

int sicm_arena_check(sicm_arena sa, sicm_heap_report *report) {
  sicm_arena_rec *rec = sicm_arena_resolve(sa);
  if (rec == NULL)
    return -1;
  if (rec->shm == NULL)
    return sicm_fail(EINVAL, "not a shared arena");
  int err = shm_lock(rec->shm);
  if (err != 0)
    return sicm_fail(err, "the shared arena's lock: %s", strerror(err));
  int rc = shm_check_locked(rec->shm, report);
  err = errno;
  shm_unlock(rec->shm);
  errno = err;
  return rc;
}

/* ---- what the arena calls need ---- */

/* Calls fn(base, npages) for each run of pages of the segment that are in
 * memory (mincore: the object's pages, whoever touched them); returns the
 * pages in memory, or -1. */
static long resident_runs(shm_header *h, void (*fn)(char *, size_t)) {
  enum { STEP = 1 << 18 }; /* pages per mincore call: 1 GiB */
  size_t page = (size_t)sysconf(_SC_PAGESIZE), npages = h->size / page;
  unsigned char *vec = malloc(STEP);
  long total = 0;
  char *base = (char *)h;
  for (size_t first = 0; vec != NULL && first < npages; first += STEP) {
    size_t n = npages - first < STEP ? npages - first : STEP;
    if (mincore(base + first * page, n * page, vec) != 0) {
      total = -1;
      break;
    }
    for (size_t i = 0; i < n;) {
      size_t run = 0;
      while (i + run < n && (vec[i + run] & 1))
        run++;
      if (run > 0 && fn != NULL)
        fn(base + (first + i) * page, run);
      total += (long)run;
      i += run ? run : 1;
    }
  }
  free(vec);
  return vec == NULL ? -1 : total;
}

static void populate(char *base, size_t npages) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (madvise(base, npages * page, MADV_POPULATE_READ) != 0)
    for (size_t k = 0; k < npages; k++) /* kernels before 5.14 */
      (void)*(volatile char *)(base + k * page);
}

void shm_segment_map_resident(sicm_arena_rec *rec) { resident_runs(rec->shm, populate); }

void shm_segment_set_binding(sicm_arena_rec *rec, const sicm_binding *b) {
  if (shm_lock(rec->shm) != 0)
    return;
  binding_to_header(rec->shm, b);
  shm_unlock(rec->shm);
}

void shm_segment_get_binding(sicm_arena_rec *rec) {
  if (shm_lock(rec->shm) != 0)
    return;
  sicm_binding b;
  binding_from_header(rec->shm, &b);
  shm_unlock(rec->shm);
  pthread_mutex_lock(&rec->window_lock);
  rec->binding = b;
  pthread_mutex_unlock(&rec->window_lock);
}

int shm_segment_stats(sicm_arena_rec *rec, sicm_arena_stats *out) {
  shm_header *h = rec->shm;
  long resident = resident_runs(h, NULL);
  if (resident < 0)
    return sicm_fail(EIO, "mincore failed on the shared arena");
  int err = shm_lock(h);
  if (err != 0)
    return sicm_fail(err, "the shared arena's lock: %s", strerror(err));
  out->allocated = h->bytes_used - h->blocks_used * SHM_BLOCK_HEADER;
  out->active = h->header_size + h->bytes_used;
  shm_unlock(h);
  out->resident = (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
  out->mapped = out->held = out->maxsize = h->size;
  return 0;
}
