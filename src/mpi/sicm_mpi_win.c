/* SPDX-License-Identifier: BSD-3-Clause */
/* sicm_mpi_win.c: libsicm-mpi's windows.  MPI_Win_allocate_shared places
 * each rank's part of a node-shared window on the hinted device;
 * MPI_Win_allocate makes its window over memory of the hinted arena. */
#define _GNU_SOURCE
#include <errno.h>
#include <mpi.h>
#include <numaif.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sicm.h"
#include "sicm_autoplace.h"
#include "sicm_mpi.h"

#define NODES_BITS 1024

static int mask_has(const unsigned long *mask, int node) {
  return node >= 0 && node < NODES_BITS &&
         (mask[node / (8 * sizeof(unsigned long))] >> (node % (8 * sizeof(unsigned long)))) & 1;
}

/* mbind(MPOL_MF_MOVE) moves what it can and says nothing of a page it could
 * not (MPICH keeps its own words at the end of the segment, in a page one
 * rank touched first): each page of [first, end) still off the mask's
 * nodes moves to `node` with move_pages, which answers per page.  0, or -1
 * with errno EIO when a page stays off. */
static int window_pages_settle(char *first, char *end, const unsigned long *mask, int node) {
  long page = sysconf(_SC_PAGESIZE);
  for (char *p = first; p < end; p += page) {
    void *addr = p;
    int status = -1, target = node;
    if (move_pages(0, 1, &addr, NULL, &status, 0) != 0 || mask_has(mask, status))
      continue;
    if ((move_pages(0, 1, &addr, &target, &status, MPOL_MF_MOVE_ALL) != 0 ||
         status != node) &&
        (move_pages(0, 1, &addr, &target, &status, MPOL_MF_MOVE) != 0 || status != node)) {
      errno = EIO;
      return -1;
    }
  }
  return 0;
}

static int node_off_mask(void *mask, int node) { return !mask_has(mask, node); }

/* Whether a page of [first, end) that this process maps is on a node off
 * mask (the pages mbind(MPOL_MF_MOVE) would move); a failing query says
 * yes. */
static int range_off_mask(char *first, char *end, const unsigned long *mask) {
  return range_nodes_each(first, (size_t)(end - first), node_off_mask, (void *)mask) != 0;
}

/* Places this rank's part of a node-shared window on the nodes of devs:
 * the range's policy (shared memory objects keep it for every process),
 * then each page faulted in here under a thread policy naming the same
 * nodes (a window backed by a file in a disk file system takes its page
 * cache pages from the faulting thread's policy, not the range's). */
static int window_place(char *base, MPI_Aint size, sicm_device **devs, int ndevs) {
  unsigned long mask[NODES_BITS / (8 * sizeof(unsigned long))] = {0};
  for (int i = 0; i < ndevs; i++)
    mask[devs[i]->node / (8 * sizeof(unsigned long))] |= 1ul << (devs[i]->node % (8 * sizeof(unsigned long)));
  long page = sysconf(_SC_PAGESIZE);
  char *first = (char *)((uintptr_t)base & ~(uintptr_t)(page - 1));
  char *end = (char *)(((uintptr_t)base + (uintptr_t)size + (uintptr_t)page - 1) & ~(uintptr_t)(page - 1));
  if (size == 0)
    return 0;
  /* Pages MPI touched already move too; those other ranks map as well
   * only with CAP_SYS_NICE (MOVE_ALL).  The policy comes first, alone: a
   * call that may move costs the kernel a drain of every CPU's page lists
   * and an RCU grace period even with nothing to move, and the query
   * after it sees every page that came before. */
  if (mbind(first, (size_t)(end - first), MPOL_BIND, mask, NODES_BITS, 0) != 0)
    return -1;
  if (range_off_mask(first, end, mask) &&
      mbind(first, (size_t)(end - first), MPOL_BIND, mask, NODES_BITS, MPOL_MF_MOVE_ALL) != 0 &&
      (errno != EPERM ||
       mbind(first, (size_t)(end - first), MPOL_BIND, mask, NODES_BITS, MPOL_MF_MOVE) != 0))
    return -1;
  int old_mode;
  unsigned long old_mask[NODES_BITS / (8 * sizeof(unsigned long))];
  if (get_mempolicy(&old_mode, old_mask, NODES_BITS, NULL, 0) != 0 ||
      set_mempolicy(MPOL_BIND, mask, NODES_BITS) != 0)
    return -1;
  /* Only this rank's bytes are written (its neighbours may share the edge
   * pages), and with what they hold: a read-write of the same value. */
  for (uintptr_t p = (uintptr_t)base; p < (uintptr_t)base + (uintptr_t)size;
       p = (p & ~(uintptr_t)(page - 1)) + (uintptr_t)page) {
    volatile char *c = (volatile char *)p;
    *c = *c;
  }
  set_mempolicy(old_mode, old_mode == MPOL_DEFAULT ? NULL : old_mask, NODES_BITS);
  return window_pages_settle(first, end, mask, devs[0]->node);
}

/* This rank's devices for a window whose memory the MPI library makes
 * (*ndevs 0: the MPI library's memory, unplaced); MPI_SUCCESS or the code
 * to raise. */
static int window_devices(const hints *h, sicm_device **devs, int *ndevs) {
  *ndevs = 0;
  if (!h->placed)
    return MPI_SUCCESS;
  int rc = hints_devices(h, devs, ndevs);
  if (rc != MPI_SUCCESS || *ndevs > 0 || h->fallback == FALLBACK_DEFAULT)
    return rc;
  if (h->fallback == FALLBACK_ABORT) {
    fprintf(stderr, "libsicm-mpi: a window in sicm_memory=%s: no such device here\n",
            h->memory);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return MPI_ERR_NO_MEM;
}

/* Collective: ranks may give different hints, bad ones or none, and one
 * rank's failure must leave no other inside the MPI's collective call.
 * Every rank first agrees, in one reduction over comm, whether any gave
 * hints (none: the MPI's call alone, untouched) and whether any failed
 * (then every rank fails, each with its own code or MPI_ERR_NO_MEM). */
int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                            void *baseptr, MPI_Win *win) {
  hints h;
  sicm_device *devs[SICM_ARENA_DEVICES_MAX];
  int ndevs = 0, rc = hints_read(info, CALL_WIN_ALLOCATE_SHARED, size, &h);
  if (rc == MPI_SUCCESS)
    rc = window_devices(&h, devs, &ndevs);
  int mine[2] = {rc != MPI_SUCCESS || h.placed, rc != MPI_SUCCESS}, any[2];
  if (PMPI_Allreduce(mine, any, 2, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS)
    return raise_error_on(comm, MPI_ERR_COMM);
  if (!any[0])
    return PMPI_Win_allocate_shared(size, disp_unit, info, comm, baseptr, win);
  if (any[1])
    return raise_error_on(comm, rc != MPI_SUCCESS ? rc : MPI_ERR_NO_MEM);
  rc = PMPI_Win_allocate_shared(size, disp_unit, info, comm, baseptr, win);
  if (rc != MPI_SUCCESS) /* the MPI's own failure: it agreed on it, and raised it */
    return rc;
  int placed = ndevs == 0 || window_place(*(char **)baseptr, size, devs, ndevs) == 0;
  int err = errno, all = 0;
  if (!placed)
    fprintf(stderr, "libsicm-mpi: placing the shared window in sicm_memory=%s failed: %s\n",
            h.memory, strerror(err));
  /* Every rank fails together, or none: freeing the window is collective. */
  if (PMPI_Allreduce(&placed, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS || !all) {
    PMPI_Win_free(win);
    return raise_error_on(comm, MPI_ERR_NO_MEM);
  }
  return MPI_SUCCESS;
}

/* MPI_Win_allocate with hints: each rank's memory comes from the hinted
 * arena (or, where a rank gave no hints, from PMPI_Alloc_mem), and the
 * window is PMPI_Win_create over it.  An attribute holds the memory; its
 * delete callback, which MPI_Win_free runs, frees it.  The window still
 * reports MPI_WIN_FLAVOR_ALLOCATE (MPI_Win_get_attr). */
static pthread_mutex_t win_lock = PTHREAD_MUTEX_INITIALIZER;
static int win_keyval = MPI_KEYVAL_INVALID; /* under win_lock */
static int win_flavor_allocate = MPI_WIN_FLAVOR_ALLOCATE;

static int win_memory_free(MPI_Win win, int keyval, void *memory, void *extra) {
  (void)win, (void)keyval, (void)extra;
  return MPI_Free_mem(memory);
}

static int win_keyval_get(void) {
  pthread_mutex_lock(&win_lock);
  if (win_keyval == MPI_KEYVAL_INVALID &&
      MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, win_memory_free, &win_keyval, NULL) != MPI_SUCCESS)
    win_keyval = MPI_KEYVAL_INVALID;
  int keyval = win_keyval;
  pthread_mutex_unlock(&win_lock);
  return keyval;
}

/* This rank's memory for a hinted window; MPI_SUCCESS or the code to raise. */
static int win_memory_take(MPI_Aint size, MPI_Info info, const hints *h, void **base) {
  *base = NULL;
  if (!h->placed)
    return PMPI_Alloc_mem(size, MPI_INFO_NULL, base);
  int rc;
  if ((*base = hinted_block(h, size, "MPI_Win_allocate", &rc)) != NULL)
    return MPI_SUCCESS;
  return rc != MPI_SUCCESS ? rc : PMPI_Alloc_mem(size, info, base);
}

/* sicm_window=mpi: the window is the MPI library's own, made by
 * PMPI_Win_allocate (for the ranks of a node, its shared-memory path,
 * where the others load and store into this rank's part directly), and
 * this rank's part becomes a fixed arena on the hinted device, which
 * sicm_arena_set_device() moves whole; MPI_Win_free destroys it through
 * an attribute.  Each rank's part is asked on pages of its own
 * (alloc_shared_noncontig) so that no page holds two ranks' parts.  A part
 * smaller than a page, or one libsicm cannot take as a fixed arena, is
 * bound to the device as MPI_Win_allocate_shared's parts are: placed, not
 * movable; so are the part's first and last pages, which a fixed arena
 * leaves out when they are partial. */
static int fixed_keyval = MPI_KEYVAL_INVALID; /* under win_lock */

typedef struct window_part {
  sicm_arena arena; /* NULL: the part was bound in place */
  void *base;
  size_t size;
  char name[NAME_MAX_LEN];
} window_part;

static int win_fixed_free(MPI_Win win, int keyval, void *value, void *extra) {
  (void)win, (void)keyval, (void)extra;
  window_part *part = value;
  report_block_end(part->arena, part->name, part->base, part->size);
  if (part->arena != NULL)
    sicm_arena_destroy(part->arena);
  free(part);
  return MPI_SUCCESS;
}

/* The part's whole pages as a fixed arena on devs[0], named; NULL when
 * there is none, or libsicm cannot take them (the caller binds them). */
static sicm_arena part_arena_make(char *base, MPI_Aint size, sicm_device **devs,
                                  const char *name) {
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), start = (uintptr_t)base;
  if (((start + page - 1) & ~(page - 1)) + page > start + (uintptr_t)size)
    return NULL; /* no whole page */
  sicm_arena a = sicm_arena_create_fixed(base, (size_t)size, devs[0]);
  if (a != NULL)
    sicm_arena_set_name(a, name);
  return a;
}

/* This rank's part on devs: its whole pages a fixed arena, its partial
 * first and last pages (partly MPI's, or empty) bound, as is the whole
 * part when there is no arena; an attribute keeps what MPI_Win_free must
 * report and destroy.  0, or -1. */
static int win_part_place(MPI_Win win, char *base, MPI_Aint size, const hints *h,
                          sicm_device **devs, int ndevs) {
  if (!h->placed || size == 0 || ndevs == 0)
    return 0;
  pthread_mutex_lock(&win_lock);
  if (fixed_keyval == MPI_KEYVAL_INVALID &&
      MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, win_fixed_free, &fixed_keyval, NULL) !=
          MPI_SUCCESS)
    fixed_keyval = MPI_KEYVAL_INVALID;
  int keyval = fixed_keyval;
  pthread_mutex_unlock(&win_lock);
  window_part *part = keyval == MPI_KEYVAL_INVALID ? NULL : malloc(sizeof *part);
  if (part == NULL)
    return window_place(base, size, devs, ndevs);
  *part = (window_part){.base = base, .size = (size_t)size};
  snprintf(part->name, sizeof part->name, "%s", h->per_call ? h->arena : "mpi:win");
  part->arena = part_arena_make(base, size, devs, part->name);
  int rc;
  if (part->arena == NULL) {
    rc = window_place(base, size, devs, ndevs);
  } else {
    /* The arena holds a whole page, so the edges are apart. */
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), start = (uintptr_t)base;
    uintptr_t end = start + (uintptr_t)size, first = (start + page - 1) & ~(page - 1);
    uintptr_t tail = end & ~(page - 1);
    rc = first > start ? window_place(base, (MPI_Aint)(first - start), devs, ndevs) : 0;
    if (rc == 0 && tail < end)
      rc = window_place((char *)tail, (MPI_Aint)(end - tail), devs, ndevs);
  }
  if (rc == 0 && PMPI_Win_set_attr(win, keyval, part) == MPI_SUCCESS)
    return 0;
  if (part->arena != NULL)
    sicm_arena_destroy(part->arena);
  free(part);
  return -1;
}

/* The MPI library may unmap a window's memory before it deletes the
 * window's attributes (Open MPI does), and a fixed arena's range must stay
 * mapped until the arena is destroyed: the part's attribute is deleted,
 * which reports and destroys the arena, before the window is freed. */
int MPI_Win_free(MPI_Win *win) {
  pthread_mutex_lock(&win_lock);
  int keyval = fixed_keyval;
  pthread_mutex_unlock(&win_lock);
  void *part = NULL;
  int flag = 0;
  if (win != NULL && *win != MPI_WIN_NULL && keyval != MPI_KEYVAL_INVALID &&
      PMPI_Win_get_attr(*win, keyval, &part, &flag) == MPI_SUCCESS && flag)
    PMPI_Win_delete_attr(*win, keyval);
  return PMPI_Win_free(win);
}

static int win_allocate_mpi(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                            void *baseptr, MPI_Win *win, const hints *h, sicm_device **devs,
                            int ndevs) {
  MPI_Info own;
  if (info == MPI_INFO_NULL ? PMPI_Info_create(&own) : PMPI_Info_dup(info, &own))
    return raise_error_on(comm, MPI_ERR_INTERN);
  PMPI_Info_set(own, "alloc_shared_noncontig", "true");
  int rc = PMPI_Win_allocate(size, disp_unit, own, comm, baseptr, win);
  PMPI_Info_free(&own);
  if (rc != MPI_SUCCESS) /* the MPI's own failure: it agreed on it, and raised it */
    return rc;
  int placed = win_part_place(*win, *(char **)baseptr, size, h, devs, ndevs) == 0, all = 0;
  if (!placed)
    fprintf(stderr, "libsicm-mpi: placing the window in sicm_memory=%s failed: %s\n", h->memory,
            strerror(errno));
  /* Every rank fails together, or none: freeing the window is collective. */
  if (PMPI_Allreduce(&placed, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS || !all) {
    PMPI_Win_free(win);
    return raise_error_on(comm, MPI_ERR_NO_MEM);
  }
  return MPI_SUCCESS;
}

/* Without a sicm_window key, a window is the MPI library's own unless the
 * placer runs: it ranks and moves only arenas whose memory libsicm owns
 * (a fixed arena is the caller's memory), and a window of MPI_Win_create
 * over an arena has every access, a peer's on the node too, carried out
 * through the target's page tables, where the placer measures heat. */
static int window_mpi_wanted(const hints *h) {
  sicm_autoplace_totals placer;
  if (h->window_given)
    return h->window_mpi;
  return !(sicm_autoplace_get_totals(&placer) == 0 && placer.running);
}

/* Hints may differ between ranks, and one rank's failure must not leave the
 * others inside PMPI_Win_create: every call first agrees, in one
 * reduction over comm, whether any rank has hints, whether any failed,
 * and whether any wants its memory from an arena (sicm_window=arena, the
 * placer running, or a named arena, which windows share): if none does,
 * the window is the MPI library's own (win_allocate_mpi). */
int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                     MPI_Win *win) {
  hints h;
  int rc = hints_read(info, CALL_WIN_ALLOCATE, size, &h);
  if (rc == MPI_SUCCESS && h.placed && size < 0)
    rc = MPI_ERR_SIZE;
  int from_arena =
      h.placed && !(window_mpi_wanted(&h) && (h.per_call || h.arena[0] == '\0'));
  /* A window the MPI library may make learns its devices first: a bad
   * memory name fails here, on its own rank, as the arena's would. */
  sicm_device *devs[SICM_ARENA_DEVICES_MAX];
  int ndevs = 0;
  if (rc == MPI_SUCCESS && h.placed && !from_arena)
    rc = window_devices(&h, devs, &ndevs);
  int mine[3] = {rc != MPI_SUCCESS || h.placed, rc != MPI_SUCCESS, from_arena}, any[3];
  if (PMPI_Allreduce(mine, any, 3, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS)
    return raise_error_on(comm, MPI_ERR_COMM);
  if (!any[0])
    return PMPI_Win_allocate(size, disp_unit, info, comm, baseptr, win);
  if (!any[1] && !any[2])
    return win_allocate_mpi(size, disp_unit, info, comm, baseptr, win, &h, devs, ndevs);
  void *base = NULL;
  int keyval = win_keyval_get();
  if (rc == MPI_SUCCESS && !any[1])
    rc = keyval == MPI_KEYVAL_INVALID ? MPI_ERR_INTERN : win_memory_take(size, info, &h, &base);
  mine[1] = rc != MPI_SUCCESS;
  if (PMPI_Allreduce(&mine[1], &any[1], 1, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS)
    any[1] = 1;
  if (!any[1] && (rc = PMPI_Win_create(base, size, disp_unit, info, comm, win)) == MPI_SUCCESS) {
    if ((rc = PMPI_Win_set_attr(*win, keyval, base)) != MPI_SUCCESS) {
      PMPI_Win_free(win); /* the memory stays ours: freed below */
    } else {
      *(void **)baseptr = base;
      return MPI_SUCCESS;
    }
  }
  if (base != NULL)
    MPI_Free_mem(base);
  return raise_error_on(comm, rc != MPI_SUCCESS ? rc : MPI_ERR_NO_MEM);
}

/* A window of MPI_Win_allocate with hints is one of MPI_Win_create to the
 * MPI library: its flavour is given back as the program asked for it. */
int MPI_Win_get_attr(MPI_Win win, int keyval, void *value, int *flag) {
  int rc = PMPI_Win_get_attr(win, keyval, value, flag);
  if (rc != MPI_SUCCESS || keyval != MPI_WIN_CREATE_FLAVOR || !*flag)
    return rc;
  pthread_mutex_lock(&win_lock);
  int ours_keyval = win_keyval;
  pthread_mutex_unlock(&win_lock);
  void *memory;
  int ours = 0;
  if (ours_keyval != MPI_KEYVAL_INVALID &&
      PMPI_Win_get_attr(win, ours_keyval, &memory, &ours) == MPI_SUCCESS && ours)
    *(int **)value = &win_flavor_allocate;
  return MPI_SUCCESS;
}
