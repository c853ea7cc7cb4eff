/* SPDX-License-Identifier: BSD-3-Clause */
/* check_mode.c: processes for tests/check_mode.sh, under SICM_CHECK=1.
 * Each bad case frees or resizes what it must not, and the checking mode
 * must stop it (one line, then abort); the clean case runs a workload of
 * every call from several threads and must end normally.
 *
 *   check_mode CASE [LIBMEMKIND]
 * CASE: double-small, double-called, interior, foreign, realloc-freed,
 *       destroyed, defrag-freed, defrag-interior, shared-double,
 *       shared-interior, hbw-double and memkind-foreign (with the path of
 *       libmemkind.so),
 *       clean, shared-clean (a block freed by a process that did not
 *       allocate it).
 * Exit 0 when a bad case was not stopped is a failure the script sees. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sicm.h"

static sicm_arena arena;

static void *workload(void *arg) {
  unsigned seed = (unsigned)(uintptr_t)arg;
  void *live[64] = {0};
  for (int i = 0; i < 20000; i++) {
    unsigned k = (unsigned)rand_r(&seed) % 64;
    size_t size = 1 + (size_t)rand_r(&seed) % ((i & 7) ? 512 : 70000);
    if (live[k] == NULL)
      live[k] = (i & 3) == 0 ? sicm_arena_calloc(arena, 1, size)
                : (i & 3) == 1 ? sicm_arena_aligned_alloc(arena, 64, size)
                               : sicm_arena_alloc(arena, size);
    else if ((i & 1) == 0)
      live[k] = sicm_realloc(live[k], size);
    else {
      sicm_free(live[k]);
      live[k] = NULL;
    }
    if (live[k] != NULL)
      memset(live[k], 1, size < 16 ? size : 16);
  }
  return NULL; /* the rest is freed by the main thread: frees from another thread */
}

static int clean(void) {
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    pthread_create(&t[i], NULL, workload, (void *)(uintptr_t)(i + 1));
  for (int i = 0; i < 4; i++)
    pthread_join(t[i], NULL);
  void *blocks[1000];
  for (int i = 0; i < 1000; i++)
    blocks[i] = sicm_arena_alloc(arena, 16 + (size_t)i);
  for (int i = 999; i >= 0; i--)
    sicm_free(blocks[i]);
  return 0;
}

/* A shared arena of this process's own name, unlinked at once: the
 * mapping stays while the arena is attached. */
static sicm_arena shared_arena(void) {
  char name[64];
  snprintf(name, sizeof name, "/sicm-check-mode-%d", (int)getpid());
  sicm_arena s = sicm_arena_create_shared(name, 1 << 20, sicm_device_of_node(sicm_node_self(), 0), 0);
  sicm_arena_unlink(name);
  return s;
}

/* A block of the shared arena allocated by a child process, which ends;
 * this process frees it. */
static int shared_clean(void) {
  sicm_arena s = shared_arena();
  int fds[2];
  if (s == NULL || pipe(fds) != 0)
    return 2;
  pid_t pid = fork();
  if (pid == 0) {
    void *p = sicm_arena_alloc(s, 100);
    _exit(write(fds[1], &p, sizeof p) == sizeof p ? 0 : 1);
  }
  void *p = NULL;
  int status;
  if (read(fds[0], &p, sizeof p) != sizeof p || waitpid(pid, &status, 0) != pid || p == NULL)
    return 2;
  sicm_free(p);
  return sicm_arena_destroy(s) != 0;
}

int main(int argc, char **argv) {
  if (argc < 2 || sicm_init() != 0)
    return 2;
  arena = sicm_arena_create(0, sicm_device_of_node(sicm_node_self(), 0));
  if (arena == NULL)
    return 2;
  const char *c = argv[1];
  char stack_block[64] __attribute__((aligned(16))) = "";
  char *a = sicm_arena_alloc(arena, 64), *b = sicm_arena_alloc(arena, 64);
  if (strcmp(c, "double-small") == 0) { /* a is not the block freed last */
    sicm_free(a);
    sicm_free(b);
    sicm_free(a);
  } else if (strcmp(c, "double-called") == 0) { /* the called path, not the header's */
    (sicm_free)(a);
    (sicm_free)(b);
    (sicm_free)(a);
  } else if (strcmp(c, "interior") == 0) {
    char *big = sicm_arena_alloc(arena, 8192);
    sicm_free(big + 64);
  } else if (strcmp(c, "foreign") == 0) {
    sicm_free(stack_block);
  } else if (strcmp(c, "realloc-freed") == 0) {
    sicm_free(a);
    sicm_realloc(a, 1000);
  } else if (strcmp(c, "destroyed") == 0) {
    sicm_arena other = sicm_arena_create(0, sicm_device_of_node(sicm_node_self(), 0));
    void *p = sicm_arena_alloc(other, 100);
    sicm_arena_destroy(other);
    sicm_free(p);
  } else if (strcmp(c, "defrag-freed") == 0) {
    sicm_free(a);
    sicm_defrag_reallocate(a);
  } else if (strcmp(c, "defrag-interior") == 0) {
    sicm_defrag_reallocate(a + 16);
  } else if (strcmp(c, "shared-double") == 0 || strcmp(c, "shared-interior") == 0) {
    sicm_arena s = shared_arena();
    char *p = s ? sicm_arena_alloc(s, 100) : NULL, *q = s ? sicm_arena_alloc(s, 100) : NULL;
    if (p == NULL || q == NULL)
      return 2;
    if (c[7] == 'd') {
      sicm_free(p);
      sicm_free(q);
      sicm_free(p);
    } else {
      sicm_free(p + 32);
    }
  } else if (strcmp(c, "shared-clean") == 0) {
    return shared_clean();
  } else if (strcmp(c, "hbw-double") == 0 && argc == 3) { /* the line names hbw_free */
    void *lib = dlopen(argv[2], RTLD_NOW);
    int (*policy)(int) = lib ? (int (*)(int))dlsym(lib, "hbw_set_policy") : NULL;
    void *(*hbw_malloc)(size_t) = lib ? (void *(*)(size_t))dlsym(lib, "hbw_malloc") : NULL;
    void (*hbw_free)(void *) = lib ? (void (*)(void *))dlsym(lib, "hbw_free") : NULL;
    if (policy == NULL || hbw_malloc == NULL || hbw_free == NULL)
      return 2;
    policy(2); /* HBW_POLICY_PREFERRED: any node when there is no HBM */
    void *p = hbw_malloc(100), *q = hbw_malloc(100);
    if (p == NULL || q == NULL)
      return 2;
    hbw_free(p);
    hbw_free(q);
    hbw_free(p);
  } else if (strcmp(c, "memkind-foreign") == 0 && argc == 3) {
    void *lib = dlopen(argv[2], RTLD_NOW);
    void (*mk_free)(void *, void *) = lib ? (void (*)(void *, void *))dlsym(lib, "memkind_free") : NULL;
    if (mk_free == NULL)
      return 2;
    mk_free(NULL, stack_block);
  } else if (strcmp(c, "clean") == 0) {
    sicm_free(a);
    sicm_free(b);
    int rc = clean();
    sicm_arena_destroy(arena);
    return rc || sicm_fini() != 0;
  } else {
    return 2;
  }
  return 0; /* not stopped */
}
