/* SPDX-License-Identifier: BSD-3-Clause */
/* sicm_upkeep.h: the allocator's upkeep — moving a block out of a slab
 * that free space left sparse, and the background threads that give free
 * pages back without the program's threads.  Included by sicm.h; including
 * it alone includes sicm.h first.  Same conventions as sicm.h: -1 or NULL
 * on failure, errno as documented, words in sicm_error_detail(). */
#ifndef SICM_UPKEEP_H
#define SICM_UPKEEP_H

#include "sicm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Upkeep: defragmentation and background threads                           */
/* ------------------------------------------------------------------------ */

/* Move a small block of a private arena (shared ones: never) when it lies
 * in a slab less used than the average slab of its size class in its
 * arena: a new block of the same size is taken, with no thread's cache
 * between, from the fuller slabs, the contents copied, and ptr freed; a
 * program that moves each of its blocks this way lets sparse slabs empty
 * and their pages go back.  Returns the new block (ptr is then invalid),
 * or NULL when the block stays where it is — not worth it, a large block,
 * ptr NULL, not from an arena or not the start of a block (an address
 * inside one), or no room for the new block — with errno unchanged: NULL
 * is no failure.  As for sicm_free(), ptr must not be a block freed
 * already; the checking mode (SICM_CHECK) stops the process on one, and
 * on an address inside a block, with the line sicm_free() would print. */
SICM_API void *sicm_defrag_reallocate(void *ptr);

/* Start (enable 1) or stop (0) the upkeep thread, one per process, named
 * sicm_upkeep, which gives back the free pages of every private arena as
 * they age (the allocator's decay), also while the program's threads
 * neither allocate nor free.  It blocks every signal.  Off by default;
 * the last sicm_fini() stops it, and a child of fork() starts with it
 * off.  Any thread may call this at any time, while others create and
 * destroy arenas.  Returns 0, or -1 with errno EINVAL (enable neither 0
 * nor 1) or EAGAIN (the thread could not be started). */
SICM_API int sicm_background_threads(int enable);

#ifdef __cplusplus
}
#endif

#endif /* SICM_UPKEEP_H */
