/* SPDX-License-Identifier: BSD-3-Clause */
/* memkind_heap.c: whether the process heap (glibc's malloc) could own a
 * pointer that no arena of libsicm owns — asked before memkind_free(NULL,
 * ptr) hands it to free(), so that a pointer no kind allocated (the stack,
 * static data, the inside of a block) is reported and left alone instead
 * of making glibc abort.  It checks what glibc's free checks first, and
 * reads nothing that may not be mapped:
 *  - the calling thread's stack is never the heap;
 *  - the chunk header before ptr must be glibc's: aligned, a size that is
 *    a multiple of 16 and at least 32, not wrapping;
 *  - an mmapped chunk must start and end on page boundaries, mapped;
 *  - a chunk of the main arena must lie in the program break's range
 *    (start_brk from /proc/self/stat, to sbrk(0));
 *  - a chunk of another arena must lie in that arena's heap (64 MiB
 *    aligned, mapped, its size covering the chunk).
 * Where malloc is not glibc's (a preloaded allocator), nothing is known of
 * its headers: every pointer is passed on to free(), as before. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memkind_internal.h"

extern void *__libc_malloc(size_t size);

enum {
  CHUNK_MMAPPED = 2,
  CHUNK_NON_MAIN_ARENA = 4,
  CHUNK_FLAGS = 7,
  CHUNK_MIN = 32,
  HEAP_MAX = 64 << 20, /* glibc's HEAP_MAX_SIZE on 64-bit */
};

static pthread_once_t heap_once = PTHREAD_ONCE_INIT;
static int malloc_is_glibc;
static uintptr_t start_brk, page;

/* Field 47 of /proc/self/stat: where the program break started. */
static uintptr_t read_start_brk(void) {
  FILE *f = fopen("/proc/self/stat", "re");
  if (f == NULL)
    return 0;
  char line[2048];
  size_t n = fread(line, 1, sizeof line - 1, f);
  fclose(f);
  line[n] = '\0';
  char *p = strrchr(line, ')'); /* the command may hold spaces */
  unsigned long long value = 0;
  for (int field = 2; p != NULL && field < 47; field++)
    p = strchr(p + 1, ' ');
  if (p != NULL)
    sscanf(p + 1, "%llu", &value);
  return (uintptr_t)value;
}

static void heap_init(void) {
  malloc_is_glibc = dlsym(RTLD_DEFAULT, "malloc") == (void *)__libc_malloc;
  page = (uintptr_t)sysconf(_SC_PAGESIZE);
  start_brk = read_start_brk();
}

/* Whether the page holding addr is mapped (mincore: ENOMEM when not). */
static int mapped(uintptr_t addr) {
  unsigned char vec;
  return mincore((void *)(addr & ~(page - 1)), 1, &vec) == 0;
}

static int on_my_stack(uintptr_t p) {
  static __thread uintptr_t lo, hi;
  if (hi == 0) {
    pthread_attr_t attr;
    void *base;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
      return 0;
    if (pthread_attr_getstack(&attr, &base, &size) == 0) {
      lo = (uintptr_t)base;
      hi = lo + size;
    }
    pthread_attr_destroy(&attr);
  }
  return p >= lo && p < hi;
}

static int mmapped_chunk_ok(uintptr_t chunk, size_t size) {
  size_t prev = *(const size_t *)chunk; /* prev_size: the offset of the mapping */
  uintptr_t block = chunk - prev;
  size_t total = prev + size;
  return prev <= chunk && ((block | total) & (page - 1)) == 0 && mapped(block) &&
         mapped(block + total - 1);
}

static int arena_chunk_ok(uintptr_t chunk, size_t size, size_t header) {
  if ((header & CHUNK_NON_MAIN_ARENA) == 0) {
    uintptr_t end = (uintptr_t)sbrk(0);
    return start_brk != 0 && chunk >= start_brk && chunk + size <= end;
  }
  uintptr_t heap = chunk & ~(uintptr_t)(HEAP_MAX - 1);
  if (!mapped(heap))
    return 0;
  /* heap_info: the arena, the previous heap, then this heap's size. */
  const size_t *info = (const size_t *)heap;
  return info[0] != 0 && info[2] <= HEAP_MAX && chunk + size <= heap + info[2];
}

int mk_heap_may_own(const void *ptr) {
  pthread_once(&heap_once, heap_init);
  if (!malloc_is_glibc)
    return 1;
  uintptr_t p = (uintptr_t)ptr;
  if ((p & 15) != 0 || p < 4096 || on_my_stack(p))
    return 0;
  uintptr_t chunk = p - 2 * sizeof(size_t);
  if ((p & (page - 1)) < 2 * sizeof(size_t) && !mapped(chunk))
    return 0; /* the header would lie in the page before, which is not mapped */
  size_t header = *(const size_t *)(p - sizeof(size_t));
  size_t size = header & ~(size_t)CHUNK_FLAGS;
  if (size < CHUNK_MIN || (size & 15) != 0 || chunk > UINTPTR_MAX - size)
    return 0;
  return (header & CHUNK_MMAPPED) ? mmapped_chunk_ok(chunk, size)
                                  : arena_chunk_ok(chunk, size, header);
}
