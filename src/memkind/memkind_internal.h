/* SPDX-License-Identifier: BSD-3-Clause */
/* memkind_internal.h: what hbwmalloc.c needs from memkind.c. */
#ifndef SICM_MEMKIND_INTERNAL_H
#define SICM_MEMKIND_INTERNAL_H

#include "hbwmalloc.h"
#include "sicm.h"

/* The HBW kind of an hbw_policy_t (huge: in transparent huge pages). */
memkind_t mk_hbw_kind(int policy, int huge);
/* memkind_malloc for a kind known valid and not MEMKIND_DEFAULT. */
void *mk_kind_malloc(memkind_t kind, size_t size);
/* Whether any HBM device exists (MEMKIND_HBW_NODES honoured). */
int mk_hbw_available(void);
int mk_is_hbw_node(int node);
/* Whether ptr lies in an arena of an HBW kind. */
int mk_is_hbw_pointer(const void *ptr);
/* hbw_free: frees ptr if it lies in an arena of an HBW kind, else
 * reports it as foreign. */
void mk_hbw_free(void *ptr);
/* Reports, once per process, a pointer given to the wrong free; errno EINVAL. */
void mk_report_foreign(const char *call, const void *ptr);

#endif
