/* SPDX-License-Identifier: BSD-3-Clause */
/* hbwmalloc.h of libsicm's memkind-compatible library (see memkind.h):
 * memkind's high-bandwidth-memory interface, binary-compatible with it. */
#ifndef SICM_HBWMALLOC_H
#define SICM_HBWMALLOC_H

#include <stddef.h>

#include "memkind.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  HBW_POLICY_BIND = 1,        /* the nearest HBM node only: NULL when full */
  HBW_POLICY_PREFERRED = 2,   /* the nearest HBM node, else the local node (default) */
  HBW_POLICY_INTERLEAVE = 3,  /* interleaved over every HBM node */
  HBW_POLICY_BIND_ALL = 4     /* every HBM node, bound */
} hbw_policy_t;

typedef enum {
  HBW_PAGESIZE_4KB = 1,
  HBW_PAGESIZE_2MB = 2,       /* hugetlb pages of 2 MiB, from the nodes' pools */
  HBW_PAGESIZE_1GB_STRICT = 3, /* as 1GB; size a multiple of 1 GiB */
  HBW_PAGESIZE_1GB = 4,       /* the GBTLB kinds: hugetlb pages of 2 MiB, as memkind */
  HBW_PAGESIZE_MAX_VALUE
} hbw_pagesize_t;

enum { HBW_TOUCH_PAGES = 1 << 0 };

/* The policy in force (HBW_POLICY_PREFERRED unless set). */
SICM_MEMKIND_API hbw_policy_t hbw_get_policy(void);
/* Sets the policy once, before the first allocation: 0, EPERM (already set
 * or allocations made), or EINVAL (unknown policy). */
SICM_MEMKIND_API int hbw_set_policy(hbw_policy_t mode);
/* 0 when high-bandwidth memory exists, else ENODEV. */
SICM_MEMKIND_API int hbw_check_available(void);
/* 0 when every page of [addr, addr + size) is on high-bandwidth memory
 * (HBW_TOUCH_PAGES: touch each page first, keeping its contents), -1 when
 * one is not (a page never touched is not), EINVAL for a NULL addr, a size
 * of 0 or unknown flags, EFAULT when the kernel cannot say (move_pages(2)
 * failed). */
SICM_MEMKIND_API int hbw_verify_memory_region(void *addr, size_t size, int flags);
SICM_MEMKIND_API void *hbw_malloc(size_t size);
SICM_MEMKIND_API void *hbw_calloc(size_t num, size_t size);
/* 0, ENOMEM, or EINVAL (alignment not a power of two multiple of
 * sizeof(void *)). */
SICM_MEMKIND_API int hbw_posix_memalign(void **memptr, size_t alignment, size_t size);
/* As hbw_posix_memalign, in pages of `pagesize`; EINVAL for 1GB_STRICT and
 * a size not a multiple of 1 GiB, and for huge pages under
 * HBW_POLICY_INTERLEAVE (as memkind). */
SICM_MEMKIND_API int hbw_posix_memalign_psize(void **memptr, size_t alignment, size_t size,
                                              hbw_pagesize_t pagesize);
SICM_MEMKIND_API void *hbw_realloc(void *ptr, size_t size);
/* A pointer hbw_* did not return is left alone and reported once on stderr. */
SICM_MEMKIND_API void hbw_free(void *ptr);
SICM_MEMKIND_API size_t hbw_malloc_usable_size(void *ptr);

#ifdef __cplusplus
}
#endif

#endif /* SICM_HBWMALLOC_H */
