/* SPDX-License-Identifier: BSD-3-Clause */
/* preload_check.c: a program that knows nothing of libsicm, run under
 * LD_PRELOAD=libsicm-preload.so by tests/preload/host.sh.  It asks the
 * loaded libsicm (found with dlsym, as a debugger would) which allocations
 * landed in an arena.  One mode per behaviour; prints "ok: ..." per check
 * and exits nonzero at the first failure. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB ((size_t)1 << 20)

static void *(*arena_of)(const void *);
static int (*name_of)(void *, char *, size_t);
static int small_process; /* SICM_PRELOAD has small=process */
static void *early_block; /* malloc'd by a constructor of this program */

#define CHECK(cond, what)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "FAILED: %s (%s:%d)\n", what, __FILE__, __LINE__);      \
      exit(1);                                                                 \
    }                                                                          \
    printf("ok: %s\n", what);                                                  \
  } while (0)

/* Whether p is in one of the preload's small arenas (named preload:small:...). */
static int in_small_arena(const void *p) {
  void *arena = arena_of != NULL ? arena_of(p) : NULL;
  char name[64] = "";
  return arena != NULL && name_of != NULL && name_of(arena, name, sizeof name) >= 0 &&
         strncmp(name, "preload:small:", 14) == 0;
}

/* Whether p was placed on a device: in an arena, not a small one. */
static int placed(const void *p) {
  return arena_of != NULL && arena_of(p) != NULL && !in_small_arena(p);
}

/* Whether a block below min is where small blocks go: a small arena, or
 * with small=process the process allocator. */
static int small_home(const void *p) {
  return small_process ? arena_of != NULL && arena_of(p) == NULL : in_small_arena(p);
}

static void fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i += 4093)
    p[i] = (unsigned char)(seed + i);
  if (n > 0)
    p[n - 1] = (unsigned char)(seed + 7);
}

static int same(const unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i += 4093)
    if (p[i] != (unsigned char)(seed + i))
      return 0;
  return n == 0 || p[n - 1] == (unsigned char)(seed + 7);
}

__attribute__((constructor)) static void early(void) {
  early_block = malloc(3 * MiB);
}

static int mode_basic(int early_placed) {
  CHECK(early_placed, "a program constructor's 3 MiB malloc is in an arena");
  unsigned char *big = malloc(4 * MiB), *small = malloc(64);
  CHECK(big && placed(big), "malloc(4 MiB) is in an arena");
  CHECK(small && small_home(small), "malloc(64) is a small arena's (small=process: the process's)");
  CHECK(malloc_usable_size(big) >= 4 * MiB && malloc_usable_size(small) >= 64,
        "malloc_usable_size of both");
  fill(big, 4 * MiB, 1);
  big = realloc(big, 9 * MiB);
  CHECK(big && placed(big) && same(big, 4 * MiB, 1), "realloc 4 -> 9 MiB keeps the data, in an arena");
  fill(big, 9 * MiB, 2);
  unsigned char *shrunk = realloc(big, 100);
  CHECK(shrunk && small_home(shrunk) && shrunk[0] == 2,
        "realloc 9 MiB -> 100 B moves to where small blocks go");
  fill(shrunk, 100, 3);
  unsigned char *grown = realloc(shrunk, 2 * MiB);
  CHECK(grown && placed(grown) && same(grown, 100, 3),
        "realloc 100 B -> 2 MiB moves into an arena with the data");
  CHECK(realloc(grown, 0) == NULL, "realloc(p, 0) frees");
  unsigned char *z = calloc(1, 5 * MiB);
  int zero = z != NULL;
  for (size_t i = 0; zero && i < 5 * MiB; i += 512)
    zero = z[i] == 0;
  CHECK(zero && placed(z), "calloc(5 MiB) is zero, in an arena");
  memset(z, 0xff, 5 * MiB);
  free(z);
  z = calloc(5 * MiB, 1);
  zero = z != NULL;
  for (size_t i = 0; zero && i < 5 * MiB; i += 512)
    zero = z[i] == 0;
  CHECK(zero, "calloc after a dirty free of the same size is zero");
  free(z);
  volatile size_t huge = SIZE_MAX / 2;
  errno = 0;
  CHECK(calloc(huge, 4) == NULL && errno == ENOMEM, "calloc overflow is ENOMEM");
  void *a = NULL;
  CHECK(posix_memalign(&a, 1 << 16, 2 * MiB) == 0 && placed(a) && (uintptr_t)a % (1 << 16) == 0,
        "posix_memalign(64 KiB, 2 MiB) is aligned, in an arena");
  free(a);
  CHECK(posix_memalign(&a, 24, 2 * MiB) == EINVAL, "posix_memalign with alignment 24 is EINVAL");
  a = aligned_alloc(4096, 2 * MiB);
  CHECK(a && placed(a) && (uintptr_t)a % 4096 == 0, "aligned_alloc(4096, 2 MiB)");
  free(a);
  a = memalign(1 << 21, 3 * MiB);
  CHECK(a && placed(a) && (uintptr_t)a % (1 << 21) == 0, "memalign(2 MiB, 3 MiB)");
  free(a);
  a = valloc(2 * MiB);
  CHECK(a && placed(a) && (uintptr_t)a % 4096 == 0, "valloc(2 MiB)");
  free(a);
  a = pvalloc(2 * MiB - 100);
  CHECK(a && placed(a) && (uintptr_t)a % 4096 == 0 && malloc_usable_size(a) >= 2 * MiB,
        "pvalloc(2 MiB - 100) rounds to pages");
  free(a);
  a = memalign(64, 100);
  CHECK(a && small_home(a) && (uintptr_t)a % 64 == 0, "memalign(64, 100) goes where small blocks go");
  free(a);
  free(small);
  free(NULL);
  char *dup = strdup("strdup goes through malloc");
  CHECK(dup && strcmp(dup, "strdup goes through malloc") == 0, "strdup");
  free(dup);
  return 0;
}

/* Threads allocate blocks of 16 B to 3 MiB, check their contents, and free
 * half of them in another thread. */
#define THREADS 4
#define SLOTS 64
static void *handoff[THREADS][SLOTS];
static int stop_traffic;
static int traffic_failed;

static void *traffic(void *arg) {
  unsigned id = (unsigned)(uintptr_t)arg, seed = id * 7919 + 1;
  for (unsigned iter = 0; iter < 3000 && !__atomic_load_n(&stop_traffic, __ATOMIC_RELAXED); iter++) {
    seed = seed * 1103515245 + 12345;
    size_t size = (seed >> 8) % 4 == 0 ? MiB + (seed >> 4) % (2 * MiB) : 16 + (seed >> 4) % 4000;
    unsigned char *p = malloc(size);
    if (p == NULL || (size >= MiB ? !placed(p) : !small_home(p))) {
      __atomic_store_n(&traffic_failed, 1, __ATOMIC_RELAXED);
      return NULL;
    }
    fill(p, size, id + iter);
    unsigned slot = (seed >> 16) % SLOTS, peer = (id + 1) % THREADS;
    void *old = __atomic_exchange_n(&handoff[peer][slot], NULL, __ATOMIC_ACQ_REL);
    free(old); /* a block another thread made */
    if (!same(p, size, id + iter))
      __atomic_store_n(&traffic_failed, 1, __ATOMIC_RELAXED);
    if (iter % 2)
      free(p);
    else
      free(__atomic_exchange_n(&handoff[id][slot], p, __ATOMIC_ACQ_REL));
  }
  return NULL;
}

static int mode_threads(void) {
  pthread_t t[THREADS];
  for (unsigned i = 0; i < THREADS; i++)
    pthread_create(&t[i], NULL, traffic, (void *)(uintptr_t)i);
  for (unsigned i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  for (unsigned i = 0; i < THREADS; i++)
    for (unsigned s = 0; s < SLOTS; s++)
      free(handoff[i][s]);
  CHECK(!traffic_failed, "4 threads x 3000 allocations of 16 B - 3 MiB, freed across threads");
  return 0;
}

static void *endless_traffic(void *arg) {
  while (!__atomic_load_n(&stop_traffic, __ATOMIC_RELAXED))
    traffic(arg);
  return NULL;
}

static int mode_fork(int forks) {
  pthread_t t[2];
  for (unsigned i = 0; i < 2; i++)
    pthread_create(&t[i], NULL, endless_traffic, (void *)(uintptr_t)i);
  int hung = 0, failed = 0;
  for (int i = 0; i < forks; i++) {
    pid_t pid = fork();
    if (pid == 0) {
      alarm(20); /* a hang ends as SIGALRM */
      unsigned char *p = malloc(4 * MiB), *q = malloc(100);
      int ok = p && q && placed(p) && small_home(q);
      if (ok) {
        fill(p, 4 * MiB, 9);
        ok = same(p, 4 * MiB, 9);
      }
      free(p);
      free(q);
      _exit(ok ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
      hung++;
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      failed++;
  }
  __atomic_store_n(&stop_traffic, 1, __ATOMIC_RELAXED);
  for (unsigned i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  printf("forks: %d, hung: %d, failed: %d\n", forks, hung, failed);
  CHECK(hung == 0 && failed == 0 && !traffic_failed,
        "children forked while 2 threads allocate place, use and free a 4 MiB block");
  return 0;
}

/* budget=8M on one device, spill=none: four 2 MiB blocks fit, the fifth
 * goes to the process allocator, and a freed block makes room again. */
static int mode_budget(void) {
  void *b[5];
  for (int i = 0; i < 5; i++)
    b[i] = malloc(2 * MiB);
  CHECK(placed(b[0]) && placed(b[1]) && placed(b[2]) && placed(b[3]), "four 2 MiB blocks in the 8 MiB budget");
  CHECK(b[4] && !placed(b[4]), "the fifth goes to the process allocator");
  free(b[1]);
  void *again = malloc(2 * MiB);
  CHECK(placed(again), "after a free the budget has room again");
  free(again);
  for (int i = 0; i < 5; i++)
    if (i != 1)
      free(b[i]);
  return 0;
}

/* The node of each page of [p, p + n), by move_pages with no target (a
 * query); counts the pages on `node` and on any node. */
static void pages_on(const unsigned char *p, size_t n, int node, size_t *on_node, size_t *all) {
  enum { BATCH = 512 };
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  uintptr_t first = (uintptr_t)p & ~(page - 1), end = (uintptr_t)p + n;
  for (uintptr_t a = first; a < end;) {
    void *pages[BATCH];
    int status[BATCH];
    unsigned k = 0;
    for (; k < BATCH && a < end; k++, a += page)
      pages[k] = (void *)a;
    if (syscall(SYS_move_pages, 0, (unsigned long)k, pages, NULL, status, 0) != 0)
      return;
    for (unsigned i = 0; i < k; i++) {
      *all += status[i] >= 0;
      *on_node += status[i] == node;
    }
  }
}

/* Small blocks (64 B and 1 KiB, 64 MiB in all, written) are where small
 * blocks go and on the node of the CPU this thread runs on (the caller
 * pins it), whatever device the large ones go to. */
static int mode_small_node(void) {
  enum { COUNT = 65536 };
  static unsigned char *blocks[COUNT];
  unsigned cpu = 0, node = 0;
  CHECK(getcpu(&cpu, &node) == 0, "getcpu");
  int home = 1;
  for (unsigned i = 0; i < COUNT; i++) {
    size_t size = i % 2 ? 64 : 1024 - 64;
    blocks[i] = malloc(size);
    if (blocks[i] == NULL) {
      home = 0;
      break;
    }
    memset(blocks[i], (int)i, size);
    home = home && small_home(blocks[i]);
  }
  CHECK(home, "65,536 blocks of 64 B and 960 B are where small blocks go");
  size_t on_node = 0, all = 0;
  for (unsigned i = 0; i < COUNT; i++)
    pages_on(blocks[i], i % 2 ? 64 : 1024 - 64, (int)node, &on_node, &all);
  int kept = 1;
  for (unsigned i = 0; i < COUNT; i++)
    kept = kept && blocks[i][0] == (unsigned char)i;
  CHECK(kept, "small blocks keep their contents");
  printf("block pages on node %u (cpu %u): %zu of %zu\n", node, cpu, on_node, all);
  CHECK(all > 0 && on_node == all, "every small block's page is on the node of the thread's CPU");
  for (unsigned i = 0; i < COUNT; i++)
    free(blocks[i]);
  return 0;
}

/* The VmFlags of the mapping that holds p, from /proc/self/smaps: "hg"
 * (MADV_HUGEPAGE), "nh" (MADV_NOHUGEPAGE) or neither, whatever the kernel
 * then does with the advice. */
static const char *page_advice(const void *p) {
  static char line[512];
  const char *advice = "?";
  FILE *f = fopen("/proc/self/smaps", "r");
  int inside = 0;
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
    } else if (inside && strncmp(line, "VmFlags:", 8) == 0) {
      advice = strstr(line, " hg") ? "hg" : strstr(line, " nh") ? "nh" : "none";
      break;
    }
  }
  if (f != NULL)
    fclose(f);
  return advice;
}

/* pages=: a placed block's mapping carries the advice `want` (with
 * sites=, in a site's arena, not the tier's it would fall back to), a
 * small block's is left to the system. */
static int mode_pages(const char *want) {
  void *big = malloc(4 * MiB), *small = malloc(64);
  CHECK(big && small && placed(big), "malloc(4 MiB) is placed");
  const char *conf = getenv("SICM_PRELOAD");
  char name[64] = "";
  if (conf != NULL && strstr(conf, "sites=") != NULL)
    CHECK(name_of(arena_of(big), name, sizeof name) >= 0 && strncmp(name, "site-", 5) == 0,
          "with sites=, the block is in a site's arena");
  const char *advice = page_advice(big);
  printf("placed block's advice: %s\n", advice);
  CHECK(strcmp(advice, want) == 0, "the placed block's mapping has the advice pages= asks");
  if (in_small_arena(small))
    CHECK(strcmp(page_advice(small), "hg") != 0, "a small block's mapping is not advised huge");
  free(big);
  free(small);
  return 0;
}

static int mode_inactive(void) {
  void *p = malloc(4 * MiB), *q = malloc(64);
  CHECK(p && q && (arena_of == NULL || (arena_of(p) == NULL && arena_of(q) == NULL)),
        "inactive: malloc(4 MiB) and malloc(64) are the process allocator's");
  free(p);
  free(q);
  return 0;
}

int main(int argc, char **argv) {
  arena_of = (void *(*)(const void *))dlsym(RTLD_DEFAULT, "sicm_arena_lookup");
  name_of = (int (*)(void *, char *, size_t))dlsym(RTLD_DEFAULT, "sicm_arena_get_name");
  const char *conf = getenv("SICM_PRELOAD");
  small_process = conf != NULL && strstr(conf, "small=process") != NULL;
  int early_placed = placed(early_block);
  free(early_block);
  const char *mode = argc > 1 ? argv[1] : "basic";
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (strcmp(mode, "inactive") != 0)
    CHECK(arena_of != NULL, "libsicm is loaded (sicm_arena_lookup found)");
  if (strcmp(mode, "basic") == 0)
    return mode_basic(early_placed);
  if (strcmp(mode, "threads") == 0)
    return mode_threads();
  if (strcmp(mode, "fork") == 0)
    return mode_fork(argc > 2 ? atoi(argv[2]) : 200);
  if (strcmp(mode, "budget") == 0)
    return mode_budget();
  if (strcmp(mode, "small-node") == 0)
    return mode_small_node();
  if (strcmp(mode, "inactive") == 0)
    return mode_inactive();
  if (strcmp(mode, "pages") == 0)
    return mode_pages(argc > 2 ? argv[2] : "none");
  if (strcmp(mode, "signal") == 0) { /* statistics on a signal, while the block lives */
    void *volatile p = malloc(4 * MiB);
    raise(SIGUSR1);
    free(p);
    return 0;
  }
  if (strcmp(mode, "double-free") == 0) {
    void *volatile p = malloc(2 * MiB);
    free(p);
    free(p);
    return 0; /* not reached: the second free aborts */
  }
  if (strcmp(mode, "wild-free") == 0) {
    volatile uintptr_t inside = (uintptr_t)malloc(2 * MiB) + 4096;
    free((void *)inside);
    return 0;
  }
  fprintf(stderr, "unknown mode %s\n", mode);
  return 2;
}
