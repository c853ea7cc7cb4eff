/* SPDX-License-Identifier: BSD-3-Clause */
/* memkind_pmem.c: memkind's kinds of one arena each, in slots of the kind
 * table after the static kinds: file-backed (PMEM) kinds on libsicm's
 * file-backed arenas (sicm_arena_create_file), with their configuration
 * object and the check that a directory is on a DAX file system, and
 * fixed kinds on libsicm's fixed arenas (sicm_arena_create_fixed). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "memkind_internal.h"

#ifndef MAP_SHARED_VALIDATE
#define MAP_SHARED_VALIDATE 0x03
#endif
#ifndef MAP_SYNC
#define MAP_SYNC 0x80000
#endif

/* The largest arena a file-backed kind makes: sicm_arena_create_file's. */
#define FILE_SIZE_MAX ((size_t)64 << 40)

struct memkind_config {
  const char *pmem_dir;
  size_t pmem_size;
  memkind_mem_usage_policy policy;
};

struct memkind_config *memkind_config_new(void) {
  struct memkind_config *cfg = calloc(1, sizeof *cfg);
  if (cfg != NULL)
    cfg->policy = MEMKIND_MEM_USAGE_POLICY_DEFAULT;
  return cfg;
}

void memkind_config_delete(struct memkind_config *cfg) { free(cfg); }

/* As memkind: the path is kept, not copied. */
void memkind_config_set_path(struct memkind_config *cfg, const char *pmem_dir) {
  cfg->pmem_dir = pmem_dir;
}

void memkind_config_set_size(struct memkind_config *cfg, size_t pmem_size) {
  cfg->pmem_size = pmem_size;
}

void memkind_config_set_memory_usage_policy(struct memkind_config *cfg,
                                            memkind_mem_usage_policy policy) {
  cfg->policy = policy;
}

/* Takes a free slot of the kind table: its name is set last, with a
 * compare-and-swap, so no two callers take one slot. */
static memkind_t slot_take(void) {
  for (unsigned i = MK_NKINDS; i < MK_KINDS_MAX; i++) {
    memkind_t k = mk_kind(i);
    const char *free_slot = NULL;
    if (__atomic_load_n(&k->name, __ATOMIC_ACQUIRE) == NULL &&
        __atomic_compare_exchange_n(&k->name, &free_slot, "memkind_taken", 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      return k;
  }
  return NULL;
}

/* Makes slot k the kind of `arena`, of `size` bytes, named `name`; or,
 * when there is no arena, frees the slot and says why: `full` for errno
 * ENOMEM, ENOSPC or EAGAIN, MEMKIND_ERROR_INVALID for the rest.  errno is
 * saved_errno again on success. */
static int single_kind_finish(memkind_t k, sicm_arena arena, kind_memory memory, size_t size,
                              const char *name, int saved_errno, int full, memkind_t *kind) {
  if (arena == NULL) {
    int err = errno;
    __atomic_store_n(&k->name, NULL, __ATOMIC_RELEASE);
    return err == ENOMEM || err == ENOSPC || err == EAGAIN ? full : MEMKIND_ERROR_INVALID;
  }
  errno = saved_errno;
  k->memory = memory;
  k->scope = SCOPE_ALL;
  k->place = PLACE_BIND;
  k->huge_page = 0;
  k->arenas = NULL;
  k->single_arena = arena;
  k->single_size = size;
  mk_kind_publish(k, arena);
  __atomic_store_n(&k->name, name, __ATOMIC_RELEASE);
  *kind = k;
  return MEMKIND_SUCCESS;
}

static int create_file_kind(const char *dir, size_t max_size, memkind_t *kind) {
  if (dir == NULL || kind == NULL || (max_size != 0 && max_size < MEMKIND_PMEM_MIN_SIZE))
    return MEMKIND_ERROR_INVALID;
  if (!mk_ready())
    return MEMKIND_ERROR_UNAVAILABLE;
  size_t size = max_size;
  if (size == 0) { /* no bound: what the file system has */
    struct statvfs fs;
    if (statvfs(dir, &fs) != 0)
      return MEMKIND_ERROR_INVALID;
    size = (size_t)fs.f_bavail * fs.f_frsize;
    size = size < FILE_SIZE_MAX ? size : FILE_SIZE_MAX;
  }
  memkind_t k = slot_take();
  if (k == NULL)
    return MEMKIND_ERROR_TOOMANY;
  int node = sicm_node_self();
  sicm_device *dev = sicm_device_of_node(node < 0 ? 0 : node, 0);
  int saved_errno = errno;
  sicm_arena arena = dev != NULL ? sicm_arena_create_file(dir, size, dev) : NULL;
  return single_kind_finish(k, arena, MEM_FILE, size, "memkind_pmem", saved_errno,
                            MEMKIND_ERROR_MMAP, kind);
}

int memkind_create_pmem(const char *dir, size_t max_size, memkind_t *kind) {
  return create_file_kind(dir, max_size, kind);
}

/* The usage policy is accepted and changes nothing: the file-backed heap
 * reuses what is freed either way. */
int memkind_create_pmem_with_config(struct memkind_config *cfg, memkind_t *kind) {
  if (cfg == NULL || (unsigned)cfg->policy >= MEMKIND_MEM_USAGE_POLICY_MAX_VALUE)
    return MEMKIND_ERROR_INVALID;
  return create_file_kind(cfg->pmem_dir, cfg->pmem_size, kind);
}

/* The caller's memory, whole, as memkind takes it (a fixed arena uses its
 * whole pages). */
int memkind_create_fixed(void *addr, size_t size, memkind_t *kind) {
  if (addr == NULL || size == 0 || kind == NULL)
    return MEMKIND_ERROR_INVALID;
  if (!mk_ready())
    return MEMKIND_ERROR_UNAVAILABLE;
  memkind_t k = slot_take();
  if (k == NULL)
    return MEMKIND_ERROR_TOOMANY;
  int saved_errno = errno;
  sicm_arena arena = sicm_arena_create_fixed(addr, size, NULL);
  return single_kind_finish(k, arena, MEM_FIXED, size, "memkind_fixed", saved_errno,
                            MEMKIND_ERROR_MALLOC, kind);
}

int mk_single_kind_destroy(memkind_t k) {
  sicm_arena arena = k->single_arena;
  __atomic_store_n(&k->name, "memkind_destroyed", __ATOMIC_RELEASE);
  unsigned index = (unsigned)(k - mk_kind(0));
  for (unsigned cpu = 0; cpu < MK_FAST_CPUS; cpu++)
    __atomic_store_n(&mk_fast.arena[cpu][index], NULL, __ATOMIC_RELEASE);
  int rc = sicm_arena_destroy(arena) == 0 ? MEMKIND_SUCCESS : MEMKIND_ERROR_OPERATION_FAILED;
  k->single_arena = NULL;
  __atomic_store_n(&k->name, NULL, __ATOMIC_RELEASE);
  return rc;
}

/* As memkind: 0 when a file in dir can be mapped with MAP_SYNC (a DAX file
 * system), MEMKIND_ERROR_MMAP when it cannot, MEMKIND_ERROR_RUNTIME when no
 * file can be made there. */
int memkind_check_dax_path(const char *pmem_dir) {
  if (pmem_dir == NULL)
    return MEMKIND_ERROR_RUNTIME;
  int saved_errno = errno;
  int fd = open(pmem_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/.memkind-dax-XXXXXX", pmem_dir);
    fd = mkostemp(path, O_CLOEXEC);
    if (fd >= 0)
      unlink(path);
  }
  int rc = MEMKIND_ERROR_RUNTIME;
  long page = sysconf(_SC_PAGESIZE);
  if (fd >= 0 && ftruncate(fd, page) == 0) {
    void *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0);
    rc = p == MAP_FAILED ? MEMKIND_ERROR_MMAP : 0;
    if (p != MAP_FAILED)
      munmap(p, (size_t)page);
  }
  if (fd >= 0)
    close(fd);
  errno = saved_errno;
  return rc;
}
