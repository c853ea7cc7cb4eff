/* SPDX-License-Identifier: BSD-3-Clause */
/* memkind_internal.h: the kinds, and what the library's files share. */
#ifndef SICM_MEMKIND_INTERNAL_H
#define SICM_MEMKIND_INTERNAL_H

#include "hbwmalloc.h"
#include "memkind.h"
#include "sicm.h"

typedef enum kind_memory {
  MEM_REGULAR,            /* nodes with CPUs: memkind's regular nodes */
  MEM_LOCAL,              /* the calling CPU's node (memkind.c) */
  MEM_HBW,                /* devices classified HBM (or MEMKIND_HBW_NODES) */
  MEM_CAPACITY,           /* devices classified capacity */
  MEM_ANY,                /* every base-page device */
  MEM_HIGHEST_CAPACITY,
  MEM_LOWEST_LATENCY,
  MEM_HIGHEST_BANDWIDTH,
  MEM_FILE,               /* a file in a directory (memkind_create_pmem) */
  MEM_FIXED               /* memory the caller owns (memkind_create_fixed) */
} kind_memory;

typedef enum kind_scope { SCOPE_NEAREST, SCOPE_ALL, SCOPE_LOCAL } kind_scope;
/* PLACE_DEFAULT: no policy of the kind's own, as memkind's MEMKIND_DEFAULT,
 * MEMKIND_HUGETLB and MEMKIND_GBTLB set none (SICM_ARENA_FIRST_TOUCH). */
typedef enum kind_place { PLACE_BIND, PLACE_PREFERRED, PLACE_INTERLEAVE, PLACE_DEFAULT } kind_place;

struct memkind {
  const char *name;
  kind_memory memory;
  kind_scope scope;
  kind_place place;
  size_t huge_page;             /* hugetlb kinds: their page size; 0: base pages */
  sicm_arena *arenas;           /* per initiator node; set once, atomically */
  sicm_arena single_arena;      /* MEM_FILE, MEM_FIXED: the kind's one arena */
  size_t single_size;           /* and its bytes */
};

#define MK_NKINDS 26            /* the static kinds of memkind_kinds.c */
#define MK_FILE_KINDS 64        /* file-backed kinds that may exist at once */
#define MK_KINDS_MAX (MK_NKINDS + MK_FILE_KINDS)
/* CPUs whose arenas the fast path keeps: glibc's CPU_SETSIZE.  A thread on
 * a CPU past it finds its node's arena by the slow path on every call. */
#define MK_FAST_CPUS 1024

/* What an allocation's fast path reads of this library, in one object,
 * so that a pair touches one or two of its pages and none of the heap's:
 * each page a pair touches is a TLB entry that may collide with another's
 * (QEMU's emulated TLB is direct-mapped, so there the process's address
 * layout decides which collide). */
struct mk_fast {
  long rseq_cpu_offset;         /* the rseq area's CPU from the thread pointer; 0: none */
  memkind_t hbw_kind;           /* hbwmalloc.c: the policy's kind, once fixed */
  /* Per CPU and kind, the arena of that CPU's node once a thread there
   * found it.  Stored only after start-up, so a thread that sees an arena
   * sees the rest. */
  sicm_arena arena[MK_FAST_CPUS][MK_KINDS_MAX];
};
extern struct mk_fast mk_fast;

/* On the API's fast paths: GCC puts them in .text.hot, which the linker
 * gathers, so that a pair's code lies on as few pages as its data. */
#define MK_HOT __attribute__((hot))

/* ---- memkind_init.c ---- */
/* What start-up learned: written once, before mk_ready() first returns 1. */
struct mk_machine {
  int node_slots;               /* highest node id + 1 */
  /* The node of each CPU, so that a kind finds the calling thread's node
   * from its CPU alone (memkind.c reads the CPU from the thread's rseq
   * area).  CPUs past the table, or of no node of libsicm's, take
   * sicm_node_self(). */
  int ncpus;
  short *cpu_node;
  /* MEMKIND_DEFAULT's memory comes from an arena per node with no policy
   * of its own — a page goes where the default policy puts it, the node of
   * the thread that touches it first, as malloc's and memkind's do — so
   * that it takes the same fast path as every other kind.  Where the
   * process runs under another policy (numactl --interleave or --membind),
   * malloc follows that policy and MEMKIND_DEFAULT is malloc's: then this
   * is 0. */
  int local_in_arenas;
  struct bitmask *hbw_override; /* MEMKIND_HBW_NODES parsed, or NULL */
};
extern struct mk_machine mk_machine;
/* Starts libsicm once; 0 when it cannot (then only the heap's kinds work). */
int mk_ready(void);

/* ---- memkind_devices.c ---- */
/* The devices kind k uses for CPUs of `node`, at most
 * SICM_ARENA_DEVICES_MAX; their count. */
unsigned mk_kind_devices(const struct memkind *k, int node, sicm_device **out);
int mk_is_hbw_device(const sicm_device *d);

/* ---- memkind_kinds.c ---- */
/* Every kind slot: the static kinds, then the file-backed ones (a slot is
 * free while its name is NULL).  Hidden, so that &mk_kinds[i] is a
 * constant of the fast path, not a load. */
extern struct memkind mk_kinds[MK_KINDS_MAX] __attribute__((visibility("hidden")));
#define MK_KIND_REGULAR 1
/* The i-th kind slot (NULL past the last), and whether a kind exists. */
memkind_t mk_kind(unsigned i);
int mk_kind_valid(memkind_t kind);
/* Whether the kind's memory is the process heap's now. */
int mk_kind_in_heap(memkind_t kind);
/* Records that `arena` is the kind's (memkind_detect_kind finds it). */
void mk_kind_publish(memkind_t kind, sicm_arena arena);
/* Whether the kind is one arena of its own, whatever the node (a
 * file-backed or a fixed kind, memkind_pmem.c). */
static inline int mk_kind_single(const struct memkind *k) {
  return k->memory == MEM_FILE || k->memory == MEM_FIXED;
}
/* memkind_pmem.c: destroys a kind of one arena and frees its slot. */
int mk_single_kind_destroy(memkind_t kind);
/* The HBW kind of an hbw_policy_t and an hbw_pagesize_t, as memkind
 * chooses it (hbwmalloc.c). */
memkind_t mk_hbw_kind(int policy, int pagesize);
/* memkind_malloc for a kind known valid. */
void *mk_kind_malloc(memkind_t kind, size_t size);
/* Whether any HBM device exists (MEMKIND_HBW_NODES honoured). */
int mk_hbw_available(void);
int mk_is_hbw_node(int node);
/* Whether ptr lies in an arena of an HBW kind. */
int mk_is_hbw_pointer(const void *ptr);
/* hbw_free: frees ptr if it lies in an arena of an HBW kind, else
 * reports it as foreign. */
void mk_hbw_free(void *ptr);
/* memkind_heap.c: whether glibc's malloc could own ptr, a pointer no
 * arena owns (1 also where malloc is not glibc's: nothing is known). */
int mk_heap_may_own(const void *ptr);
/* Reports, once per process, a pointer given to the wrong free; errno EINVAL. */
void mk_report_foreign(const char *call, const void *ptr);

#endif
