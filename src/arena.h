/* SPDX-License-Identifier: BSD-3-Clause */
/* arena.h: the arenas layer — the arena record every kind of arena shares,
 * the operations table through which a kind serves it, handles, and the
 * address windows that hold an arena's pages.
 *
 * A kind of arena (the private jemalloc arena of arena_je.c, the shared
 * heap of shared_*.c) is one sc_arena_ops table plus its own data in the
 * record's kind_data.  Every entry point resolves the record and calls
 * through the table; no file outside a kind's own asks which kind an
 * arena is. */
#ifndef SC_ARENA_H
#define SC_ARENA_H

#include <numaif.h>
#include <pthread.h>

#include "devices.h"

#define SC_ARENA_SLOTS 4096         /* jemalloc allows ~4086 user arenas */
#define SC_HANDLE_SLOT_BITS 12      /* log2(SC_ARENA_SLOTS) */
#define SC_CHUNK_SHIFT 34           /* address windows come in 16 GiB chunks */
#define SC_CHUNK_SIZE ((size_t)1 << SC_CHUNK_SHIFT)
#define SC_WINDOWS_MAX 64
#define SC_ARENA_KIND_DATA 256      /* bytes of kind_data */

/* A range of address space holding an arena's pages, used from the bottom. */
typedef struct sc_window {
  char *base;
  size_t size;
  size_t used;                  /* bytes handed out, from base */
  /* Bytes from base that may hold resident pages: the end of the highest
   * range jemalloc committed (it touches nothing else; the rest of what
   * it took is retained address space), or used in a shared arena.
   * Residency scans and moves stop there. */
  size_t reach;
  size_t room;                  /* bytes that can be handed out: all but a guard */
  /* A hugetlb window's bytes committed in each huge page (arena_window.c):
   * a page is populated while its count is not 0; NULL in the others. */
  uint32_t *populated;
  int borrowed;                 /* the caller's memory (a fixed arena): never unmapped */
} sc_window;

#ifndef MPOL_WEIGHTED_INTERLEAVE
#define MPOL_WEIGHTED_INTERLEAVE 6 /* Linux 6.9; newer than libnuma's numaif.h */
#endif

/* Where an arena's pages go: the devices and the mbind policy over them. */
typedef struct sc_binding {
  int policy;                   /* MPOL_BIND, _PREFERRED(_MANY), _(WEIGHTED_)INTERLEAVE, _DEFAULT */
  sc_nodemask nodes;            /* nodes of the devices (none for MPOL_DEFAULT) */
  unsigned ndevices;
  sicm_device *devices[SICM_ARENA_DEVICES_MAX];
  size_t huge_page;             /* the devices' hugetlb page size; 0: base pages */
  /* The most an arena so bound can ever hold: its devices' capacity (all
   * memory when it may fall back) plus swap. */
  size_t capacity;
} sc_binding;

typedef struct sc_arena sc_arena;

/* What the placer (autoplace*.c) measured of an arena: sicm_arena_rates'
 * fields, each written by the placer's thread alone and read atomically
 * (the rate is a double's bits), so a report never waits for it. */
typedef struct sc_arena_usage {
  uint64_t intervals, referenced_last, resident, rate_bits;
  uint64_t fast_ns, slow_ns, moves_in, moves_out;
  int on_fast;
} sc_arena_usage;

/* What the arenas of one allocator may hand out together (OpenMP's
 * pool_size): the usable bytes of their live blocks, counted by every
 * entry point that allocates, resizes or frees, whichever the caller used. */
typedef struct sc_pool {
  size_t size;                  /* 0: unlimited */
  size_t used;                  /* atomic */
} sc_pool;

/* What a kind of arena does.  Functions that can fail follow base.h's
 * convention; `generation` is the handle generation the caller resolved. */
typedef struct sc_arena_ops {
  /* Makes a claimed record a live arena of this kind (arg: the kind's
   * creation arguments); called under the arenas lock. */
  int (*open)(sc_arena *a, void *arg);
  /* Ends the arena in this process before its windows are released. */
  int (*close)(sc_arena *a);
  /* align: 0 or a power of two. */
  void *(*alloc)(sc_arena *a, uint64_t generation, size_t size, size_t align, int zero);
  void (*free)(sc_arena *a, uint64_t generation, void *ptr);
  void *(*realloc)(sc_arena *a, uint64_t generation, void *ptr, size_t size);
  size_t (*usable_size)(sc_arena *a, const void *ptr);
  /* The usable size alloc(size, align) would give; 0 if none can. */
  size_t (*usable_for)(sc_arena *a, size_t size, size_t align);
  int (*stats)(sc_arena *a, sicm_arena_stats *out);
  /* Placement shared with other processes, or NULL for a private arena:
   * pages_map makes the resident pages that other processes touched
   * visible to move_pages and mbind here; binding_load refreshes
   * a->binding; move_begin and move_end bracket a migration (end records
   * the binding when `moved`); move_flag is the mbind/move_pages flag that
   * moves pages other processes map too. */
  int (*pages_map)(sc_arena *a);
  int (*binding_load)(sc_arena *a);
  int (*move_begin)(sc_arena *a);
  int (*move_end)(sc_arena *a, int moved);
  int move_flag;
  /* Automatic placement of an arena other processes share (shared.h,
   * shared_autoplace.c), or NULL: the sum of every process's rate, who
   * places it, and giving both up. */
  uint64_t (*rate_share)(sc_arena *a, uint64_t per_second, unsigned interval_ms);
  int (*placer_claim)(sc_arena *a);
  void (*placer_release)(sc_arena *a);
  /* The upkeep thread's periodic work on the arena, or NULL. */
  void (*upkeep)(sc_arena *a);
  /* For the checking mode, in a kind whose blocks other processes
   * allocate and free too (so this process's record cannot know them):
   * where ptr lies, SC_BLOCK_START, SC_BLOCK_INSIDE or SC_BLOCK_NOT_HELD.
   * NULL in kinds whose blocks this process alone handles. */
  int (*block_where)(sc_arena *a, const void *ptr);
} sc_arena_ops;

/* What ops->block_where says of an address. */
enum { SC_BLOCK_NOT_HELD, SC_BLOCK_START, SC_BLOCK_INSIDE };

struct sc_arena {
  const sc_arena_ops *ops;
  uint64_t live_generation;     /* atomic: handle generation while live, 0 when not */
  uint64_t last_generation;     /* generation of the newest arena in this slot */
  unsigned slot;
  int library_default;          /* 1: a default arena sicm_fini() destroys */
  unsigned flags;               /* SICM_ARENA_* of its creation */
  size_t maxsize;               /* 0: unlimited */
  /* Its hugetlb page size (binding.huge_page, fixed at creation), 0 for
   * base pages.  Hugetlb windows hold huge pages populated at commit, so
   * that running out of reserved pages is a failed allocation, never a
   * SIGBUS at first touch; held counts whole huge pages. */
  size_t huge_page;
  /* A fixed arena: its one window is memory the caller owns, never grown;
   * no thread caches, no zero pages assumed, no pages given back. */
  int borrowed;
  /* What its moves pass to mbind and move_pages: ops->move_flag, or
   * MPOL_MF_MOVE_ALL for a fixed arena over memory other processes map
   * too (a shared segment), where this process may move their pages. */
  int move_flag;
  size_t held;                  /* atomic: bytes committed to it */
  size_t peak_held;             /* atomic: the most held has been, for the report */
  sc_binding binding;           /* changed by migration under window_lock */
  size_t capacity;              /* atomic: binding.capacity, for allocations to read */
  pthread_mutex_t window_lock;  /* windows and binding; never held on the fast path */
  unsigned nwindows;
  sc_window windows[SC_WINDOWS_MAX];
  pthread_mutex_t migrate_lock; /* one migration at a time; destroy waits for it */
  sc_pool *pool;                /* its allocator's pool, or NULL */
  /* Guards kind_data against threads that reach it outside a call on the
   * arena (a thread exit flushing its caches); lives as long as the record. */
  pthread_mutex_t kind_lock;
  int migrated;                 /* last_migration is valid */
  sicm_migration_report last_migration;
  /* Totals for the report (atomic; written under migrate_lock). */
  uint64_t migrations_done, migrations_failed, migration_ns, migration_bytes;
  /* Automatic placement (sicm_autoplace.h). */
  char name[SICM_ARENA_NAME_MAX]; /* under window_lock */
  int autoplace_mode;               /* atomic: enum sicm_autoplace_mode */
  uint64_t program_moves;       /* atomic: migrations the program asked for (each pins) */
  /* Atomic, written under migrate_lock (or at creation): bytes from the
   * first window's base bound to the placer's fast tier
   * (sc_arena_move_part); 0: none.  Any move of the whole arena binds
   * every window again and clears it. */
  size_t placer_part;
  sc_arena_usage usage;
  /* The kind's own data (arena_je.h, shared.h); records live as long as
   * the process, so it is storage here, not a pointer to free. */
  unsigned char kind_data[SC_ARENA_KIND_DATA] __attribute__((aligned(64)));
};

/* Binds the record to b (window_lock held once the arena is live). */
static inline void sc_arena_binding_set(sc_arena *a, const sc_binding *b) {
  a->binding = *b;
  __atomic_store_n(&a->capacity, b->capacity, __ATOMIC_RELAXED);
}

/* ---- arena_check.c: the checking mode (SICM_CHECK) ---- */
/* 1 in the checking mode: the thread's front is never set, and the entry
 * points record every block they hand out. */
extern int sc_check_on;
/* Reads SICM_CHECK (sicm_init). */
void sc_check_setup(void);
/* ptr was handed out by the arena of `generation`. */
void sc_check_born(const void *ptr, uint64_t generation);
/* ptr is freed or resized by `call`: if it is not a live block, one line
 * on stderr names the call, the pointer and why, then abort(). */
void sc_check_dies(const void *ptr, const char *call);
/* Around fork(): the record's lock (a leaf). */
void sc_check_fork_lock(void);
void sc_check_fork_unlock(void);

/* ---- arena_stats.c: what arenas destroyed before did ---- */
typedef struct sc_arenas_gone {
  uint64_t arenas, migrations, failed, nanoseconds, bytes_moved;
} sc_arenas_gone;
/* Adds a destroyed arena's migrations to the totals. */
void sc_arenas_gone_add(const sc_arena *a);
void sc_arenas_gone_read(sc_arenas_gone *out);

/* ---- arena_usage.c: names, rates and placer modes of arenas ---- */
/* Zeroes what the placer measured of a new arena. */
void sc_arena_usage_reset(sc_arena *a);
/* Stores what the placer measured this interval. */
void sc_arena_usage_store(sc_arena *a, const sicm_arena_rates *r);
/* A copy of the arena's name ("" when none), at most SICM_ARENA_NAME_MAX. */
void sc_arena_name_copy(sc_arena *a, char *out);

/* ---- arena.c: slots, handles, lifecycle ---- */
/* Slot i's record, or NULL; records are never freed (stale handles and
 * lookups must never touch freed memory). */
extern sc_arena *sc_arena_slots[SC_ARENA_SLOTS];

/* Checks devices and placement flags (EINVAL/ENOTSUP) and builds a binding. */
int sc_binding_make(const sc_state *s, sicm_device *const *devs, unsigned ndevs,
                    unsigned flags, sc_binding *out);

typedef struct sc_arena_config {
  const sc_arena_ops *ops;
  const sc_binding *binding;
  size_t maxsize;
  unsigned flags;
  int library_default;
  void *kind_arg;               /* passed to ops->open */
  void *borrowed_base;          /* a fixed arena's memory (page-aligned), or NULL */
  size_t borrowed_size;
  int move_all;                 /* its moves take pages other processes map too */
} sc_arena_config;

/* The one creation path of every kind: claims a slot, fills the common
 * fields, opens the kind, publishes the handle.  NULL with errno. */
sicm_arena sc_arena_create(const sc_arena_config *config);
sicm_arena sc_arena_handle(const sc_arena *a, uint64_t generation);
static inline uint64_t sc_handle_generation(sicm_arena sa) {
  return (uintptr_t)sa >> SC_HANDLE_SLOT_BITS;
}
/* sc_arena_resolve's failure: NULL with EINVAL or ESTALE and the detail. */
sc_arena *sc_arena_resolve_fail(sicm_arena sa);
/* The live arena of a handle, or NULL with errno EINVAL/ESTALE.  Inline:
 * every allocation resolves its handle. */
static inline sc_arena *sc_arena_resolve(sicm_arena sa) {
  uintptr_t h = (uintptr_t)sa;
  sc_arena *a = __atomic_load_n(&sc_arena_slots[h & (SC_ARENA_SLOTS - 1)], __ATOMIC_ACQUIRE);
  if (__builtin_expect(a == NULL || h >> SC_HANDLE_SLOT_BITS == 0 ||
                           __atomic_load_n(&a->live_generation, __ATOMIC_ACQUIRE) !=
                               sc_handle_generation(sa), 0))
    return sc_arena_resolve_fail(sa);
  return a;
}
/* The handle of the first live arena for which match() returns 1, under
 * the arenas lock; NULL if none. */
sicm_arena sc_arena_find(int (*match)(const sc_arena *a, const void *arg), const void *arg);
/* Makes a new arena count its blocks in `pool` (before its first
 * allocation).  Its blocks then bypass the thread caches, so that each
 * returns to the pool when it is freed. */
void sc_arena_set_pool(sicm_arena sa, sc_pool *pool);
/* arena_alloc.c: sicm_arena_alloc and sicm_free for every kind; the
 * entry points (arena_je_fast.c) call them when the private kind's thread
 * caches cannot serve. */
void *sc_arena_alloc_any(sicm_arena sa, size_t sz);
void sc_free_any(void *ptr);
/* How the library's default arenas are made: a kind's creation, as
 * sicm_arena_create_devices() plus the library_default mark.  init.c sets
 * it to the private kind's before any arena exists, so that this layer
 * names no kind. */
typedef sicm_arena (*sc_kind_create_fn)(size_t maxsize, sicm_device *const *devs, unsigned ndevs,
                                        unsigned flags, int library_default);
void sc_arenas_set_default_kind(sc_kind_create_fn create);
/* 0 when no arena of the program is live, else -1 with EBUSY: the last
 * sicm_fini asks before it stops anything. */
int sc_arenas_none_live(void);
/* Destroys the library's default arenas; -1 with EBUSY if user arenas live. */
int sc_arenas_release_all(void);
/* Runs ops->upkeep on every live arena (the upkeep thread), under the
 * table's lock: no arena goes meanwhile. */
void sc_arenas_upkeep(void);
/* Around fork() (init.c registers the handlers): takes every lock of the
 * arena layer; releases them in the parent and the child. */
void sc_arenas_fork_lock(void);
void sc_arenas_fork_unlock(int child);
/* In the child, after the unlock: the parent's hugetlb arenas are gone
 * (their windows are not inherited, MADV_DONTFORK): handles stale, blocks
 * no arena's. */
void sc_arenas_fork_child(void);

/* ---- arena_je_fast.c: the threads' fronts (sicm_inline.h) ---- */
/* Closes every thread's front; the caller has marked an arena dead. */
void sc_fronts_close(void);
/* Around fork(): the list of fronts (a leaf lock). */
void sc_fronts_fork_lock(void);
void sc_fronts_fork_unlock(int child);

/* ---- arena_window.c: address windows and the chunk -> arena table ---- */
#define SC_CHUNK_COUNT ((size_t)1 << (SC_ADDRESS_BITS - SC_CHUNK_SHIFT))
/* In sc_chunk_owner: the chunk holds the end of a window that does not
 * fill it, so an address there must be checked against the windows (and
 * then against fixed arenas' ranges, which may share the chunk). */
#define SC_CHUNK_PARTIAL 0x8000u
/* In sc_chunk_owner: the chunk holds fixed arenas' windows (the caller's
 * memory, anywhere, several to a chunk): the owner is found in their list. */
#define SC_CHUNK_MANY 0x7fffu
/* In sc_chunk_owner: the chunk held a window this process lost at fork()
 * (sc_window_lose_all): no arena's, and never a window again. */
#define SC_CHUNK_LOST 0x7ffeu
/* slot + 1 of the arena owning each chunk (| SC_CHUNK_PARTIAL), or
 * SC_CHUNK_MANY or SC_CHUNK_LOST; 0: none. */
extern uint16_t sc_chunk_owner[SC_CHUNK_COUNT];
/* The fixed arena whose window holds addr, or NULL (lock-free). */
sc_arena *sc_window_owner_fixed(uintptr_t addr);
/* Makes [base, base + size) — the caller's memory, page-aligned — the
 * arena's one window, unused; 0, or -1 with errno EINVAL (it overlaps
 * another arena's window) or ENOMEM (too many fixed arenas). */
int sc_window_lend(sc_arena *a, void *base, size_t size);
int sc_window_contains(const sc_arena *a, uintptr_t p);
/* Raises the reach of the window holding [p, p + len) to cover it. */
void sc_window_reach(sc_arena *a, void *p, size_t len);
/* The arena owning address p (live or being destroyed), or NULL.
 * Lock-free; inline: every free looks its pointer up. */
static inline sc_arena *sc_window_owner(const void *p) {
  uintptr_t addr = (uintptr_t)p;
  if (addr >> SC_ADDRESS_BITS)
    return NULL;
  unsigned owner = __atomic_load_n(&sc_chunk_owner[addr >> SC_CHUNK_SHIFT], __ATOMIC_ACQUIRE);
  if (owner - 1u < SC_ARENA_SLOTS) /* a whole chunk of one arena: one test */
    return __atomic_load_n(&sc_arena_slots[owner - 1], __ATOMIC_ACQUIRE);
  if (owner == SC_CHUNK_MANY)
    return sc_window_owner_fixed(addr);
  if (!(owner & SC_CHUNK_PARTIAL))
    return NULL; /* 0 or SC_CHUNK_LOST: no arena's */
  sc_arena *a = __atomic_load_n(&sc_arena_slots[(owner & ~SC_CHUNK_PARTIAL) - 1],
                                __ATOMIC_ACQUIRE);
  /* Fixed arenas' ranges may share the chunk. */
  return sc_window_contains(a, addr) ? a : sc_window_owner_fixed(addr);
}
/* 1 when private windows are mapped readable and writable from the start
 * (commit is accounting only, decommit one madvise); 0 under strict
 * overcommit (vm.overcommit_memory 2), where that would charge every
 * window in full: windows are then PROT_NONE and commit opens pages with
 * mprotect.  Read once. */
int sc_window_pages_open(void);
/* Makes [base, base + size) — mapped by the caller, base chunk-aligned —
 * the arena's one window, fully used. */
void sc_window_adopt(sc_arena *a, void *base, size_t size);
/* The window of a hugetlb arena holding p (caller holds window_lock), or
 * NULL: its `populated` counts say which huge pages the hooks populated. */
sc_window *sc_window_of(sc_arena *a, const void *p);
/* Takes size bytes (aligned) from the arena's windows, reserving a new
 * window when needed; NULL with errno.  Caller holds window_lock. */
void *sc_window_take(sc_arena *a, void *new_addr, size_t size, size_t alignment);
/* Unmaps every window of the arena. */
void sc_window_release_all(sc_arena *a);
/* In a child of fork(), for an arena whose windows it did not inherit:
 * takes them from the arena, their addresses held for good. */
void sc_window_lose_all(sc_arena *a);
/* The live arena owning address p and its generation, or NULL (no errno:
 * callers decide whether that is an error).  Inline: every free uses it. */
static inline sc_arena *sc_arena_of_ptr(const void *p, uint64_t *generation) {
  sc_arena *a = sc_window_owner(p);
  *generation = a ? __atomic_load_n(&a->live_generation, __ATOMIC_ACQUIRE) : 0;
  return *generation ? a : NULL;
}
/* A byte per 4 KiB page of every private window, for the kind to say what
 * starts in that page (arena_je.h: the size class of the allocation there)
 * so that free needs no query to the allocator.  0: nothing known.  A
 * chunk's table is made with the chunk's first private window and kept for
 * the process — cleared, never unmapped, when the window goes — so that a
 * racing free never reads unmapped memory; NULL for chunks of no private
 * window.  Costs 4 MiB of address space per 16 GiB chunk and one page of
 * memory per 16 MiB the arena uses. */
#define SC_PAGE_TAG_SHIFT 12
extern uint8_t *sc_page_tags[SC_CHUNK_COUNT];
/* Zeroes the tags of the pages after p's, up to p + size (arena_window.c). */
void sc_page_tags_clear_inside(const void *p, size_t size);
static inline uint8_t *sc_page_tag_of(const void *p) {
  uintptr_t addr = (uintptr_t)p;
  if (addr >> SC_ADDRESS_BITS)
    return NULL;
  uint8_t *tags = __atomic_load_n(&sc_page_tags[addr >> SC_CHUNK_SHIFT], __ATOMIC_ACQUIRE);
  return tags ? &tags[(addr & (SC_CHUNK_SIZE - 1)) >> SC_PAGE_TAG_SHIFT] : NULL;
}
/* A consistent copy of the arena's windows; returns how many. */
unsigned sc_window_snapshot(sc_arena *a, sc_window *out);

/* ---- arena_stats.c ---- */
/* Adds the bytes of the windows' resident pages on node n to bytes[n], for
 * n < nnodes: the cost follows the resident pages, not the used range.
 * 0, or -1 with errno. */
int sc_windows_residency(const sc_window *w, unsigned n, size_t *bytes, size_t nnodes);

/* ---- arena_resident.c: the resident pages of a range, in batches ---- */
enum { SC_PAGE_LIST_MAX = 65536 }; /* pages per batch */
typedef struct sc_page_list sc_page_list;
/* Acts on the l->n pages of the list (0, or -1 with errno: stop). */
typedef int (*sc_page_list_flush)(sc_page_list *l, void *ctx);
struct sc_page_list {
  void **pages;                 /* page addresses */
  int *nodes, *status;          /* per page, for move_pages */
  size_t n, cap;
  sc_page_list_flush flush;
  void *ctx;
};
/* A list for batches of at most max_pages (and SC_PAGE_LIST_MAX); 0 or -1. */
int sc_page_list_init(sc_page_list *l, size_t max_pages, sc_page_list_flush flush, void *ctx);
void sc_page_list_free(sc_page_list *l);
/* Flushes what the list holds; 0, or the flush's -1. */
int sc_page_list_flush_now(sc_page_list *l);
/* Appends the pages of [start, start + npages pages) to the list ctx,
 * flushing when full; 0, or the flush's -1. */
int sc_page_list_append_run(void *ctx, char *start, size_t npages);
/* Appends the resident pages of [base, base + len) to l (NULL: count only),
 * flushing each full batch but not the last one; returns how many pages
 * are resident, or -1 with errno. */
long sc_resident_pages(char *base, size_t len, sc_page_list *l);
/* Calls fn(ctx, start, npages) for each run of resident pages of
 * [base, base + len) (NULL: count only; of a shared mapping, the object's
 * pages in memory, whoever touched them); returns how many pages are
 * resident, or -1 with errno (fn's -1 stops the walk). */
typedef int (*sc_resident_run_fn)(void *ctx, char *start, size_t npages);
long sc_resident_runs(char *base, size_t len, sc_resident_run_fn fn, void *ctx);
/* mbind(2) of [addr, addr + len) to the binding, with move_flag only when
 * a page of the range is in memory off the binding's nodes: the kernel
 * drains every CPU's page lists and waits out an RCU grace period for any
 * call that may move, whether there is a page to move or not.  The policy
 * is set first, so a page faulted in meanwhile lands right, and the walk
 * after it (mincore, then move_pages asking where) sees every page faulted
 * in before.  0, or -1 with errno. */
int sc_mbind_resident(void *addr, size_t len, const sc_binding *b, unsigned move_flag);
/* A sc_resident_run_fn that maps here a run of a shared mapping's pages
 * in memory, which other processes touched: mbind and move_pages see only
 * the pages of this process's page tables.  Returns 0. */
int sc_populate_run(void *ctx, char *start, size_t npages);
/* Resident pages of the windows' used parts, or -1 with errno. */
long sc_windows_resident_pages(const sc_window *w, unsigned n);

/* The policy of a WEIGHTED binding over nodes (arena_weights.c):
 * MPOL_WEIGHTED_INTERLEAVE where the kernel has it, else MPOL_INTERLEAVE. */
int sc_weighted_policy(const sc_nodemask *nodes);
/* Whether the policy spreads pages over its nodes. */
static inline int sc_policy_interleaves(int policy) {
  return policy == MPOL_INTERLEAVE || policy == MPOL_WEIGHTED_INTERLEAVE;
}

#endif /* SC_ARENA_H */
