/* SPDX-License-Identifier: BSD-3-Clause */
/* mpi_alloc_check.c: libsicm-mpi under a real MPI (2 ranks).  On the host:
 * MPI_Alloc_mem without hints is the MPI library's, with sicm_memory it is
 * an arena's; bad values are MPI_ERR_INFO_VALUE with our words; a missing
 * device is MPI_ERR_NO_MEM unless sicm_fallback says otherwise; named
 * arenas group allocations; MPI_Free_mem frees memory of any source;
 * MPI_Put/MPI_Get through a window over arena memory move the right bytes;
 * a node-shared window with hints works from both ranks; calls without
 * keys follow the environment's defaults (SICM_MPI_INFO...).  With --numa (the
 * 4-node guest), also where the pages are: hbm on node 2, large_cap on
 * node 3, the shared window on node 2 as seen from each rank.  With
 * SICM_TOPOLOGY_DIR set to an empty directory, one rank publishes the
 * node's topology and the other adopts it (libsicm-mpi shares by default),
 * so in the guest the adopting rank's placement checks run on an adopted
 * topology.
 * Prints "ok: ..." or "FAILED: ..." per check; exit 0 if every check passed. */
#include <mpi.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_check.h"
#include "sicm.h"
#include "sicm_autoplace.h"

static int rank, failures;

static void check(int ok, const char *what) {
  if (!ok)
    failures++;
  printf("rank %d %s: %s\n", rank, ok ? "ok" : "FAILED", what);
}

/* MPI_Alloc_mem with up to two hints; the error class, the pointer in *p. */
static int alloc_with(MPI_Aint size, const char *k1, const char *v1, const char *k2,
                      const char *v2, void *p) {
  MPI_Info info = info_of(k1, v1, k2, v2);
  int rc = MPI_Alloc_mem(size, info, p), cls = MPI_SUCCESS;
  MPI_Info_free(&info);
  MPI_Error_class(rc, &cls);
  return cls;
}

/* The error string of our code holds `words`; under MPICH, whose codes of
 * predefined classes lose their text (libsicm-mpi then returns the class
 * and writes its text to stderr), it is exactly MPICH's string for the
 * class: never another message decoded from the code's bits. */
static int text_is_ours(int code, const char *text, const char *words) {
#if defined(MPICH_VERSION)
  char expected[MPI_MAX_ERROR_STRING];
  int len = 0, cls = -1;
  MPI_Error_class(code, &cls);
  MPI_Error_string(cls, expected, &len);
  return strstr(text, words) != NULL || (code == cls && strcmp(text, expected) == 0);
#else
  (void)code;
  return strstr(text, words) != NULL;
#endif
}

static void hint_errors(void) {
  void *p = NULL;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Info info = info_of("sicm_memory", "fastest", NULL, NULL);
  int rc = MPI_Alloc_mem(4096, info, &p), cls;
  MPI_Info_free(&info);
  MPI_Error_class(rc, &cls);
  MPI_Error_string(rc, text, &len);
  check(cls == MPI_ERR_INFO_VALUE && text_is_ours(rc, text, "sicm_memory"),
        "an unknown sicm_memory is MPI_ERR_INFO_VALUE that names the key");
  if (cls != MPI_ERR_INFO_VALUE || !text_is_ours(rc, text, "sicm_memory"))
    printf("rank %d: code %d, class %d, string \"%s\"\n", rank, rc, cls, text);
  check(alloc_with(4096, "sicm_memory", "dram", "sicm_fallback", "maybe", &p) ==
            MPI_ERR_INFO_VALUE,
        "an unknown sicm_fallback is MPI_ERR_INFO_VALUE");
  check(alloc_with(4096, "sicm_memory", "node:x", NULL, NULL, &p) == MPI_ERR_INFO_VALUE,
        "node:x is MPI_ERR_INFO_VALUE");
  check(alloc_with(4096, "sicm_memory", "node:999", NULL, NULL, &p) == MPI_ERR_NO_MEM,
        "a node this machine lacks is MPI_ERR_NO_MEM without a fallback");
  check(alloc_with(4096, "sicm_memory", "node:999", "sicm_fallback", "null", &p) ==
            MPI_ERR_NO_MEM,
        "... and with sicm_fallback=null");
  p = NULL;
  int ok = alloc_with(4096, "sicm_memory", "node:999", "sicm_fallback", "default", &p) ==
               MPI_SUCCESS && p != NULL && sicm_arena_lookup(p) == NULL;
  check(ok, "sicm_fallback=default gives the MPI library's memory");
  if (ok)
    check(MPI_Free_mem(p) == MPI_SUCCESS, "MPI_Free_mem frees the fallback's memory");
}

static void sources_and_arenas(void) {
  char *plain = NULL, *dram = NULL, *a1 = NULL, *a2 = NULL;
  check(MPI_Alloc_mem(1 << 16, MPI_INFO_NULL, &plain) == MPI_SUCCESS && plain &&
            sicm_arena_lookup(plain) == NULL,
        "no hints: the MPI library's memory");
  check(alloc_with(1 << 16, "sicm_memory", "dram", NULL, NULL, &dram) == MPI_SUCCESS && dram &&
            sicm_arena_lookup(dram) != NULL,
        "sicm_memory=dram: memory of a libsicm arena");
  memset(plain, 1, 1 << 16);
  memset(dram, 2, 1 << 16);
  check(alloc_with(1000, "sicm_arena", "solver", NULL, NULL, &a1) == MPI_SUCCESS &&
            alloc_with(3 << 20, "sicm_arena", "solver", "sicm_memory", "dram", &a2) ==
                MPI_SUCCESS &&
            a1 && a2 && sicm_arena_lookup(a1) == sicm_arena_lookup(a2) &&
            sicm_arena_lookup(a1) != sicm_arena_lookup(dram),
        "sicm_arena=solver: two allocations in one arena of their own");
  sicm_arena solver = a1 ? sicm_arena_lookup(a1) : NULL;
  char name[SICM_ARENA_NAME_MAX] = "", memory_name[SICM_ARENA_NAME_MAX] = "";
  if (solver)
    sicm_arena_get_name(solver, name, sizeof name);
  if (dram && sicm_arena_lookup(dram))
    sicm_arena_get_name(sicm_arena_lookup(dram), memory_name, sizeof memory_name);
  check(strcmp(name, "solver") == 0 && strcmp(memory_name, "mpi:dram") == 0,
        "the arenas are named for reports: solver, mpi:dram");
  check(solver && sicm_arena_set_device(solver, sicm_arena_get_device(solver)) == 0,
        "the named arena moves with sicm_arena_set_device");
  int rc = MPI_Free_mem(dram ? dram + 100 : NULL), cls = -1;
  MPI_Error_class(rc, &cls);
  check(dram && cls == MPI_ERR_ARG && sicm_usable_size(dram) >= 1 << 16 && dram[0] == 2,
        "MPI_Free_mem inside a placed block: MPI_ERR_ARG, the block kept");
  check(MPI_Free_mem(plain) == MPI_SUCCESS && MPI_Free_mem(dram) == MPI_SUCCESS &&
            MPI_Free_mem(a1) == MPI_SUCCESS && MPI_Free_mem(a2) == MPI_SUCCESS,
        "MPI_Free_mem frees memory of every source");
}

/* Arenas live while they hold blocks: 10,000 distinct names, each block
 * freed at once, all succeed, and the arenas do not accumulate; a name
 * whose last block was freed is made anew.  Past libsicm's arena limit the
 * error is our own (class MPI_ERR_NO_MEM, with our words), not a bare
 * MPI_ERR_NO_MEM. */
static void names_released(void) {
  int ok = 1, before = sicm_arenas_list(NULL, 0);
  for (int i = 0; i < 10000 && ok; i++) {
    char name[32], *p = NULL;
    snprintf(name, sizeof name, "cycle-%d", i);
    ok = alloc_with(100, "sicm_arena", name, NULL, NULL, &p) == MPI_SUCCESS && p != NULL &&
         MPI_Free_mem(p) == MPI_SUCCESS;
  }
  check(ok && sicm_arenas_list(NULL, 0) == before,
        "10,000 distinct sicm_arena names, each freed at once: each arena released");
  char *first = NULL, *second = NULL;
  ok = alloc_with(100, "sicm_memory", "large_cap", NULL, NULL, &first) == MPI_SUCCESS &&
       MPI_Free_mem(first) == MPI_SUCCESS &&
       alloc_with(100, "sicm_memory", "large_cap", NULL, NULL, &second) == MPI_SUCCESS &&
       MPI_Free_mem(second) == MPI_SUCCESS;
  check(ok, "after them, sicm_memory=large_cap still allocates");
  /* Fill libsicm's arena table with held names, then one more. */
  static char *held[8192];
  int n = 0, rc = MPI_SUCCESS;
  for (; n < 8192; n++) {
    char name[32];
    snprintf(name, sizeof name, "held-%d", n);
    if ((rc = alloc_with(64, "sicm_arena", name, NULL, NULL, &held[n])) != MPI_SUCCESS)
      break;
  }
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Info info = info_of("sicm_arena", "one-more", NULL, NULL);
  char *extra = NULL;
  int code = MPI_Alloc_mem(64, info, &extra);
  MPI_Info_free(&info);
  int rc_class = -1, code_class = -1;
  MPI_Error_class(rc, &rc_class);
  MPI_Error_class(code, &code_class);
  MPI_Error_string(code, text, &len);
  /* Under AddressSanitizer, whose shadow takes most of the address space,
   * the arenas' reserved ranges run out before libsicm's limit: that is a
   * true lack of memory, MPI_ERR_NO_MEM with the MPI's own string. */
#if defined(__SANITIZE_ADDRESS__)
  const int address_space_first = 1;
#else
  const int address_space_first = 0;
#endif
  check(n < 8192 && rc_class == MPI_ERR_NO_MEM && code_class == MPI_ERR_NO_MEM &&
            (text_is_ours(code, text, "limit of live arenas") || address_space_first),
        "past libsicm's arena limit: of class MPI_ERR_NO_MEM with our own error string");
  if (!text_is_ours(code, text, "limit of live arenas") || code_class != MPI_ERR_NO_MEM)
    printf("rank %d: %d names held; code %d, class %d, string \"%s\"\n", rank, n, code,
           code_class, text);
  for (int i = 0; i < n; i++)
    MPI_Free_mem(held[i]);
  check(sicm_arenas_list(NULL, 0) == before, "freeing them releases every arena");
}

static void one_sided(const char *memory) {
  const int len = 1 << 20;
  unsigned char *buf = NULL;
  if (alloc_with(len, "sicm_memory", memory, NULL, NULL, &buf) != MPI_SUCCESS || !buf) {
    check(0, "window memory from MPI_Alloc_mem");
    return;
  }
  for (int i = 0; i < len; i++)
    buf[i] = (unsigned char)(rank * 100 + i % 97);
  MPI_Win win;
  if (MPI_Win_create(buf, len, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win) != MPI_SUCCESS) {
    check(0, "MPI_Win_create over arena memory");
    MPI_Free_mem(buf);
    return;
  }
  unsigned char put[4096], got[4096];
  for (int i = 0; i < 4096; i++)
    put[i] = (unsigned char)(i * 7 + 3);
  MPI_Win_fence(0, win);
  if (rank == 0) {
    MPI_Put(put, 4096, MPI_BYTE, 1, 8192, 4096, MPI_BYTE, win);
    MPI_Get(got, 4096, MPI_BYTE, 1, 0, 4096, MPI_BYTE, win);
  }
  MPI_Win_fence(0, win);
  if (rank == 0) {
    int ok = 1;
    for (int i = 0; i < 4096; i++)
      ok &= got[i] == (unsigned char)(100 + i % 97);
    check(ok, "MPI_Get from a window over arena memory reads rank 1's bytes");
  } else {
    int ok = 1;
    for (int i = 0; i < 4096; i++)
      ok &= buf[8192 + i] == (unsigned char)(i * 7 + 3);
    ok &= buf[8191] == (unsigned char)(100 + 8191 % 97) &&
          buf[12288] == (unsigned char)(100 + 12288 % 97);
    check(ok, "MPI_Put into a window over arena memory writes exactly its bytes");
  }
  MPI_Win_free(&win);
  MPI_Free_mem(buf);
}

static void shared_window(const char *memory, int node) {
  const MPI_Aint size = (1 << 20) + 100;
  MPI_Info info = info_of("sicm_memory", memory, NULL, NULL);
  unsigned char *mine = NULL;
  MPI_Win win;
  int rc = MPI_Win_allocate_shared(size, 1, info, MPI_COMM_WORLD, &mine, &win);
  MPI_Info_free(&info);
  check(rc == MPI_SUCCESS, "MPI_Win_allocate_shared with sicm_memory");
  if (rc != MPI_SUCCESS)
    return;
  memset(mine, rank + 1, size);
  MPI_Barrier(MPI_COMM_WORLD);
  int ok = 1;
  for (int r = 0; r < 2; r++) {
    MPI_Aint len;
    int unit;
    unsigned char *base;
    MPI_Win_shared_query(win, r, &len, &unit, &base);
    ok &= len == size && base[0] == r + 1 && base[size - 1] == r + 1;
    if (node >= 0) {
      long page = sysconf(_SC_PAGESIZE);
      for (MPI_Aint i = 0; i < size; i += page) /* map it here: move_pages sees mapped pages */
        ok &= ((volatile unsigned char *)base)[i] == r + 1;
      size_t off = pages_off(base, (size_t)size, node);
      char what[128];
      snprintf(what, sizeof what, "rank %d's part of the shared window on node %d (%zu pages off)",
               r, node, off);
      check(off == 0, what);
    }
  }
  check(ok, "both ranks read each other's part of the shared window");
  MPI_Win_free(&win);
}

static void placement(const char *memory, int node) {
  char *p = NULL;
  const size_t len = 8 << 20;
  char what[128];
  snprintf(what, sizeof what, "sicm_memory=%s: every page on node %d", memory, node);
  if (alloc_with(len, "sicm_memory", memory, NULL, NULL, &p) != MPI_SUCCESS || !p) {
    check(0, what);
    return;
  }
  memset(p, 5, len);
  check(pages_off(p, len, node) == 0, what);
  MPI_Free_mem(p);
}

/* Once libsicm-mpi has started the library in every rank. */
static void topology_shared(void) {
  int source = sicm_init_topology_source(), counts[3] = {0, 0, 0}, all[3];
  if (source >= 0 && source <= 2)
    counts[source] = 1;
  MPI_Allreduce(counts, all, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  printf("rank %d topology source %d\n", rank, source);
  if (getenv("SICM_TOPOLOGY_DIR") != NULL)
    check(all[SICM_TOPOLOGY_PUBLISHED] == 1 && all[SICM_TOPOLOGY_ADOPTED] == 1,
          "one rank published the node's topology, the other adopted it");
}

/* MPI 4.1's kinds key: a sicm:CLASS kind stands for sicm_memory=CLASS. */
static void memory_kinds(const char *memory, int node) {
  char kinds[64], *p = NULL;
  snprintf(kinds, sizeof kinds, "mpi:alloc_mem, sicm:%s", memory);
  int ok = alloc_with(1 << 20, "mpi_memory_alloc_kinds", kinds, NULL, NULL, &p) == MPI_SUCCESS &&
           p != NULL && sicm_arena_lookup(p) != NULL;
  if (ok && node >= 0) {
    memset(p, 1, 1 << 20);
    ok = pages_off(p, 1 << 20, node) == 0;
  }
  char what[128];
  snprintf(what, sizeof what, "mpi_memory_alloc_kinds=\"%s\": an arena's memory%s", kinds,
           node >= 0 ? ", on its node" : "");
  check(ok, what);
  if (p)
    MPI_Free_mem(p);
  p = NULL;
  check(alloc_with(4096, "mpi_memory_alloc_kinds", "system,mpi", NULL, NULL, &p) == MPI_SUCCESS &&
            p && sicm_arena_lookup(p) == NULL && MPI_Free_mem(p) == MPI_SUCCESS,
        "kinds without a sicm one: the MPI library's memory");
  check(alloc_with(4096, "mpi_memory_alloc_kinds", "mpi,sicm", NULL, NULL, &p) == MPI_ERR_INFO_VALUE &&
            alloc_with(4096, "mpi_memory_alloc_kinds", "sicm:dram:x", NULL, NULL, &p) ==
                MPI_ERR_INFO_VALUE &&
            alloc_with(4096, "mpi_memory_alloc_kinds", "sicm:fastest", NULL, NULL, &p) ==
                MPI_ERR_INFO_VALUE &&
            alloc_with(4096, "mpi_memory_alloc_kinds", "sicm:dram", "sicm_memory", "capacity", &p) ==
                MPI_ERR_INFO_VALUE,
        "a sicm kind without one known class, or against sicm_memory: MPI_ERR_INFO_VALUE");
}

static MPI_Win window_of(MPI_Aint size, MPI_Info info, long **base, int *rc) {
  MPI_Win win = MPI_WIN_NULL;
  *base = NULL;
  *rc = MPI_Win_allocate(size, sizeof(long), info, MPI_COMM_WORLD, base, &win);
  return win;
}

/* MPI_Win_allocate with sicm_memory: memory (on `node` when >= 0) that
 * MPI_Put, MPI_Get and MPI_Accumulate of the other rank reach, given back
 * by MPI_Win_free, in both kinds of window: with sicm_window=arena, arena
 * memory under MPI_Win_create; by default, the MPI library's own window,
 * this rank's part a fixed arena.  Without hints, the MPI's; hints on one
 * rank only; a bad hint on one rank fails the call on both, without a
 * hang. */
static void window_allocate(const char *memory, int node, const char *window) {
  const int n = 1 << 17; /* longs: 1 MiB */
  int before = sicm_arenas_list(NULL, 0), rc, cls, mpi_window = window == NULL;
  long *base;
  char what[160];
  MPI_Info info = info_of("sicm_memory", memory, window ? "sicm_window" : NULL, window);
  MPI_Win win = window_of((MPI_Aint)n * sizeof(long), info, &base, &rc);
  snprintf(what, sizeof what, "MPI_Win_allocate with sicm_memory%s: %s, flavour ALLOCATE",
           window ? ";sicm_window=arena" : "",
           mpi_window ? "the MPI library's window, the part a fixed arena"
                      : "arena memory under MPI_Win_create");
  check(rc == MPI_SUCCESS && base && part_arena(base, (size_t)n * sizeof(long), mpi_window) &&
            flavor_of(win) == MPI_WIN_FLAVOR_ALLOCATE &&
            mpi_flavor_of(win) == (mpi_window ? MPI_WIN_FLAVOR_ALLOCATE : MPI_WIN_FLAVOR_CREATE),
        what);
  if (rc != MPI_SUCCESS) {
    MPI_Info_free(&info);
    return;
  }
  for (int i = 0; i < n; i++)
    base[i] = rank * 1000000L + i;
  long put[64], got[64], add[16];
  for (int i = 0; i < 64; i++)
    put[i] = -i - 7;
  for (int i = 0; i < 16; i++)
    add[i] = rank + 1;
  int other = 1 - rank;
  MPI_Win_fence(0, win);
  if (rank == 0)
    MPI_Put(put, 64, MPI_LONG, other, 100, 64, MPI_LONG, win);
  else
    MPI_Get(got, 64, MPI_LONG, other, 5000, 64, MPI_LONG, win);
  MPI_Accumulate(add, 16, MPI_LONG, other, 9000, 16, MPI_LONG, MPI_SUM, win);
  MPI_Win_fence(0, win);
  int ok = 1;
  if (rank == 1) {
    for (int i = 0; i < 64; i++)
      ok &= base[100 + i] == -i - 7 && got[i] == 5000 + i;
    ok &= base[99] == 1000000L + 99 && base[164] == 1000000L + 164;
  }
  for (int i = 0; i < 16; i++)
    ok &= base[9000 + i] == rank * 1000000L + 9000 + i + other + 1;
  check(ok, "MPI_Put, MPI_Get and MPI_Accumulate of the other rank reach the window's memory");
  if (node >= 0) {
    snprintf(what, sizeof what, "the window's memory on node %d", node);
    check(pages_off(base, (size_t)n * sizeof(long), node) == 0, what);
  }
  check(MPI_Win_free(&win) == MPI_SUCCESS && sicm_arenas_list(NULL, 0) == before,
        "MPI_Win_free gives the memory back (its arena released)");
  if (mpi_window) { /* the checks below are of windows over arenas */
    MPI_Info_free(&info);
    return;
  }

  win = window_of(4096, MPI_INFO_NULL, &base, &rc);
  check(rc == MPI_SUCCESS && base && sicm_arena_lookup(base) == NULL &&
            flavor_of(win) == MPI_WIN_FLAVOR_ALLOCATE && MPI_Win_free(&win) == MPI_SUCCESS,
        "MPI_Win_allocate without hints: the MPI library's window");

  win = window_of(4096, rank == 0 ? info : MPI_INFO_NULL, &base, &rc);
  ok = rc == MPI_SUCCESS && base && (sicm_arena_lookup(base) != NULL) == (rank == 0);
  if (rc == MPI_SUCCESS) {
    MPI_Win_fence(0, win);
    long mark = 42 + rank;
    MPI_Put(&mark, 1, MPI_LONG, other, 3, 1, MPI_LONG, win);
    MPI_Win_fence(0, win);
    ok &= base[3] == 42 + other && MPI_Win_free(&win) == MPI_SUCCESS;
  }
  check(ok, "hints on rank 0 only: its memory an arena's, rank 1's the MPI's, puts both ways");
  MPI_Info_free(&info);

  info = info_of("sicm_memory", rank == 1 ? "fastest" : memory, NULL, NULL);
  win = window_of(4096, info, &base, &rc);
  MPI_Info_free(&info);
  MPI_Error_class(rc, &cls);
  check(rc != MPI_SUCCESS && cls == (rank == 1 ? MPI_ERR_INFO_VALUE : MPI_ERR_NO_MEM) &&
            win == MPI_WIN_NULL && sicm_arenas_list(NULL, 0) == before,
        "a bad hint on rank 1: MPI_ERR_INFO_VALUE there, MPI_ERR_NO_MEM on rank 0, nothing held");
}

/* Defaults from the environment (sicm_mpi_env.c), for programs that pass
 * no sicm_* keys: SICM_MPI_INFO places them, a per-call variable (empty:
 * none) overrides it, explicit keys win, a bad default is
 * MPI_ERR_INFO_VALUE, spaces around keys and values are dropped. */
static void env_defaults(const char *memory) {
  char dflt[96], name[SICM_ARENA_NAME_MAX], expected[SICM_ARENA_NAME_MAX];
  long *p = NULL, *q = NULL;
  int before = sicm_arenas_list(NULL, 0), rc, cls;
  snprintf(dflt, sizeof dflt, "sicm_memory=%s", memory);
  setenv("SICM_MPI_INFO", dflt, 1);
  rc = MPI_Alloc_mem(4096, MPI_INFO_NULL, &p);
  snprintf(expected, sizeof expected, "mpi:%s", memory);
  check(rc == MPI_SUCCESS && p && sicm_arena_lookup(p) != NULL &&
            sicm_arena_get_name(sicm_arena_lookup(p), name, sizeof name) > 0 &&
            strcmp(name, expected) == 0,
        "SICM_MPI_INFO places MPI_Alloc_mem without info keys in its memory's arena");
  check(alloc_with(4096, "sicm_arena", "explicit", NULL, NULL, &q) == MPI_SUCCESS && q &&
            sicm_arena_get_name(sicm_arena_lookup(q), name, sizeof name) > 0 &&
            strcmp(name, "explicit") == 0,
        "explicit info keys win over SICM_MPI_INFO");
  if (p)
    MPI_Free_mem(p);
  if (q)
    MPI_Free_mem(q);
  setenv("SICM_MPI_INFO_ALLOC_MEM", "", 1);
  rc = MPI_Alloc_mem(4096, MPI_INFO_NULL, &p);
  check(rc == MPI_SUCCESS && p && sicm_arena_lookup(p) == NULL && MPI_Free_mem(p) == MPI_SUCCESS,
        "SICM_MPI_INFO_ALLOC_MEM set empty: MPI_Alloc_mem is the MPI library's again");
  unsetenv("SICM_MPI_INFO_ALLOC_MEM");
  static const char *const bad[] = {"sicm_memroy=hbm", "sicm_memory=hmb", "sicm_memory",
                                     "mpi_memory_alloc_kinds ;sicm_memory=dram",
                                     "sicm_memory=dram;sicm_window=shared"};
  int refused = 1;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv("SICM_MPI_INFO", bad[i], 1);
    p = NULL;
    rc = MPI_Alloc_mem(4096, MPI_INFO_NULL, &p);
    MPI_Error_class(rc, &cls);
    refused &= cls == MPI_ERR_INFO_VALUE && sicm_arenas_list(NULL, 0) == before;
  }
  check(refused, "a misspelt key, a bad memory or window, a key without '=' in "
                 "SICM_MPI_INFO: MPI_ERR_INFO_VALUE, nothing held");
  setenv("SICM_MPI_INFO", " sicm_memory = dram ; sicm_arena = @call ", 1);
  rc = MPI_Alloc_mem(4096, MPI_INFO_NULL, &p);
  check(rc == MPI_SUCCESS && p && sicm_arena_get_name(sicm_arena_lookup(p), name, sizeof name) > 0 &&
            strncmp(name, "mpi:mem#", 8) == 0 && MPI_Free_mem(p) == MPI_SUCCESS &&
            sicm_arenas_list(NULL, 0) == before,
        "spaces around SICM_MPI_INFO's keys and values are dropped: a per-call block arena");
  unsetenv("SICM_MPI_INFO");
}

/* The other rank's puts into a 1 MiB part map it there too: it moves whole. */
static void part_moves_whole(MPI_Win win, long *base, sicm_arena arena) {
  const long zero = 0;
  MPI_Win_fence(0, win);
  for (int i = 0; i < (1 << 20) / 4096; i++)
    MPI_Put(&zero, 1, MPI_LONG, 1 - rank, i * 512 + 7, 1, MPI_LONG, win);
  MPI_Win_fence(0, win);
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t lo = ((uintptr_t)base + page - 1) & ~(page - 1);
  uintptr_t hi = ((uintptr_t)base + (1 << 20)) & ~(page - 1);
  sicm_device *to = NULL;
  for (unsigned i = 0; i < sicm_devices()->count; i++)
    if (sicm_devices()->devices[i].node == 1 && !sicm_devices()->devices[i].huge)
      to = &sicm_devices()->devices[i];
  check(to != NULL && sicm_arena_set_device(arena, to) == 0 &&
            pages_off((void *)lo, hi - lo, 1) == 0 && base[7] == 0,
        "a part the other rank put into moves whole with sicm_arena_set_device");
}

/* sicm_arena=@call in SICM_MPI_INFO_WIN_ALLOCATE: three windows, three
 * arenas, each named by order and size (on `node` when >= 0) and released
 * by MPI_Win_free; SICM_MPI_INFO_WIN_ALLOCATE_SHARED places a node-shared
 * window. */
static void env_windows(const char *memory, int node) {
  char dflt[96], name[SICM_ARENA_NAME_MAX], expected[SICM_ARENA_NAME_MAX];
  int before = sicm_arenas_list(NULL, 0), rc;
  snprintf(dflt, sizeof dflt, "sicm_memory=%s;sicm_arena=@call", memory);
  setenv("SICM_MPI_INFO_WIN_ALLOCATE", dflt, 1);
  const MPI_Aint sizes[3] = {1 << 20, 2 << 20, 12 << 10};
  const char *units[3] = {"1MiB", "2MiB", "12KiB"};
  MPI_Win wins[3];
  long *bases[3];
  sicm_arena arenas[3] = {NULL, NULL, NULL};
  unsigned long first = 0; /* this process's count of per-call windows so far, plus one */
  int ok = 1;
  for (int i = 0; i < 3; i++) {
    wins[i] = window_of(sizes[i], MPI_INFO_NULL, &bases[i], &rc);
    ok &= rc == MPI_SUCCESS && bases[i] != NULL;
    if (rc != MPI_SUCCESS)
      continue;
    arenas[i] = part_arena(bases[i], (size_t)sizes[i], 1);
    ok &= arenas[i] != NULL && sicm_arena_get_name(arenas[i], name, sizeof name) > 0 &&
          mpi_flavor_of(wins[i]) == MPI_WIN_FLAVOR_ALLOCATE;
    if (i == 0 && sscanf(name, "mpi:win#%lu ", &first) != 1)
      ok = 0;
    snprintf(expected, sizeof expected, "mpi:win#%lu %s", first + (unsigned long)i, units[i]);
    ok &= strcmp(name, expected) == 0 && flavor_of(wins[i]) == MPI_WIN_FLAVOR_ALLOCATE;
    memset(bases[i], 0x5a, (size_t)sizes[i]);
    if (node >= 0 && pages_off(bases[i], (size_t)sizes[i], node) != 0)
      ok = 0;
  }
  ok &= arenas[0] != arenas[1] && arenas[1] != arenas[2] && arenas[0] != arenas[2];
  check(ok, node >= 0 ? "sicm_arena=@call: three of the MPI library's windows, three arenas "
                       "named mpi:win#N SIZE, each on the node"
                     : "sicm_arena=@call: three of the MPI library's windows, three arenas named "
                       "mpi:win#N SIZE");
  if (node >= 0 && wins[0] != MPI_WIN_NULL && arenas[0] != NULL)
    part_moves_whole(wins[0], bases[0], arenas[0]);
  ok = 1;
  for (int i = 0; i < 3; i++) /* a window failed on every rank or on none */
    ok &= wins[i] != MPI_WIN_NULL && MPI_Win_free(&wins[i]) == MPI_SUCCESS;
  check(ok && sicm_arenas_list(NULL, 0) == before, "MPI_Win_free releases each window's arena");

  /* The placer moves arenas whose memory libsicm owns: while it runs, a
   * window without sicm_window is one of MPI_Win_create over an arena. */
  sicm_autoplace_config placer;
  sicm_autoplace_config_init(&placer);
  int started = sicm_autoplace_start(&placer) == 0, all_started = 0;
  MPI_Allreduce(&started, &all_started, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all_started) {
    long *base;
    MPI_Win win = window_of(1 << 20, MPI_INFO_NULL, &base, &rc);
    check(rc == MPI_SUCCESS && sicm_arena_lookup(base) != NULL &&
              mpi_flavor_of(win) == MPI_WIN_FLAVOR_CREATE && MPI_Win_free(&win) == MPI_SUCCESS,
          "the placer running: the window an arena's memory under MPI_Win_create");
  } else if (rank == 0) {
    printf("  (no placer here: %s)\n", sicm_error_detail());
  }
  if (started)
    sicm_autoplace_stop();
  unsetenv("SICM_MPI_INFO_WIN_ALLOCATE");

  if (node >= 0) {
    setenv("SICM_MPI_INFO_WIN_ALLOCATE_SHARED", dflt, 1);
    unsigned char *mine = NULL;
    MPI_Win win;
    rc = MPI_Win_allocate_shared(1 << 20, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mine, &win);
    if (rc == MPI_SUCCESS)
      memset(mine, 1, 1 << 20);
    check(rc == MPI_SUCCESS && pages_off(mine, 1 << 20, node) == 0 &&
              MPI_Win_free(&win) == MPI_SUCCESS,
          "SICM_MPI_INFO_WIN_ALLOCATE_SHARED places a node-shared window without info keys");
    unsetenv("SICM_MPI_INFO_WIN_ALLOCATE_SHARED");
  }
}

int main(int argc, char **argv) {
  int numa = argc > 1 && strcmp(argv[1], "--numa") == 0, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  /* The checks without keys expect the MPI library's memory. */
  unsetenv("SICM_MPI_INFO");
  unsetenv("SICM_MPI_INFO_ALLOC_MEM");
  unsetenv("SICM_MPI_INFO_WIN_ALLOCATE");
  unsetenv("SICM_MPI_INFO_WIN_ALLOCATE_SHARED");
  if (size != 2) {
    if (rank == 0)
      fprintf(stderr, "mpi_alloc_check: run it with 2 ranks\n");
    MPI_Finalize();
    return 2;
  }
  hint_errors();
  sources_and_arenas();
  if (!numa) /* thousands of arenas: the host's check, too slow for the emulated guest */
    names_released();
  topology_shared();
  one_sided(numa ? "hbm" : "dram");
  shared_window(numa ? "hbm" : "dram", numa ? 2 : -1);
  window_allocate(numa ? "hbm" : "dram", numa ? 2 : -1, "arena");
  window_allocate(numa ? "hbm" : "dram", numa ? 2 : -1, NULL);
  memory_kinds(numa ? "hbm" : "dram", numa ? 2 : -1);
  env_defaults(numa ? "hbm" : "dram");
  env_windows(numa ? "hbm" : "dram", numa ? 2 : -1);
  if (numa) {
    placement("hbm", 2);
    placement("large_cap", 3);
    placement("node:1", 1);
  }
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("mpi_alloc_check: %d failed\n", all);
  MPI_Finalize();
  return all ? 1 : 0;
}
