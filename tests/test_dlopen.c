/* SPDX-License-Identifier: BSD-3-Clause */
/* test_dlopen.c: libsicm (and the memkind-compatible library) load with
 * dlopen(RTLD_NOW) into a process that did not link them — as OpenMP
 * runtimes, MPI components and Python load plug-ins — and work there.
 * This program links neither; it finds them in the build tree.  Exit 77
 * (skip) when libsicm was built on the system jemalloc, which cannot be
 * dlopen'ed, unless SICM_DLOPEN_REQUIRED=1. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  if (failures == 0)
    printf("test_dlopen: libsicm.so and libmemkind.so loaded with dlopen, allocations made and "
           "freed through both\n");
  return failures ? 1 : 0;
}
