/* SPDX-License-Identifier: BSD-3-Clause */
/* test_memkind.c: the memkind-compatible library's API on this machine —
 * kinds that exist everywhere work, absent ones answer as memkind does, and
 * bad input gets memkind's errors without harm.  Placement is checked in
 * the guest (tests/memkind/guest.sh). */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <numa.h>

#include "c_check.h"
#include "hbwmalloc.h"
#include "memkind.h"

static void append_text(void *out, const char *text) {
  strncat((char *)out, text, 8191 - strlen((char *)out));
}

static void every_working_kind_allocates_frees_and_is_detected(void) {
  memkind_t always[] = {MEMKIND_DEFAULT, MEMKIND_REGULAR, MEMKIND_INTERLEAVE,
                        MEMKIND_HIGHEST_CAPACITY, MEMKIND_HIGHEST_CAPACITY_PREFERRED,
                        MEMKIND_HIGHEST_CAPACITY_LOCAL, MEMKIND_HBW_PREFERRED};
  for (size_t k = 0; k < sizeof always / sizeof always[0]; k++) {
    char *p = memkind_malloc(always[k], 1000);
    CHECK(p != NULL);
    if (p == NULL)
      continue;
    memset(p, 0x5a, 1000);
    CHECK(memkind_malloc_usable_size(always[k], p) >= 1000);
    CHECK(memkind_detect_kind(p) == always[k]);
    char *q = memkind_realloc(NULL, p, 5000); /* kind detected */
    CHECK(q != NULL && q[999] == 0x5a);
    memkind_free(NULL, q);
    char *z = memkind_calloc(always[k], 10, 100);
    CHECK(z != NULL && z[0] == 0 && z[999] == 0);
    memkind_free(always[k], z);
    void *aligned = NULL;
    CHECK(memkind_posix_memalign(always[k], &aligned, 4096, 100) == 0);
    CHECK(((uintptr_t)aligned & 4095) == 0);
    memkind_free(always[k], aligned);
  }
}

static void realloc_moves_memory_between_kinds(void) {
  char *p = memkind_malloc(MEMKIND_DEFAULT, 64);
  CHECK(p != NULL);
  strcpy(p, "kept");
  char *q = memkind_realloc(MEMKIND_HIGHEST_CAPACITY, p, 128);
  CHECK(q != NULL && strcmp(q, "kept") == 0);
  CHECK(memkind_detect_kind(q) == MEMKIND_HIGHEST_CAPACITY);
  CHECK(memkind_realloc(MEMKIND_HIGHEST_CAPACITY, q, 0) == NULL); /* frees */
}

/* Huge pages of `kb` KiB the system reserved, on every node together. */
static long huge_pages_reserved(unsigned kb) {
  char path[96];
  snprintf(path, sizeof path, "/sys/kernel/mm/hugepages/hugepages-%ukB/nr_hugepages", kb);
  FILE *f = fopen(path, "r");
  long pages = 0;
  if (f != NULL && fscanf(f, "%ld", &pages) != 1)
    pages = 0;
  if (f != NULL)
    fclose(f);
  return pages;
}

static void bad_input_is_refused_without_harm(void) {
  errno = 0;
  CHECK(memkind_malloc(NULL, 10) == NULL && errno == EINVAL);
  CHECK(memkind_malloc(MEMKIND_DEFAULT, 0) == NULL);
  CHECK(memkind_calloc(MEMKIND_DEFAULT, 0, 8) == NULL);
  CHECK(memkind_calloc(MEMKIND_HIGHEST_CAPACITY, SIZE_MAX, 2) == NULL);
  void *untouched = &failures;
  CHECK(memkind_posix_memalign(MEMKIND_DEFAULT, &untouched, 3, 64) == EINVAL);
  CHECK(memkind_posix_memalign(MEMKIND_DEFAULT, &untouched, 2, 64) == EINVAL);
  CHECK(untouched == &failures);
  CHECK(memkind_check_available(NULL) == MEMKIND_ERROR_INVALID);
  /* The hugetlb kinds work where pages are reserved (hugetlb.sh in the
   * guest checks them), and say why they cannot where none are. */
  if (huge_pages_reserved(2048) == 0) {
    CHECK(memkind_check_available(MEMKIND_HUGETLB) == MEMKIND_ERROR_HUGETLB);
    errno = 0;
    CHECK(memkind_malloc(MEMKIND_HUGETLB, 64) == NULL && errno == ENOMEM);
  }
  CHECK(memkind_detect_kind(NULL) == NULL);
  /* Memory the kind did not allocate: left alone, errno EINVAL. */
  char *mine = malloc(32);
  strcpy(mine, "intact");
  errno = 0;
  memkind_free(MEMKIND_HIGHEST_CAPACITY, mine);
  CHECK(errno == EINVAL && strcmp(mine, "intact") == 0);
  hbw_free(mine);
  CHECK(strcmp(mine, "intact") == 0);
  CHECK(hbw_realloc(mine, 64) == NULL && strcmp(mine, "intact") == 0);
  CHECK(hbw_malloc_usable_size(mine) == 0);
  free(mine);
  char msg[MEMKIND_ERROR_MESSAGE_SIZE];
  memkind_error_message(MEMKIND_ERROR_UNAVAILABLE, msg, sizeof msg);
  CHECK(strcmp(msg, "<memkind> Requested memory kind is not available") == 0);
  memkind_error_message(-1000, msg, sizeof msg);
  CHECK(strstr(msg, "-1000") != NULL);
}

static void *thread_block(void *arg) {
  (void)arg;
  return malloc(200); /* from a thread's own arena of glibc, not the main one */
}

/* memkind_free(NULL, ptr) of a pointer no kind allocated, glibc's heap
 * aside: reported once (errno EINVAL) and left alone, never handed to
 * free(), which aborts on it.  Blocks of the heap are still freed. */
static void detected_free_leaves_foreign_pointers_alone(void) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  printf("test_memkind: foreign pointers skipped: the sanitizer's malloc is not glibc's\n");
#else
  static char static_block[64] __attribute__((aligned(16))) = "static";
  char stack_block[64] __attribute__((aligned(16))) = "stack";
  char *heap = malloc(100);
  strcpy(heap + 16, "inside");
  char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  strcpy(page, "mapped");
  char *foreign[] = {stack_block, static_block, heap + 16, page};
  const char *text[] = {"stack", "static", "inside", "mapped"};
  for (int i = 0; i < 4; i++) {
    errno = 0;
    memkind_free(NULL, foreign[i]);
    CHECK_MSG(errno == EINVAL && strcmp(foreign[i], text[i]) == 0, "foreign pointer %d (%s)", i,
              text[i]);
    errno = 0;
    CHECK_MSG(memkind_realloc(NULL, foreign[i], 256) == NULL && errno == EINVAL,
              "realloc of foreign pointer %d", i);
  }
  munmap(page, 4096);
  pthread_t t;
  void *from_thread = NULL;
  CHECK(pthread_create(&t, NULL, thread_block, NULL) == 0 && pthread_join(t, &from_thread) == 0);
  void *genuine[] = {heap, malloc(24), malloc(1 << 20), from_thread};
  for (int i = 0; i < 4; i++) {
    errno = 0;
    memkind_free(NULL, genuine[i]);
    CHECK_MSG(errno == 0, "a block of glibc's heap (%d) is freed", i);
  }
#endif
}

static void hbw_policy_is_set_once_before_allocating(void) {
  CHECK(hbw_get_policy() == HBW_POLICY_PREFERRED);
  CHECK(hbw_set_policy((hbw_policy_t)0) == EINVAL);
  CHECK(hbw_set_policy((hbw_policy_t)5) == EINVAL);
  CHECK(hbw_set_policy(HBW_POLICY_PREFERRED) == 0);
  CHECK(hbw_set_policy(HBW_POLICY_BIND) == EPERM);
  CHECK(hbw_get_policy() == HBW_POLICY_PREFERRED);
  void *p = NULL;
  CHECK(hbw_posix_memalign(&p, 3, 64) == EINVAL && p == NULL);
  CHECK(hbw_posix_memalign_psize(&p, 64, 64, HBW_PAGESIZE_1GB_STRICT) == EINVAL && p == NULL);
  CHECK(hbw_posix_memalign_psize(&p, 64, 64, (hbw_pagesize_t)0) == EINVAL && p == NULL);
  if (huge_pages_reserved(2048) == 0) /* the GBTLB kinds take 2 MiB pages, as memkind's */
    CHECK(hbw_posix_memalign_psize(&p, 64, 64, HBW_PAGESIZE_1GB) == ENOMEM && p == NULL);
  CHECK(hbw_verify_memory_region(NULL, 64, 0) == EINVAL);
  char stack_byte = 0;
  CHECK(hbw_verify_memory_region(&stack_byte, 0, 0) == EINVAL);
  void *untouched = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(untouched != MAP_FAILED && hbw_verify_memory_region(untouched, 4096, 0) == -1);
  munmap(untouched, 4096);
  CHECK(hbw_verify_memory_region(&stack_byte, 1, 0x80) == EINVAL);
  CHECK(hbw_malloc(0) == NULL);
  /* With HBM or without (then from the local node, preferred), it works. */
  char *h = hbw_calloc(4, 1024);
  CHECK(h != NULL && h[4095] == 0);
  CHECK(hbw_malloc_usable_size(h) >= 4096);
  h = hbw_realloc(h, 1 << 20);
  CHECK(h != NULL && h[4095] == 0);
  hbw_free(h);
  CHECK(hbw_check_available() == 0 || hbw_check_available() == ENODEV);
  if (hbw_check_available() == ENODEV) {
    CHECK(memkind_check_available(MEMKIND_HBW) == MEMKIND_ERROR_MEMTYPE_NOT_AVAILABLE);
    errno = 0;
    CHECK(memkind_malloc(MEMKIND_HBW, 64) == NULL && errno == ENOMEM);
  }
}

static volatile int stop_detecting;

/* Allocates, detects and frees over and over. */
static void *detect_forever(void *arg) {
  while (!stop_detecting) {
    void *p = memkind_malloc(MEMKIND_HIGHEST_CAPACITY, 128);
    if (p != NULL && memkind_detect_kind(p) != MEMKIND_HIGHEST_CAPACITY)
      __atomic_fetch_add((int *)arg, 1, __ATOMIC_RELAXED);
    memkind_free(NULL, p);
  }
  return NULL;
}

/* fork() while another thread allocates, detects and frees: every child
 * uses a kind and exits; none hangs on a lock of a thread it lacks. */
static void forked_children_use_kinds_while_a_thread_works(void) {
  int wrong = 0;
  pthread_t worker;
  CHECK(pthread_create(&worker, NULL, detect_forever, &wrong) == 0);
  int hung = 0, failed = 0;
  for (int i = 0; i < 200 && hung + failed < 3; i++) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      alarm(10); /* a hung child dies of SIGALRM and is counted */
      char *p = memkind_malloc(MEMKIND_HIGHEST_CAPACITY, 4096);
      int ok = p != NULL && memkind_detect_kind(p) == MEMKIND_HIGHEST_CAPACITY;
      memkind_free(NULL, p);
      _exit(ok ? 0 : 1);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
      hung++;
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      failed++;
  }
  stop_detecting = 1;
  pthread_join(worker, NULL);
  CHECK(hung == 0);
  CHECK(failed == 0);
  CHECK(wrong == 0);
}

static memkind_t first_kinds[4];

static void *first_allocations(void *arg) {
  memkind_t kind = *(memkind_t *)arg;
  for (int i = 0; i < 50; i++) {
    void *p = memkind_malloc(kind, 64 + (size_t)i);
    memkind_free(kind, p);
  }
  return NULL;
}

/* fork() while 4 threads make the process's first allocations of 4 kinds
 * (the library starting, each kind making its arena): the child allocates
 * from every kind and exits, never hangs.  Each trial is a new process, so
 * that the first allocations are first. */
static void fork_during_first_allocations(void) {
  first_kinds[0] = MEMKIND_HBW_PREFERRED;
  first_kinds[1] = MEMKIND_HIGHEST_CAPACITY;
  first_kinds[2] = MEMKIND_INTERLEAVE;
  first_kinds[3] = MEMKIND_HIGHEST_BANDWIDTH_LOCAL_PREFERRED;
  int hung = 0, failed = 0;
  for (int trial = 0; trial < 40; trial++) {
    pid_t parent = fork();
    CHECK(parent >= 0);
    if (parent == 0) {
      pthread_t threads[4];
      for (int t = 0; t < 4; t++)
        pthread_create(&threads[t], NULL, first_allocations, &first_kinds[t]);
      usleep((useconds_t)(trial % 8) * 1000);
      pid_t child = fork();
      if (child == 0) {
        alarm(10); /* a hung child dies of SIGALRM */
        for (int k = 0; k < 4; k++) {
          void *p = memkind_malloc(first_kinds[k], 4096);
          if (p == NULL)
            _exit(1);
          memkind_free(first_kinds[k], p);
        }
        _exit(0);
      }
      int status = 0;
      waitpid(child, &status, 0);
      for (int t = 0; t < 4; t++)
        pthread_join(threads[t], NULL);
      _exit(WIFSIGNALED(status) ? 2 : WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1);
    }
    int status = 0;
    CHECK(waitpid(parent, &status, 0) == parent);
    hung += WIFEXITED(status) && WEXITSTATUS(status) == 2;
    failed += !WIFEXITED(status) || WEXITSTATUS(status) == 1;
  }
  CHECK_MSG(hung == 0, "%d of 40 children hung", hung);
  CHECK_MSG(failed == 0, "%d of 40 trials failed", failed);
}

/* Every alignment from 8 B to 8 KiB over sizes around the small classes:
 * aligned, of the kind asked, usable for the size, and zeroed by calloc
 * after the same block was dirtied. */
static void aligned_and_zeroed_blocks_of_every_small_size(void) {
  int bad = 0;
  for (size_t alignment = 8; alignment <= 8192; alignment *= 2)
    for (size_t size = 1; size <= 5000; size += size < 200 ? 7 : 61) {
      void *p = NULL;
      if (memkind_posix_memalign(MEMKIND_HIGHEST_CAPACITY, &p, alignment, size) != 0 ||
          ((uintptr_t)p & (alignment - 1)) != 0 ||
          memkind_detect_kind(p) != MEMKIND_HIGHEST_CAPACITY ||
          memkind_malloc_usable_size(NULL, p) < size)
        bad++;
      memkind_free(NULL, p);
    }
  for (size_t size = 1; size <= 5000; size += 97) {
    unsigned char *dirty = memkind_malloc(MEMKIND_HIGHEST_CAPACITY, size);
    if (dirty != NULL)
      memset(dirty, 0xa5, size);
    memkind_free(NULL, dirty);
    unsigned char *p = memkind_calloc(MEMKIND_HIGHEST_CAPACITY, 1, size);
    for (size_t i = 0; p != NULL && i < size; i++)
      bad += p[i] != 0;
    bad += p == NULL;
    memkind_free(NULL, p);
  }
  CHECK_MSG(bad == 0, "%d aligned or zeroed blocks were wrong", bad);
}

/* A fixed kind allocates from the caller's memory alone and leaves it to
 * the caller; defragmentation and background threads answer. */
static void fixed_kinds_and_upkeep(void) {
  const size_t len = 8 << 20;
  char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(buf != MAP_FAILED);
  memkind_t fixed = NULL, other = NULL;
  CHECK(memkind_create_fixed(buf, len, &fixed) == MEMKIND_SUCCESS && fixed != NULL);
  CHECK(memkind_create_fixed(buf + (1 << 20), 1 << 20, &other) == MEMKIND_ERROR_INVALID);
  CHECK(memkind_create_fixed(NULL, len, &other) == MEMKIND_ERROR_INVALID);
  size_t total = 0;
  for (;;) {
    char *p = memkind_malloc(fixed, 100000);
    if (p == NULL)
      break;
    CHECK(p >= buf && p + 100000 <= buf + len);
    CHECK(memkind_detect_kind(p) == fixed);
    total += 100000;
  }
  CHECK(total > len / 2 && total <= len);
  CHECK(memkind_get_capacity(fixed) == (ssize_t)len);
  CHECK(memkind_destroy_kind(fixed) == MEMKIND_SUCCESS);
  memset(buf, 1, len); /* still the caller's */
  CHECK(memkind_create_fixed(buf, len, &fixed) == MEMKIND_SUCCESS);
  CHECK(memkind_destroy_kind(fixed) == MEMKIND_SUCCESS);
  munmap(buf, len);
  CHECK(memkind_defrag_reallocate(NULL, NULL) == NULL);
  CHECK(memkind_set_bg_threads(true) == MEMKIND_SUCCESS);
  CHECK(memkind_set_bg_threads(false) == MEMKIND_SUCCESS);
}

/* Size 0 is success with no memory, as memkind documents. */
static void memalign_of_size_zero_is_null_and_success(void) {
  void *p = (void *)1;
  CHECK(hbw_posix_memalign(&p, 64, 0) == 0 && p == NULL);
  p = (void *)1;
  CHECK(memkind_posix_memalign(MEMKIND_HIGHEST_CAPACITY, &p, 64, 0) == 0 && p == NULL);
  p = (void *)1;
  CHECK(memkind_posix_memalign(MEMKIND_DEFAULT, &p, 64, 0) == 0 && p == NULL);
  p = (void *)1;
  CHECK(hbw_posix_memalign_psize(&p, 64, 0, HBW_PAGESIZE_2MB) == 0 && p == NULL);
}

/* GCC's AddressSanitizer before LLVM 18's runtime (GCC 12's libasan among
 * them) does not take its allocator's locks around fork(), so a child of a
 * process whose other threads are inside malloc can hang in ASan's own
 * allocator (its SizeClassAllocator64 region lock; LLVM's fix is
 * llvm-project pull request 75290).  The check of forking during the
 * first allocations is then about ASan, not libsicm: it runs in builds
 * without it. */
#if defined(__SANITIZE_ADDRESS__)
#define ASAN_FORK_UNSAFE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN_FORK_UNSAFE 1
#endif
#endif

/* The fork during first allocations comes first: every trial forks this
 * process, which must not have used any kind yet.  --fork-during-first-
 * allocations runs it alone. */
/* MEMKIND_DEFAULT's memory is an arena's under the default memory policy,
 * where it takes the kinds' fast path, and the heap's under another, which
 * malloc follows: checked again in a child that runs this program under a
 * preferred-node policy.  libsicm's lookup comes from the libsicm that
 * libmemkind loaded. */
enum { MPOL_DEFAULT_MODE = 0, MPOL_PREFERRED_MODE = 1 };
static void default_kind_follows_the_memory_policy(const char *self) {
  void *(*lookup)(const void *) = (void *(*)(const void *))dlsym(RTLD_DEFAULT, "sicm_arena_lookup");
  CHECK(lookup != NULL);
  int mode = -1;
  CHECK(syscall(SYS_get_mempolicy, &mode, NULL, 0, NULL, 0) == 0);
  void *p = memkind_malloc(MEMKIND_DEFAULT, 64);
  CHECK(p != NULL && lookup != NULL && (lookup(p) != NULL) == (mode == MPOL_DEFAULT_MODE));
  CHECK(memkind_detect_kind(p) == MEMKIND_DEFAULT);
  memkind_free(MEMKIND_DEFAULT, p);
  if (mode != MPOL_DEFAULT_MODE)
    return;
  pid_t child = fork();
  if (child == 0) {
    unsigned long node0 = 1;
    if (syscall(SYS_set_mempolicy, MPOL_PREFERRED_MODE, &node0, 8 * sizeof node0) != 0)
      _exit(2);
    execl(self, self, "--default-kind-only", (char *)NULL);
    _exit(3);
  }
  int status = -1;
  CHECK(child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
        WEXITSTATUS(status) == 0);
}

/* memkind 1.14's calls about kinds: the version, kinds by capabilities and
 * by partition, capacities, statistics. */
static void kinds_by_capability_capacity_and_statistics(void) {
  CHECK(memkind_get_version() == 1014000);
  memkind_t k = NULL;
  CHECK(memkind_create_kind(MEMKIND_MEMTYPE_DEFAULT, MEMKIND_POLICY_PREFERRED_LOCAL, 0, &k) == 0 &&
        k == MEMKIND_DEFAULT);
  CHECK(memkind_create_kind(MEMKIND_MEMTYPE_DEFAULT | MEMKIND_MEMTYPE_HIGH_BANDWIDTH,
                            MEMKIND_POLICY_INTERLEAVE_ALL, 0, &k) == 0 &&
        k == MEMKIND_INTERLEAVE);
  int hbm = hbw_check_available() == 0;
  CHECK(memkind_create_kind(MEMKIND_MEMTYPE_HIGH_BANDWIDTH, MEMKIND_POLICY_BIND_LOCAL, 0, &k) ==
        (hbm ? 0 : MEMKIND_ERROR_MEMTYPE_NOT_AVAILABLE));
  CHECK(memkind_create_kind(MEMKIND_MEMTYPE_HIGH_BANDWIDTH, MEMKIND_POLICY_PREFERRED_LOCAL, 0, &k) == 0 &&
        k == (hbm ? MEMKIND_HBW_PREFERRED : MEMKIND_DEFAULT));
  CHECK(memkind_destroy_kind(k) == 0);
  void *after = memkind_malloc(k, 64); /* kinds outlive destroy */
  CHECK(after != NULL);
  memkind_free(k, after);
  CHECK(memkind_create_kind(MEMKIND_MEMTYPE_DEFAULT, MEMKIND_POLICY_BIND_LOCAL, 0, &k) ==
        MEMKIND_ERROR_INVALID); /* not a combination memkind supports */
  CHECK(memkind_create_kind((memkind_memtype_t)0, MEMKIND_POLICY_BIND_LOCAL, 0, &k) == MEMKIND_ERROR_INVALID);
  CHECK(memkind_create_kind((memkind_memtype_t)4, MEMKIND_POLICY_BIND_LOCAL, 0, &k) == MEMKIND_ERROR_INVALID);
  CHECK(memkind_create_kind(MEMKIND_MEMTYPE_DEFAULT, MEMKIND_POLICY_MAX_VALUE, 0, &k) == MEMKIND_ERROR_INVALID);
  CHECK(memkind_create_kind(MEMKIND_MEMTYPE_DEFAULT, MEMKIND_POLICY_PREFERRED_LOCAL, (memkind_bits_t)1, &k) ==
        MEMKIND_ERROR_INVALID);
  CHECK(memkind_create_kind(MEMKIND_MEMTYPE_DEFAULT, MEMKIND_POLICY_PREFERRED_LOCAL, 0, NULL) ==
        MEMKIND_ERROR_INVALID);
  CHECK(memkind_destroy_kind((memkind_t)&k) == MEMKIND_ERROR_INVALID);
  CHECK(memkind_get_kind_by_partition(MEMKIND_PARTITION_REGULAR, &k) == 0 && k == MEMKIND_REGULAR);
  CHECK(memkind_get_kind_by_partition(MEMKIND_PARTITION_HBW_ALL_HUGETLB, &k) == 0 &&
        k == MEMKIND_HBW_ALL_HUGETLB);
  CHECK(memkind_get_kind_by_partition(MEMKIND_NUM_BASE_KIND, &k) == MEMKIND_ERROR_UNAVAILABLE);
  CHECK(memkind_get_kind_by_partition(0, NULL) == MEMKIND_ERROR_UNAVAILABLE);
  if (memkind_check_available(MEMKIND_HBW) != 0) /* no HBM: the HBM error comes first */
    CHECK(memkind_check_available(MEMKIND_HBW_ALL_HUGETLB) == memkind_check_available(MEMKIND_HBW));
  else if (huge_pages_reserved(2048) == 0)
    CHECK(memkind_check_available(MEMKIND_HBW_ALL_HUGETLB) == MEMKIND_ERROR_HUGETLB);
  long long nodes = 0;
  for (int node = 0; node <= numa_max_node(); node++)
    nodes += numa_node_size64(node, NULL) > 0 ? numa_node_size64(node, NULL) : 0;
  CHECK(memkind_get_capacity(MEMKIND_DEFAULT) == (ssize_t)nodes);
  CHECK(memkind_get_capacity(MEMKIND_HIGHEST_CAPACITY) > 0);
  CHECK(memkind_get_capacity(MEMKIND_HBW_PREFERRED) == -1 && memkind_get_capacity(MEMKIND_HUGETLB) == -1);
  CHECK(memkind_get_capacity((memkind_t)&k) == -1);
  /* Statistics: what a kind's arenas hold, as of the last update. */
  void *big = memkind_malloc(MEMKIND_INTERLEAVE, 10 << 20);
  CHECK(big != NULL);
  size_t allocated = 0, resident = 0, total = 0;
  CHECK(memkind_update_cached_stats() == 0);
  CHECK(memkind_get_stat(MEMKIND_INTERLEAVE, MEMKIND_STAT_TYPE_ALLOCATED, &allocated) == 0 &&
        allocated >= 10 << 20);
  CHECK(memkind_get_stat(MEMKIND_INTERLEAVE, MEMKIND_STAT_TYPE_RESIDENT, &resident) == 0);
  CHECK(memkind_get_stat(NULL, MEMKIND_STAT_TYPE_ALLOCATED, &total) == 0 && total >= allocated);
  CHECK(memkind_get_stat(MEMKIND_INTERLEAVE, MEMKIND_STAT_TYPE_MAX_VALUE, &total) == MEMKIND_ERROR_INVALID);
  CHECK(memkind_get_stat(MEMKIND_INTERLEAVE, MEMKIND_STAT_TYPE_ACTIVE, NULL) == MEMKIND_ERROR_INVALID);
  memkind_free(MEMKIND_INTERLEAVE, big);
  char text[8192] = "";
  CHECK(memkind_stats_print(append_text, text, MEMKIND_STAT_PRINT_JSON_FORMAT) == 0);
  CHECK(strstr(text, "\"name\": \"memkind_interleave\"") != NULL && strstr(text, "\"total\"") != NULL);
  text[0] = '\0';
  CHECK(memkind_stats_print(append_text, text, MEMKIND_STAT_PRINT_OMIT_GENERAL) == 0);
  CHECK(strstr(text, "memkind_interleave") != NULL && strstr(text, "total") == NULL);
  CHECK(memkind_stats_print(append_text, text, (memkind_stat_print_opt)(1u << 9)) == MEMKIND_ERROR_INVALID);
}

/* File-backed (PMEM) kinds: a file of no name in a directory, bounded by
 * max_size, detected, counted, and gone with the kind. */
static void file_backed_kinds_live_in_their_directory(void) {
  char dir[] = "/tmp/sicm-pmem-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  memkind_t pmem = NULL;
  CHECK(memkind_create_pmem(dir, 32 << 20, &pmem) == 0 && pmem != NULL);
  CHECK(memkind_check_available(pmem) == 0 && memkind_get_capacity(pmem) == 32 << 20);
  char *p = memkind_malloc(pmem, 1 << 20);
  CHECK(p != NULL && memkind_detect_kind(p) == pmem);
  memset(p, 0x5a, 1 << 20);
  char *z = memkind_calloc(pmem, 1000, 10);
  CHECK(z != NULL && z[0] == 0 && z[9999] == 0);
  p = memkind_realloc(pmem, p, 2 << 20);
  CHECK(p != NULL && p[(1 << 20) - 1] == 0x5a && memkind_detect_kind(p) == pmem);
  void *aligned = NULL;
  CHECK(memkind_posix_memalign(pmem, &aligned, 4096, 100) == 0 && ((uintptr_t)aligned & 4095) == 0);
  errno = 0;
  CHECK(memkind_malloc(pmem, 64 << 20) == NULL); /* beyond max_size */
  size_t allocated = 0;
  CHECK(memkind_update_cached_stats() == 0 &&
        memkind_get_stat(pmem, MEMKIND_STAT_TYPE_ALLOCATED, &allocated) == 0 && allocated >= 2 << 20);
  memkind_free(pmem, aligned);
  memkind_free(NULL, z); /* kind detected */
  memkind_free(pmem, p);
  DIR *d = opendir(dir);
  int names = 0;
  for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;)
    names += e->d_name[0] != '.';
  if (d != NULL)
    closedir(d);
  CHECK(names == 0); /* the file has no name */
  CHECK(memkind_destroy_kind(pmem) == 0);
  errno = 0;
  CHECK(memkind_malloc(pmem, 64) == NULL && errno == EINVAL); /* destroyed */
  /* The same from a configuration, and the errors. */
  struct memkind_config *cfg = memkind_config_new();
  CHECK(cfg != NULL);
  memkind_config_set_path(cfg, dir);
  memkind_config_set_size(cfg, 16 << 20);
  memkind_config_set_memory_usage_policy(cfg, MEMKIND_MEM_USAGE_POLICY_CONSERVATIVE);
  CHECK(memkind_create_pmem_with_config(cfg, &pmem) == 0);
  CHECK(memkind_malloc(pmem, 1000) != NULL && memkind_destroy_kind(pmem) == 0);
  memkind_config_set_memory_usage_policy(cfg, MEMKIND_MEM_USAGE_POLICY_MAX_VALUE);
  CHECK(memkind_create_pmem_with_config(cfg, &pmem) == MEMKIND_ERROR_INVALID);
  memkind_config_delete(cfg);
  CHECK(memkind_create_pmem(dir, 1 << 20, &pmem) == MEMKIND_ERROR_INVALID); /* below the minimum */
  CHECK(memkind_create_pmem(NULL, 0, &pmem) == MEMKIND_ERROR_INVALID);
  CHECK(memkind_create_pmem("/nonexistent-sicm-dir", 0, &pmem) == MEMKIND_ERROR_INVALID);
  CHECK(memkind_check_dax_path(dir) == MEMKIND_ERROR_MMAP || memkind_check_dax_path(dir) == 0);
  CHECK(memkind_check_dax_path("/nonexistent-sicm-dir") == MEMKIND_ERROR_RUNTIME);
  CHECK(rmdir(dir) == 0);
}

/* memkind leaves errno alone when an allocation succeeds, the first of a
 * process (which starts the library and makes the kind's arena) included:
 * checked in a fresh process. */
static void first_allocations_leave_errno_alone(void) {
  memkind_t kinds[] = {MEMKIND_DEFAULT, MEMKIND_HBW_PREFERRED, MEMKIND_HIGHEST_CAPACITY,
                       MEMKIND_INTERLEAVE, MEMKIND_REGULAR};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    errno = 0;
    void *p = memkind_malloc(kinds[k], 100);
    CHECK(p != NULL && errno == 0);
    memkind_free(kinds[k], p);
    errno = 0;
    p = memkind_calloc(kinds[k], 1, 3 << 20);
    CHECK(p != NULL && errno == 0);
    memkind_free(NULL, p);
  }
  errno = 0;
  void *h = hbw_malloc(100);
  CHECK(h != NULL && errno == 0);
  hbw_free(h);
}

static void in_a_fresh_process(const char *self, const char *mode) {
  pid_t child = fork();
  if (child == 0) {
    execl(self, self, mode, (char *)NULL);
    _exit(3);
  }
  int status = -1;
  CHECK(child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
        WEXITSTATUS(status) == 0);
}

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--first-allocations") == 0) {
    first_allocations_leave_errno_alone();
    return failures ? 1 : 0;
  }
  if (argc == 2 && strcmp(argv[1], "--default-kind-only") == 0) {
    default_kind_follows_the_memory_policy(argv[0]);
    return failures ? 1 : 0;
  }
  int fork_only = argc == 2 && strcmp(argv[1], "--fork-during-first-allocations") == 0;
#ifdef ASAN_FORK_UNSAFE
  printf("test_memkind: fork during first allocations skipped: this ASan runtime does not "
         "lock its allocator around fork()\n");
#else
  fork_during_first_allocations();
#endif
  if (fork_only) {
    printf("test_memkind --fork-during-first-allocations: %s\n", failures ? "FAILED" : "passed");
    return failures ? 1 : 0;
  }
  in_a_fresh_process(argv[0], "--first-allocations");
  every_working_kind_allocates_frees_and_is_detected();
  default_kind_follows_the_memory_policy(argv[0]);
  realloc_moves_memory_between_kinds();
  bad_input_is_refused_without_harm();
  detected_free_leaves_foreign_pointers_alone();
  hbw_policy_is_set_once_before_allocating();
  kinds_by_capability_capacity_and_statistics();
  file_backed_kinds_live_in_their_directory();
  fixed_kinds_and_upkeep();
  memalign_of_size_zero_is_null_and_success();
  aligned_and_zeroed_blocks_of_every_small_size();
  forked_children_use_kinds_while_a_thread_works();
  printf("test_memkind: %s\n", failures ? "FAILED" : "all checks passed");
  return failures ? 1 : 0;
}
