/* SPDX-License-Identifier: BSD-3-Clause */
/* sicm_shared.h: shared arenas, one heap in POSIX shared memory for the
 * processes of a node (MPI ranks, a server and its workers).  Included by
 * sicm.h; including it alone includes sicm.h first.  Same conventions as
 * sicm.h: -1 or NULL on failure, errno as documented, words in
 * sicm_error_detail(). */
#ifndef SICM_SHARED_H
#define SICM_SHARED_H

#include "sicm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Shared arenas: one heap in POSIX shared memory, for processes of a node  */
/* ------------------------------------------------------------------------ */

/* A shared arena is a POSIX shared-memory object holding a whole heap — its
 * free lists, its statistics and its lock — mapped at the same virtual
 * address in every process that attaches it, so a pointer stored in the
 * arena is valid in all of them.  Any process may free, realloc or look up
 * any block; memory one process frees is reused by the others.
 * sicm_arena_alloc(), sicm_arena_aligned_alloc(), sicm_arena_calloc(),
 * sicm_realloc(), sicm_arena_realloc(), sicm_free(), sicm_usable_size(),
 * sicm_arena_lookup(), sicm_arena_size(), sicm_arena_get_stats(),
 * sicm_arena_residency(), sicm_arena_get_device(s)() and
 * sicm_arena_set_device(s)() all work on it.  sicm_arena_destroy() detaches
 * it (as sicm_arena_detach()).
 *
 * A block below 8 KiB that a thread frees waits in that thread's cache for
 * its next allocation of the size (no lock taken): up to 1/1024 of the
 * arena, at most 256 KiB, per thread.  Until it leaves the cache the heap
 * counts it as used (sicm_arena_get_stats(), sicm_arena_check()) and
 * other processes cannot have it; freeing it again fails (EINVAL).  A
 * thread's cache goes back to the heap when it overflows, when the thread
 * exits, when one of its allocations finds the heap full, when it calls
 * sicm_arena_check(), and when the process detaches the arena.  The cached
 * blocks of a process that dies, at any point, go back at the next repair,
 * sicm_arena_check(), sicm_arena_attach() or allocation that finds the
 * heap full, from any process.  A forked child starts with empty caches.
 *
 * The heap survives the death of a process at any point, even while it
 * holds the heap's lock in the middle of an update: the next process to
 * take the lock rolls back the interrupted update and rebuilds the free
 * lists.  Blocks the dead process had allocated stay allocated; no block of
 * a surviving process is lost or changed.  A lock word that names a holder
 * that is gone (checked against the pid, start time and pid namespace the
 * holder records, after 100 ms of waiting; 1 s for a lock word with no
 * matching record) is repaired the same way; a holder in another pid
 * namespace cannot be checked and is waited on.
 *
 * Every process treats the segment as untrusted: its bounds are read once
 * at attach, and every offset, size and list link read from it is checked
 * before use.  Calls on a damaged heap fail with errno EUCLEAN and
 * sicm_error_detail() names the field (sicm_arena_alloc(),
 * sicm_arena_realloc(), sicm_realloc(), sicm_free() and the others above);
 * a block whose own header is damaged is refused as not a block (EINVAL).
 * A heap whose lock holder died and whose journal or blocks cannot be
 * repaired stays refused (ENOTRECOVERABLE) for every process.
 *
 * Names are "/" followed by 1 to 200 characters from [A-Za-z0-9._-], not
 * "/." or "/.."; the object appears as /dev/shm/<name>. */

/* Create the shared arena `name` of `size` bytes (rounded up to the page
 * size; 12 KiB of it hold the heap's header, and each block has 16 bytes of
 * header) with every page on `dev` (strict binding),
 * and attach it.  `mode` gives the object's permissions (0: 0600).  The
 * address is the middle of the largest free range of this process's address
 * space, aligned to 16 GiB; attachers map the arena there.
 * Returns the arena, or NULL with errno
 *   EPERM   library not initialized;
 *   EINVAL  bad name, size below 64 KiB or above 64 TiB, mode beyond 0777,
 *           dev NULL or not from sicm_devices();
 *   ENOTSUP dev is a hugetlb device;
 *   EEXIST  a shared arena of that name exists already, or another
 *           process is creating it now (a name left by a creator that died
 *           before finishing is reclaimed, not refused);
 *   ENOSPC  /dev/shm (a tmpfs, whose pages the arena gets as they are
 *           first touched) has less free space than `size`;
 *   ENOMEM  no free address range of that size, or out of memory;
 *   EACCES  permission denied by /dev/shm;
 *   EAGAIN  every arena slot is in use;
 *   or the errno of shm_open(3), ftruncate(2) or mmap(2). */
SICM_API sicm_arena sicm_arena_create_shared(const char *name, size_t size, sicm_device *dev,
                                             unsigned mode);

/* Attach the shared arena `name`, created by this or another process, at
 * the address its creator chose.  Attaching an arena this process has
 * attached already returns the same handle.  Returns the arena, or NULL
 * with errno
 *   EPERM    library not initialized;
 *   EINVAL   bad name;
 *   ENOENT   no shared arena of that name, or only one its creator
 *            abandoned: it died before finishing it (sicm_error_detail()
 *            names its pid; creating the name again reclaims it);
 *   EACCES   the object's mode does not let this process read and write it;
 *   EPROTO   the object is not a libsicm shared arena, one of another
 *            version or layout, or its header places it where no process
 *            can map it (base 0, unaligned, beyond the user address space)
 *            or its heap anywhere but the whole object
 *            (sicm_error_detail() says which);
 *   EUCLEAN  its recorded memory policy is not one libsicm writes;
 *   EBADMSG  the object is shorter than its header says (truncated);
 *   EEXIST   the arena's address range is already mapped in this process
 *            (sicm_error_detail() names the range and what holds it);
 *            nothing is unmapped or changed;
 *   EAGAIN   its creator, still alive, has not finished initializing it
 *            (after 2 s), or every arena slot is in use.
 * Threads attaching one arena at once all get the same handle. */
SICM_API sicm_arena sicm_arena_attach(const char *name);

/* Detach a shared arena from this process: its pointers become invalid
 * here; the arena and its blocks live on for the other processes, and for a
 * later attach, until it is unlinked and every process has detached.
 * Returns 0, or -1 with errno EINVAL (not a shared arena handle) or ESTALE
 * (already detached or destroyed). */
SICM_API int sicm_arena_detach(sicm_arena sa);

/* Remove the name of a shared arena (shm_unlink(3)): no process can attach
 * it any more; processes attached keep using it.  Returns 0, or -1 with
 * errno EINVAL (bad name), ENOENT (no such arena) or EACCES. */
SICM_API int sicm_arena_unlink(const char *name);

/* A file-backed arena: the same heap as a shared arena, `size` bytes of it
 * (rounded up to pages; the arena's bound), in a file of no name in
 * directory `dir` — tmpfs, a DAX file system holding persistent or CXL
 * memory, or any other — so that its memory is that file system's, and
 * nothing is left behind when the arena is destroyed or the process ends,
 * however it ends.  Private to this process (no name to attach); every call
 * of a shared arena works on it, sicm_arena_destroy() releases it.  Pages
 * are bound to `dev` where the file system honours memory policies (tmpfs),
 * and sicm_arena_set_device() moves them there; elsewhere the file system
 * places them and a move fails with the kernel's errno.
 * Returns the arena, or NULL with errno
 *   EPERM   library not initialized;
 *   EINVAL  dir NULL or "", size below 64 KiB or above 64 TiB, dev NULL or
 *           not from sicm_devices();
 *   ENOTSUP dev is a hugetlb device;
 *   ENOSPC  the file system has less free space than `size`;
 *   ENOMEM  no free address range of that size;
 *   EAGAIN  every arena slot is in use;
 *   or the errno of statvfs(2), open(2), ftruncate(2) or mmap(2) for dir
 *   (ENOENT, ENOTDIR, EACCES, ...). */
SICM_API sicm_arena sicm_arena_create_file(const char *dir, size_t size, sicm_device *dev);

/* What sicm_arena_check() found in a shared arena's heap. */
typedef struct sicm_heap_report {
  size_t blocks_used, blocks_free;
  size_t bytes_used, bytes_free;   /* block sizes, headers included */
  size_t largest_free;             /* the largest allocation sure to succeed now */
  uint64_t repairs;                /* times a dead process's lock was repaired */
  uint64_t updates_undone;         /* of those, updates interrupted and rolled back */
} sicm_heap_report;

/* Verify every invariant of a shared arena's heap under its lock: the
 * blocks tile the heap, boundary tags agree, no two free blocks are
 * adjacent, each free list holds exactly the free blocks of its size class,
 * the bitmaps match the lists, the statistics match the blocks, every
 * cached block names a process that caches, and no update is pending.
 * First the calling thread's cache and the caches of processes that died
 * go back to the heap; blocks in other live threads' caches count as used.
 * Fills `report` when not NULL.  Returns 0, or -1 with
 * errno EINVAL (not a shared arena), ESTALE, or EUCLEAN (an invariant does
 * not hold: sicm_error_detail() says which, and where). */
SICM_API int sicm_arena_check(sicm_arena sa, sicm_heap_report *report);

#ifdef __cplusplus
}
#endif

#endif /* SICM_SHARED_H */
