/* SPDX-License-Identifier: BSD-3-Clause */
/* sicm_mpi.c: libsicm-mpi, a PMPI interposition library.  MPI_Alloc_mem,
 * MPI_Win_allocate and MPI_Win_allocate_shared (sicm_mpi_win.c) read memory
 * hints from their info argument and place the memory on the device the
 * hints name; everything else goes
 * to the MPI library (PMPI_*).  A PMPI library is tied to its MPI's ABI:
 * it is built once per MPI (libsicm-mpi-openmpi, libsicm-mpi-mpich, which
 * MPICH-ABI MPIs share).  Link it before the MPI library, or LD_PRELOAD it.
 *
 * Info keys (a value the library does not know is MPI_ERR_INFO_VALUE):
 *   sicm_memory    hbm | dram | capacity (device kinds), high_bw | low_lat |
 *                  large_cap (OpenMP memory spaces), node:N (one NUMA node)
 *   sicm_fallback  null (default: MPI_ERR_NO_MEM), default (the MPI
 *                  library's memory), abort — when no device of that kind
 *                  exists or it lacks room
 *   mpi_memory_alloc_kinds  MPI 4.1's key: a "sicm:CLASS" kind in its
 *                  list stands for sicm_memory=CLASS (a class name, not
 *                  node:N); the list's other kinds are the MPI library's
 *   sicm_arena     a name: allocations with the same name share one arena
 *                  (placed by the first one's sicm_memory), which
 *                  sicm_arena_lookup() returns and sicm_arena_set_device()
 *                  moves whole; @call: an arena of the call's own.
 * A call whose info names no memory and no arena takes the environment's
 * default (sicm_mpi_env.c).
 * An arena (of a name or of a memory value) lives while it holds blocks
 * of MPI_Alloc_mem: when MPI_Free_mem frees its last one, the arena is
 * destroyed and the name forgotten (a later allocation of that name makes
 * a new arena, placed anew).  Names are limited only by libsicm's arena
 * limit, reported with its own error string (under MPICH, whose codes of
 * predefined classes lose their text, the class's own string, and ours on
 * stderr). */
#define _GNU_SOURCE
#include <errno.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "../base_settings.h"
#include "sicm.h"
#include "sicm_autoplace.h"
#include "sicm_mpi.h"


#define NODES_BITS 1024


/* Arenas by sicm_memory value and by sicm_arena name, created on first use
 * and destroyed when MPI_Free_mem frees their last block (memory from them
 * may outlive MPI).  `blocks` counts the blocks handed out, and the
 * allocations in progress, so that no arena is destroyed under one. */
typedef struct named_arena {
  char name[NAME_MAX_LEN + 8];
  sicm_arena arena;
  size_t blocks;
} named_arena;

static pthread_mutex_t arenas_lock = PTHREAD_MUTEX_INITIALIZER;
static named_arena *arenas;         /* under arenas_lock */
static unsigned narenas, arenas_room;
static int initialized;             /* under arenas_lock: sicm_init done */

/* Error codes with our own text: of class MPI_ERR_INFO_VALUE for bad
 * values, MPI_ERR_NO_MEM for libsicm's arena limit. */
static int code_bad_memory, code_bad_fallback, code_bad_name, code_arena_limit, code_not_a_block,
    code_bad_default, code_bad_window;
static const char text_bad_memory[] = "libsicm-mpi: info key sicm_memory must be hbm, dram, "
                                      "capacity, high_bw, low_lat, large_cap or node:N";
static const char text_bad_fallback[] =
    "libsicm-mpi: info key sicm_fallback must be null, default or abort";
static const char text_bad_window[] = "libsicm-mpi: info key sicm_window must be arena or mpi";
static const char text_bad_name[] = "libsicm-mpi: info key sicm_arena must be 1 to 63 bytes";
static const char text_arena_limit[] = "libsicm-mpi: libsicm's limit of live arenas is reached "
                                       "(free the blocks of other sicm_arena names)";
static const char text_bad_default[] = "libsicm-mpi: SICM_MPI_INFO (or SICM_MPI_INFO_<CALL>) "
                                       "names a key that is not sicm_memory, sicm_fallback, "
                                       "sicm_arena, sicm_window or mpi_memory_alloc_kinds";
static const char text_not_a_block[] = "libsicm-mpi: MPI_Free_mem: the address lies in a libsicm "
                                       "arena but is no live block of it (an address inside a "
                                       "block, or a block freed already); nothing was freed";

/* A code of `class` whose MPI_Error_string is `text`.  MPICH (4.0) makes
 * codes of a predefined class that lose their text (MPI_Error_string then
 * decodes them as one of its own messages): there the class itself is the
 * code, and error_with_text() writes the text to stderr.  -1 on failure. */
static int codes_lose_text;
static int error_code_make(int class, const char *text, int *code) {
  char got[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Add_error_code(class, code) != MPI_SUCCESS ||
      MPI_Add_error_string(*code, text) != MPI_SUCCESS)
    return -1;
  if (MPI_Error_string(*code, got, &len) != MPI_SUCCESS || strcmp(got, text) != 0) {
    *code = class;
    codes_lose_text = 1;
  }
  return 0;
}

/* Returns code, first writing its text to stderr where the MPI library
 * cannot give it (error_code_make). */
static int error_with_text(int code, const char *text) {
  if (codes_lose_text)
    fprintf(stderr, "%s\n", text);
  return code;
}

/* Made once, under arenas_lock (threads of an MPI_THREAD_MULTIPLE program
 * may allocate at once). */
static int error_codes_make_locked(void) {
  static int made;
  if (made)
    return 0;
  if (error_code_make(MPI_ERR_INFO_VALUE, text_bad_memory, &code_bad_memory) != 0 ||
      error_code_make(MPI_ERR_INFO_VALUE, text_bad_fallback, &code_bad_fallback) != 0 ||
      error_code_make(MPI_ERR_INFO_VALUE, text_bad_name, &code_bad_name) != 0 ||
      error_code_make(MPI_ERR_NO_MEM, text_arena_limit, &code_arena_limit) != 0 ||
      error_code_make(MPI_ERR_ARG, text_not_a_block, &code_not_a_block) != 0 ||
      error_code_make(MPI_ERR_INFO_VALUE, text_bad_default, &code_bad_default) != 0 ||
      error_code_make(MPI_ERR_INFO_VALUE, text_bad_window, &code_bad_window) != 0)
    return -1;
  made = 1;
  return 0;
}

static int error_codes_make(void) {
  pthread_mutex_lock(&arenas_lock);
  int rc = error_codes_make_locked();
  pthread_mutex_unlock(&arenas_lock);
  return rc;
}

/* Raises `code` on MPI_COMM_WORLD (whose handler decides: abort by
 * default) and returns it, as MPI_Alloc_mem's own errors do. */
int raise_error(int code) {
  return raise_error_on(MPI_COMM_WORLD, code);
}

int raise_error_on(MPI_Comm comm, int code) {
  MPI_Comm_call_errhandler(comm, code);
  return code;
}

static int info_get(MPI_Info info, const char *key, char *value, int len) {
  int flag = 0;
  if (info == MPI_INFO_NULL || MPI_Info_get(info, key, len - 1, value, &flag) != MPI_SUCCESS)
    return 0;
  return flag;
}

/* MPI 4.1's memory allocation kinds: a comma-separated list of
 * kind[:restrictor...].  The kind "sicm" is ours, its one restrictor a
 * sicm_memory class (sicm:hbm); the other kinds are the MPI library's.
 * 1 with the class in *memory, 0 when no sicm kind is listed, -1 for a
 * sicm kind without exactly one restrictor. */
static int kind_memory(const char *kinds, char *memory, size_t room) {
  for (const char *k = kinds; *k != '\0';) {
    while (*k == ' ' || *k == ',')
      k++;
    size_t len = strcspn(k, ",");
    if (len >= 5 && strncmp(k, "sicm:", 5) == 0) {
      size_t class_len = len - 5;
      while (class_len > 0 && k[5 + class_len - 1] == ' ')
        class_len--;
      if (class_len == 0 || class_len >= room || memchr(k + 5, ':', class_len) != NULL)
        return -1;
      memcpy(memory, k + 5, class_len);
      memory[class_len] = '\0';
      return 1;
    }
    if (len == 4 && strncmp(k, "sicm", 4) == 0)
      return -1;
    k += len;
  }
  return 0;
}

/* The node of a sicm_memory value node:N, or -1 when it is not one. */
static long memory_node(const char *memory) {
  char *end;
  if (strncmp(memory, "node:", 5) != 0 || memory[5] == '\0')
    return -1;
  long node = strtol(memory + 5, &end, 10);
  return *end == '\0' && node >= 0 && node < NODES_BITS ? node : -1;
}

/* Whether a sicm_memory value is one memory_devices() reads ("" is: no
 * memory named). */
static int memory_name_known(const char *memory) {
  static const char *const names[] = {"", "hbm", "dram", "capacity", "high_bw", "low_lat", "large_cap"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(memory, names[i]) == 0)
      return 1;
  return memory_node(memory) >= 0;
}

int hints_parse(hint_get get, const void *src, hints *h) {
  char value[MPI_MAX_INFO_VAL + 1];
  *h = (hints){0};
  if (error_codes_make() != 0)
    return MPI_ERR_INTERN;
  if (get(src, "sicm_memory", value, sizeof value)) {
    if (strlen(value) >= sizeof h->memory)
      return error_with_text(code_bad_memory, text_bad_memory);
    snprintf(h->memory, sizeof h->memory, "%s", value);
    h->placed = 1;
  }
  if (get(src, "mpi_memory_alloc_kinds", value, sizeof value)) {
    char kind[sizeof h->memory];
    int found = kind_memory(value, kind, sizeof kind);
    if (found < 0 || (found && h->placed && strcmp(kind, h->memory) != 0))
      return error_with_text(code_bad_memory, text_bad_memory);
    if (found) {
      snprintf(h->memory, sizeof h->memory, "%s", kind);
      h->placed = 1;
    }
  }
  if (get(src, "sicm_fallback", value, sizeof value)) {
    if (strcmp(value, "null") == 0)
      h->fallback = FALLBACK_NULL;
    else if (strcmp(value, "default") == 0)
      h->fallback = FALLBACK_DEFAULT;
    else if (strcmp(value, "abort") == 0)
      h->fallback = FALLBACK_ABORT;
    else
      return error_with_text(code_bad_fallback, text_bad_fallback);
  }
  if (get(src, "sicm_arena", value, sizeof value)) {
    if (value[0] == '\0' || strlen(value) >= sizeof h->arena)
      return error_with_text(code_bad_name, text_bad_name);
    snprintf(h->arena, sizeof h->arena, "%s", value);
    h->per_call = strcmp(value, "@call") == 0;
    h->placed = 1;
  }
  if (get(src, "sicm_window", value, sizeof value)) {
    if (strcmp(value, "mpi") != 0 && strcmp(value, "arena") != 0)
      return error_with_text(code_bad_window, text_bad_window);
    h->window_mpi = strcmp(value, "mpi") == 0;
    h->window_given = 1;
  }
  if (h->arena[0] != '\0' && h->memory[0] == '\0')
    snprintf(h->memory, sizeof h->memory, "dram");
  return MPI_SUCCESS;
}

static int info_get_of(const void *info, const char *key, char *value, int len) {
  return info_get(*(const MPI_Info *)info, key, value, len);
}

/* The info's hints when it names memory or an arena; otherwise the
 * environment's default for the call, with the info's sicm_fallback when
 * it gives one.  A per-call arena is named here, once per call. */
int hints_read(MPI_Info info, call_kind kind, MPI_Aint size, hints *h) {
  int rc = hints_parse(info_get_of, &info, h);
  const char *var = NULL, *defaults = rc == MPI_SUCCESS && !h->placed ? env_default(kind, &var) : NULL;
  if (defaults != NULL) {
    char value[16];
    int own_fallback = info_get(info, "sicm_fallback", value, sizeof value);
    fallback kept = h->fallback;
    rc = env_keys_known(defaults) ? hints_parse(env_get, defaults, h)
                                  : error_with_text(code_bad_default, text_bad_default);
    /* A bad memory name is the default's fault: said here, with the
     * variable, rather than at the first device look-up. */
    if (rc == MPI_SUCCESS && !memory_name_known(h->memory))
      rc = error_with_text(code_bad_memory, text_bad_memory);
    if (rc != MPI_SUCCESS)
      fprintf(stderr, "libsicm-mpi: %s=\"%s\" is not a default the info keys could give\n", var,
              defaults);
    if (own_fallback)
      h->fallback = kept;
  }
  if (rc == MPI_SUCCESS && h->per_call)
    per_call_name(kind, size, h->arena, sizeof h->arena);
  return rc;
}

/* The devices a sicm_memory value names (0: none on this machine), or -1
 * for a value that is not one. */
static int memory_devices(const char *memory, sicm_device **out, unsigned max) {
  static const struct { const char *name; sicm_memspace space; } spaces[] = {
      {"dram", SICM_MEMSPACE_DEFAULT}, {"high_bw", SICM_MEMSPACE_HIGH_BW},
      {"low_lat", SICM_MEMSPACE_LOW_LAT}, {"large_cap", SICM_MEMSPACE_LARGE_CAP}};
  for (unsigned i = 0; i < sizeof spaces / sizeof spaces[0]; i++)
    if (strcmp(memory, spaces[i].name) == 0) {
      int n = sicm_memspace_devices(spaces[i].space, SICM_INITIATOR_SELF, out, max);
      return n < 0 ? 0 : n > (int)max ? (int)max : n;
    }
  sicm_device_kind kind = strcmp(memory, "hbm") == 0        ? SICM_KIND_HBM
                          : strcmp(memory, "capacity") == 0 ? SICM_KIND_CAPACITY
                                                            : SICM_KIND_UNKNOWN;
  if (kind != SICM_KIND_UNKNOWN) {
    const sicm_device_list *all = sicm_devices();
    unsigned n = 0;
    for (unsigned i = 0; all != NULL && i < all->count && n < max; i++)
      if (all->devices[i].kind == kind)
        out[n++] = &all->devices[i];
    return (int)n;
  }
  long node = memory_node(memory);
  if (node < 0)
    return -1;
  out[0] = sicm_device_of_node((int)node, 0);
  return out[0] != NULL;
}

/* The entry of `key`, or NULL; under arenas_lock. */
static named_arena *entry_find(const char *key) {
  for (unsigned i = 0; i < narenas; i++)
    if (strcmp(arenas[i].name, key) == 0)
      return &arenas[i];
  return NULL;
}

/* A new entry of `key` with a new arena, or NULL with errno; under
 * arenas_lock. */
static named_arena *entry_make(const char *key, sicm_device **devs, int ndevs) {
  if (ndevs == 0) {
    errno = ENODEV;
    return NULL;
  }
  if (narenas == arenas_room) {
    unsigned room = arenas_room ? 2 * arenas_room : 16;
    named_arena *grown = realloc(arenas, room * sizeof *grown);
    if (grown == NULL)
      return NULL;
    arenas = grown;
    arenas_room = room;
  }
  sicm_arena a = sicm_arena_create_devices(0, devs, (unsigned)ndevs, 0);
  if (a == NULL)
    return NULL;
  /* The arena's own name, for reports and the placer: the sicm_arena
   * name, or mpi:MEMORY; cut to libsicm's limit, left unnamed where the
   * name has characters libsicm refuses. */
  char label[SICM_ARENA_NAME_MAX];
  const char *colon = strchr(key, ':');
  const char *prefix = strncmp(key, "name:", 5) == 0 ? "" : "mpi:";
  snprintf(label, sizeof label, "%s%.*s", prefix, (int)(sizeof label - 1 - strlen(prefix)),
           colon ? colon + 1 : key);
  int saved = errno;
  sicm_arena_set_name(a, label);
  errno = saved;
  named_arena *e = &arenas[narenas++];
  snprintf(e->name, sizeof e->name, "%s", key);
  e->arena = a;
  e->blocks = 0;
  return e;
}

/* Drops one block (or allocation in progress) of the arena; the last one
 * destroys it and forgets its name.  Under arenas_lock. */
static void entry_release(named_arena *e) {
  if (--e->blocks > 0)
    return;
  sicm_arena_destroy(e->arena);
  *e = arenas[--narenas];
}

/* The arena for the hints (the named one, else the memory's), created on
 * first use, with one block reserved in it for the caller: allocate, then
 * arena_done().  NULL with errno ENODEV when the memory has no device. */
static sicm_arena arena_for(const hints *h, sicm_device **devs, int ndevs) {
  char key[sizeof arenas[0].name];
  snprintf(key, sizeof key, "%s%s", h->arena[0] ? "name:" : "memory:",
           h->arena[0] ? h->arena : h->memory);
  pthread_mutex_lock(&arenas_lock);
  named_arena *e = entry_find(key);
  if (e == NULL)
    e = entry_make(key, devs, ndevs);
  sicm_arena a = e ? e->arena : NULL;
  if (e != NULL)
    e->blocks++;
  pthread_mutex_unlock(&arenas_lock);
  return a;
}

/* Ends what arena_for() reserved: kept (the block was handed out) or
 * released (the allocation failed, or the block was freed). */
static void arena_done(sicm_arena a, int kept) {
  if (kept)
    return;
  pthread_mutex_lock(&arenas_lock);
  for (unsigned i = 0; i < narenas; i++)
    if (arenas[i].arena == a) {
      entry_release(&arenas[i]);
      break;
    }
  pthread_mutex_unlock(&arenas_lock);
}

/* Whether a is an arena hints made (not one of the program's own). */
static int arena_is_ours(sicm_arena a) {
  pthread_mutex_lock(&arenas_lock);
  int ours = 0;
  for (unsigned i = 0; i < narenas && !ours; i++)
    ours = arenas[i].arena == a;
  pthread_mutex_unlock(&arenas_lock);
  return ours;
}

static int library_start(void) {
  pthread_mutex_lock(&arenas_lock);
  int rc = initialized || sicm_init_with(SICM_INIT_SHARE_TOPOLOGY) == 0 ? 0 : -1;
  initialized |= rc == 0;
  pthread_mutex_unlock(&arenas_lock);
  return rc;
}

/* The devices of the hints' memory into devs; their count (0: none), or an
 * error code to raise. */
int hints_devices(const hints *h, sicm_device **devs, int *ndevs) {
  if (library_start() != 0) {
    fprintf(stderr, "libsicm-mpi: sicm_init failed: %s\n", sicm_error_detail());
    return MPI_ERR_INTERN;
  }
  *ndevs = memory_devices(h->memory, devs, SICM_ARENA_DEVICES_MAX);
  return *ndevs < 0 ? error_with_text(code_bad_memory, text_bad_memory) : MPI_SUCCESS;
}

/* A block of `size` bytes from the hinted arena, for `caller`.  NULL with
 * *code the code to raise, or with *code MPI_SUCCESS where the fallback
 * (default) hands the request to the MPI library; the fallback abort
 * ends the job here. */
void *hinted_block(const hints *h, MPI_Aint size, const char *caller, int *code) {
  sicm_device *devs[SICM_ARENA_DEVICES_MAX];
  int ndevs;
  if ((*code = hints_devices(h, devs, &ndevs)) != MPI_SUCCESS)
    return NULL;
  if (size < 0) {
    *code = MPI_ERR_SIZE;
    return NULL;
  }
  sicm_arena a = arena_for(h, devs, ndevs);
  if (a == NULL && errno == EAGAIN) { /* libsicm's arena limit: not a lack of memory */
    *code = error_with_text(code_arena_limit, text_arena_limit);
    return NULL;
  }
  const char *why = a == NULL && errno == ENODEV ? "no such device here" : NULL;
  void *p = a ? sicm_arena_alloc(a, size > 0 ? (size_t)size : 1) : NULL;
  if (p != NULL && blocks_born(p) != 0) {
    sicm_free(p);
    p = NULL;
  }
  if (a != NULL)
    arena_done(a, p != NULL);
  if (p != NULL)
    return p;
  if (h->fallback == FALLBACK_ABORT) {
    fprintf(stderr, "libsicm-mpi: %s of %lld bytes in sicm_memory=%s: %s\n", caller,
            (long long)size, h->memory, why ? why : sicm_error_detail());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  *code = h->fallback == FALLBACK_DEFAULT ? MPI_SUCCESS : MPI_ERR_NO_MEM;
  return NULL;
}

int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr) {
  hints h;
  int rc = hints_read(info, CALL_ALLOC_MEM, size, &h);
  if (rc != MPI_SUCCESS)
    return raise_error(rc);
  if (!h.placed) {
    rc = PMPI_Alloc_mem(size, info, baseptr);
    if (rc == MPI_SUCCESS)
      blocks_reused(*(void **)baseptr);
    return rc;
  }
  void *p = hinted_block(&h, size, "MPI_Alloc_mem", &rc);
  if (p != NULL) {
    *(void **)baseptr = p;
    return MPI_SUCCESS;
  }
  if (rc != MPI_SUCCESS)
    return raise_error(rc);
  rc = PMPI_Alloc_mem(size, info, baseptr);
  if (rc == MPI_SUCCESS)
    blocks_reused(*(void **)baseptr);
  return rc;
}

/* Memory of a libsicm arena is never the MPI library's to free.  A block
 * of the arenas hints made is freed once: an address that is not one
 * live (freed already, or inside a block) is refused with MPI_ERR_ARG and
 * nothing changes, instead of freeing a neighbour or destroying the arena
 * under its live blocks.  Blocks of the program's own arenas are checked
 * as sicm_free() checks them. */
int MPI_Free_mem(void *base) {
  sicm_arena a = base != NULL ? sicm_arena_lookup(base) : NULL;
  int state = base != NULL ? blocks_dies(base) : BLOCK_UNKNOWN;
  if (a == NULL && state == BLOCK_FREED)
    check_stop(base, "freed already (a double free); its arena is gone");
  if (a == NULL)
    return PMPI_Free_mem(base);
  int saved = errno;
  size_t usable = state == BLOCK_UNKNOWN ? sicm_usable_size(base) : 0;
  errno = saved;
  if (state != BLOCK_LIVE && (state == BLOCK_FREED || usable == 0 || arena_is_ours(a))) {
    check_stop(base, state == BLOCK_FREED ? "not a live block: freed already (a double free)"
                                          : "no block starts there (an interior pointer)");
    int code = error_codes_make() == 0 ? code_not_a_block : MPI_ERR_ARG;
    return raise_error(error_with_text(code, text_not_a_block));
  }
  if (state == BLOCK_LIVE)
    report_block_end(a, NULL, NULL, sicm_usable_size(base));
  sicm_free_named(base, "MPI_Free_mem");
  if (state == BLOCK_LIVE)
    arena_done(a, 0); /* an arena of ours: its last block destroys it */
  return MPI_SUCCESS;
}
