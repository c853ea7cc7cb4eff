/* SPDX-License-Identifier: BSD-3-Clause */
/* sicm_fixed.h: fixed arenas, whose memory is a range the caller owns (a
 * buffer it mapped, a device's memory it mapped, a pool handed down by a
 * runtime).  Included by sicm.h; including it alone includes sicm.h first.
 * Same conventions as sicm.h: -1 or NULL on failure, errno as documented,
 * words in sicm_error_detail(). */
#ifndef SICM_FIXED_H
#define SICM_FIXED_H

#include "sicm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Fixed arenas: allocations from memory the caller owns                    */
/* ------------------------------------------------------------------------ */

/* Create an arena that allocates from [addr, addr + size) and nothing
 * else: the whole pages of the range (its first partial page and its last
 * are left out), which must stay mapped, readable and writable until
 * sicm_arena_destroy(), which leaves them mapped.  Every call on arenas
 * works on it; the allocator's metadata lives elsewhere, so the whole range
 * holds blocks (less the allocator's rounding: an allocation that does not
 * fit what is left fails with ENOMEM).  Its bytes are not assumed zero, and
 * no page is ever given back to the system: it is the caller's.  Threads
 * have no cache of their own for it.
 * A range of a few pages holds a block of any small size (one whose
 * allocator run would not fit gets the next power of two).
 * With `dev` NULL the pages stay under the caller's memory policy, and the
 * arena cannot move (sicm_arena_set_device(): EINVAL).  With a device of
 * base pages, the range is bound to it once every check has passed (pages
 * already touched move there) and moves as any arena's, the whole range,
 * whatever wrote it.  Of a shared mapping (MAP_SHARED), the pages other
 * processes touched move too when this process has CAP_SYS_NICE; without
 * it, a move meets them and fails with EPERM.  A refused call binds and
 * moves nothing.
 * Returns the arena, or NULL with errno
 *   EPERM   library not initialized;
 *   EINVAL  addr NULL, no whole page in the range, a page of it not mapped
 *           readable and writable, dev not from sicm_devices() or a
 *           hugetlb device, or the range overlaps another fixed arena or
 *           lies in another arena's memory (in a child of fork(), that of
 *           a hugetlb arena of the parent too);
 *   ENOMEM  256 fixed arenas exist, or out of memory;
 *   EAGAIN  the allocator has no free arena index;
 *   the errno of mbind(2) when the range cannot be bound to dev. */
SICM_API sicm_arena sicm_arena_create_fixed(void *addr, size_t size, sicm_device *dev);

#ifdef __cplusplus
}
#endif

#endif /* SICM_FIXED_H */
