/* SPDX-License-Identifier: BSD-3-Clause */
/* hbwmalloc.c: memkind's hbw_* interface over the HBW kinds of memkind.c —
 * a process-wide policy, set at most once before the first allocation, and
 * the check of where a region's pages are. */
#define _GNU_SOURCE
#include <errno.h>
#include <numaif.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "memkind_internal.h"

static int policy = HBW_POLICY_PREFERRED;
static int policy_fixed; /* set, or an allocation was made: no more changes */

/* The policy's kind for a page size (hbw_pagesize_t; 0: base pages). */
static memkind_t policy_fix(int pagesize) {
  /* Read first: a store on every call would bounce the line between CPUs. */
  if (!__atomic_load_n(&policy_fixed, __ATOMIC_RELAXED))
    __atomic_store_n(&policy_fixed, 1, __ATOMIC_RELAXED);
  memkind_t k = mk_hbw_kind(__atomic_load_n(&policy, __ATOMIC_RELAXED), pagesize);
  if (pagesize == 0)
    __atomic_store_n(&mk_fast.hbw_kind, k, __ATOMIC_RELAXED);
  return k;
}

static inline memkind_t current_kind(int pagesize) {
  memkind_t k = pagesize ? NULL : __atomic_load_n(&mk_fast.hbw_kind, __ATOMIC_RELAXED);
  return __builtin_expect(k != NULL, 1) ? k : policy_fix(pagesize);
}

hbw_policy_t hbw_get_policy(void) { return (hbw_policy_t)__atomic_load_n(&policy, __ATOMIC_RELAXED); }

int hbw_set_policy(hbw_policy_t mode) {
  if (mk_hbw_kind((int)mode, 0) == NULL)
    return EINVAL;
  if (__atomic_exchange_n(&policy_fixed, 1, __ATOMIC_RELAXED))
    return EPERM;
  __atomic_store_n(&policy, (int)mode, __ATOMIC_RELAXED);
  return 0;
}

int hbw_check_available(void) { return mk_hbw_available() ? 0 : ENODEV; }

MK_HOT void *hbw_malloc(size_t size) { return mk_kind_malloc(current_kind(0), size); }

MK_HOT void *hbw_calloc(size_t num, size_t size) {
  return memkind_calloc(current_kind(0), num, size);
}

MK_HOT int hbw_posix_memalign(void **memptr, size_t alignment, size_t size) {
  return memkind_posix_memalign(current_kind(0), memptr, alignment, size);
}

int hbw_posix_memalign_psize(void **memptr, size_t alignment, size_t size,
                             hbw_pagesize_t pagesize) {
  if (pagesize < HBW_PAGESIZE_4KB || pagesize > HBW_PAGESIZE_1GB)
    return EINVAL;
  if (pagesize == HBW_PAGESIZE_1GB_STRICT && size % ((size_t)1 << 30) != 0)
    return EINVAL;
  if (pagesize != HBW_PAGESIZE_4KB && hbw_get_policy() == HBW_POLICY_INTERLEAVE)
    return EINVAL; /* memkind interleaves base pages only */
  return memkind_posix_memalign(current_kind(pagesize == HBW_PAGESIZE_4KB ? 0 : (int)pagesize),
                                memptr, alignment, size);
}

void *hbw_realloc(void *ptr, size_t size) {
  if (ptr != NULL && !mk_is_hbw_pointer(ptr)) {
    mk_report_foreign("hbw_realloc", ptr);
    return NULL;
  }
  return memkind_realloc(current_kind(0), ptr, size);
}

MK_HOT void hbw_free(void *ptr) { mk_hbw_free(ptr); }

size_t hbw_malloc_usable_size(void *ptr) {
  return ptr != NULL && mk_is_hbw_pointer(ptr) ? sicm_usable_size(ptr) : 0;
}

int hbw_verify_memory_region(void *addr, size_t size, int flags) {
  if (addr == NULL || size == 0 || (flags & ~HBW_TOUCH_PAGES))
    return EINVAL;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  uintptr_t first = (uintptr_t)addr & ~(page - 1), end = (uintptr_t)addr + size;
  enum { BATCH = 1024 };
  void *pages[BATCH];
  int status[BATCH];
  for (uintptr_t p = first; p < end;) {
    unsigned n = 0;
    for (; n < BATCH && p < end; n++, p += page) {
      pages[n] = (void *)p;
      if (flags & HBW_TOUCH_PAGES) { /* read and write back: the page becomes resident */
        volatile char *c = (volatile char *)(p < (uintptr_t)addr ? (uintptr_t)addr : p);
        *c = *c;
      }
    }
    if (move_pages(0, n, pages, NULL, status, 0) != 0)
      return EFAULT;
    for (unsigned i = 0; i < n; i++) /* a page not there (never touched) is not HBW either */
      if (status[i] < 0 || !mk_is_hbw_node(status[i]))
        return -1;
  }
  return 0;
}
