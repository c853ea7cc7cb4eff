/* SPDX-License-Identifier: BSD-3-Clause */
/* arena_je_conf.c: the options of libsicm's private jemalloc, linked into
 * libsicm-jemalloc.so.0 with it (and into an installed libsicm.a with its
 * objects), where they override jemalloc's own empty default.  Its tcache
 * garbage collection runs on every 64 KiB a thread allocates, for the
 * thread's implicit tcache alone, which libsicm never fills (every call
 * names an explicit tcache or none): work on every large pair for
 * nothing. */
#define JEMALLOC_NO_DEMANGLE
#include <jemalloc/jemalloc.h>

const char *je_malloc_conf = "tcache_gc_incr_bytes:1099511627776";
