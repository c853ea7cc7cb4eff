/* SPDX-License-Identifier: BSD-3-Clause */
/* test_dlopen.c: libsicm (and the memkind-compatible library) load with
 * dlopen(RTLD_NOW) into a process that did not link them — as OpenMP
 * runtimes, MPI components and Python load plug-ins — and work there.
 * Loaded, used and closed 1,000 times each, with libsicm-mpi-* too, they
 * grow the process by at most 1 MiB in all: they are never unloaded
 * (NODELETE), since the jemalloc inside never returns what it mapped.
 * This program links neither; it finds them in the build tree.  Exit 77
 * (skip) when libsicm was built on the system jemalloc, which cannot be
 * dlopen'ed, unless SICM_DLOPEN_REQUIRED=1. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c_check.h"
#include "sicm.h"

static void *symbol(void *lib, const char *name) {
  void *p = dlsym(lib, name);
  CHECK_MSG(p != NULL, "dlsym %s: %s", name, dlerror());
  return p;
}

static void *load(const char *path) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    const char *why = dlerror();
#ifndef SICM_PRIVATE_JEMALLOC
    const char *required = getenv("SICM_DLOPEN_REQUIRED");
    if (required == NULL || strcmp(required, "1") != 0) {
      printf("test_dlopen: SKIP: built on the system jemalloc (%s); run tools/build-jemalloc "
             "and configure again\n", why);
      exit(77);
    }
#endif
    CHECK_MSG(0, "dlopen %s: %s", path, why);
  }
  return lib;
}

static void libsicm_works(const char *path) {
  void *lib = load(path);
  if (lib == NULL)
    return;
  int (*init)(void) = (int (*)(void))symbol(lib, "sicm_init");
  int (*fini)(void) = (int (*)(void))symbol(lib, "sicm_fini");
  const sicm_device_list *(*devices)(void) =
      (const sicm_device_list *(*)(void))symbol(lib, "sicm_devices");
  sicm_arena (*create)(size_t, sicm_device *) =
      (sicm_arena(*)(size_t, sicm_device *))symbol(lib, "sicm_arena_create");
  void *(*alloc)(sicm_arena, size_t) = (void *(*)(sicm_arena, size_t))symbol(lib, "sicm_arena_alloc");
  void (*release)(void *) = (void (*)(void *))symbol(lib, "sicm_free");
  sicm_arena (*lookup)(const void *) = (sicm_arena(*)(const void *))symbol(lib, "sicm_arena_lookup");
  int (*destroy)(sicm_arena) = (int (*)(sicm_arena))symbol(lib, "sicm_arena_destroy");
  if (failures)
    return;
  CHECK_MSG(init() == 0, "sicm_init failed: errno %d", errno);
  const sicm_device_list *list = devices();
  CHECK_MSG(list != NULL && list->count > 0, "no devices");
  sicm_arena arena = create(0, &list->devices[0]);
  CHECK_MSG(arena != NULL, "sicm_arena_create failed: errno %d", errno);
  /* Small (thread cache), large, and enough of them to reach jemalloc. */
  void *blocks[1000];
  for (int i = 0; i < 1000; i++) {
    size_t size = i % 10 == 0 ? (size_t)1 << 20 : 16 + (size_t)i;
    blocks[i] = alloc(arena, size);
    CHECK_MSG(blocks[i] != NULL, "allocation %d of %zu bytes failed", i, size);
    if (blocks[i] != NULL)
      memset(blocks[i], i & 0xff, size);
    CHECK_MSG(lookup(blocks[i]) == arena, "allocation %d is not in its arena", i);
  }
  for (int i = 0; i < 1000; i++)
    release(blocks[i]);
  CHECK_MSG(destroy(arena) == 0, "sicm_arena_destroy failed: errno %d", errno);
  CHECK_MSG(fini() == 0, "sicm_fini failed: errno %d", errno);
  dlclose(lib);
}

/* libmemkind.so needs libsicm.so.0, which the loader finds by its soname
 * among the libraries already loaded. */
static void memkind_works(const char *path) {
  void *lib = load(path);
  if (lib == NULL)
    return;
  typedef struct memkind *memkind_t;
  memkind_t *highest = (memkind_t *)symbol(lib, "MEMKIND_HIGHEST_CAPACITY");
  void *(*mk_malloc)(memkind_t, size_t) = (void *(*)(memkind_t, size_t))symbol(lib, "memkind_malloc");
  void (*mk_free)(memkind_t, void *) = (void (*)(memkind_t, void *))symbol(lib, "memkind_free");
  int (*check)(memkind_t) = (int (*)(memkind_t))symbol(lib, "memkind_check_available");
  if (failures)
    return;
  CHECK_MSG(check(*highest) == 0, "MEMKIND_HIGHEST_CAPACITY is unavailable");
  for (int i = 0; i < 100; i++) {
    char *p = mk_malloc(*highest, 4096 + (size_t)i);
    CHECK_MSG(p != NULL, "memkind_malloc %d failed", i);
    if (p != NULL)
      p[4095] = 1;
    mk_free(NULL, p);
  }
  dlclose(lib);
}

static size_t resident_kib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long size = 0, resident = 0;
  if (f == NULL || fscanf(f, "%lu %lu", &size, &resident) != 2)
    resident = 0;
  if (f != NULL)
    fclose(f);
  return resident * (size_t)sysconf(_SC_PAGESIZE) / 1024;
}

/* 1,000 cycles of dlopen, use (fn, may be NULL) and dlclose of path: the
 * growth from the tenth cycle to the last stays within 1 MiB. */
static void cycles(const char *path, void (*use)(void *lib)) {
  size_t start = 0;
  for (int i = 0; i < 1000 && failures == 0; i++) {
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK_MSG(lib != NULL, "dlopen %s, cycle %d: %s", path, i, dlerror());
    if (lib == NULL)
      return;
    if (use != NULL)
      use(lib);
    CHECK_MSG(dlclose(lib) == 0, "dlclose %s: %s", path, dlerror());
    if (i == 9)
      start = resident_kib();
  }
  size_t end = resident_kib();
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  (void)start; /* the sanitizer's quarantine of freed memory grows the process by itself */
  printf("test_dlopen: %s, 1,000 cycles: %zu KiB resident (not bounded under a sanitizer)\n", path,
         end);
#else
  CHECK_MSG(end <= start + 1024, "%s: 1,000 dlopen/dlclose cycles grew the process from %zu to "
            "%zu KiB", path, start, end);
  printf("test_dlopen: %s, cycles 10 to 1,000: %zu -> %zu KiB resident\n", path, start, end);
#endif
}

static void libsicm_use(void *lib) {
  int (*init)(void) = (int (*)(void))dlsym(lib, "sicm_init");
  int (*fini)(void) = (int (*)(void))dlsym(lib, "sicm_fini");
  sicm_device *(*best)(int, int) = (sicm_device * (*)(int, int)) dlsym(lib, "sicm_device_best");
  sicm_arena (*create)(size_t, sicm_device *) =
      (sicm_arena(*)(size_t, sicm_device *))dlsym(lib, "sicm_arena_create");
  void *(*alloc)(sicm_arena, size_t) = (void *(*)(sicm_arena, size_t))dlsym(lib, "sicm_arena_alloc");
  void (*release)(void *) = (void (*)(void *))dlsym(lib, "sicm_free");
  int (*destroy)(sicm_arena) = (int (*)(sicm_arena))dlsym(lib, "sicm_arena_destroy");
  CHECK(init && fini && best && create && alloc && release && destroy && init() == 0);
  sicm_arena arena = create(0, best(SICM_RANK_CAPACITY, SICM_INITIATOR_SELF));
  release(alloc(arena, 4096));
  CHECK(arena != NULL && destroy(arena) == 0 && fini() == 0);
}

static void memkind_use(void *lib) {
  typedef struct memkind *memkind_t;
  memkind_t *kind = (memkind_t *)dlsym(lib, "MEMKIND_HIGHEST_CAPACITY");
  void *(*mk_malloc)(memkind_t, size_t) = (void *(*)(memkind_t, size_t))dlsym(lib, "memkind_malloc");
  void (*mk_free)(memkind_t, void *) = (void (*)(memkind_t, void *))dlsym(lib, "memkind_free");
  CHECK(kind && mk_malloc && mk_free);
  void *p = mk_malloc(*kind, 4096);
  CHECK(p != NULL);
  mk_free(NULL, p);
}

/* With no argument, the libraries of the build tree; with LIBDIR, those
 * installed there (tests/install.sh). */
int main(int argc, char **argv) {
  const char *top = getenv("SICM_TOP_BUILDDIR");
  char path[4096];
  if (argc == 2)
    snprintf(path, sizeof path, "%s/libsicm.so", argv[1]);
  else
    snprintf(path, sizeof path, "%s/src/.libs/libsicm.so", top ? top : ".");
  libsicm_works(path);
  if (argc == 2)
    snprintf(path, sizeof path, "%s/sicm/memkind/libmemkind.so", argv[1]);
  else
    snprintf(path, sizeof path, "%s/src/memkind/.libs/libmemkind.so", top ? top : ".");
  memkind_works(path);
  if (argc == 1 && failures == 0) {
    snprintf(path, sizeof path, "%s/src/.libs/libsicm.so", top ? top : ".");
    cycles(path, libsicm_use);
    snprintf(path, sizeof path, "%s/src/memkind/.libs/libmemkind.so", top ? top : ".");
    cycles(path, memkind_use);
    for (const char *const *mpi = (const char *const[]){"openmpi", "mpich", NULL}; *mpi; mpi++) {
      snprintf(path, sizeof path, "%s/src/mpi/.libs/libsicm-mpi-%s.so", top ? top : ".", *mpi);
      if (access(path, F_OK) == 0)
        cycles(path, NULL);
    }
  }
  if (failures == 0)
    printf("test_dlopen: libsicm.so and libmemkind.so loaded with dlopen, allocations made and "
           "freed through both\n");
  return failures ? 1 : 0;
}
