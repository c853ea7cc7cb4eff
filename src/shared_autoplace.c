/* SPDX-License-Identifier: BSD-3-Clause */
/* shared_autoplace.c: a shared arena under automatic placement.  The accessed
 * bits a monitor reads are those of its own process's page tables, so
 * each process sees only its own accesses: each publishes its referenced
 * bytes per second in a slot of the segment's header, and every process's
 * placer ranks the arena by the sum.  One process places the arena, the
 * first whose placer claims it; another takes over once that placer's
 * figures go stale (it stopped, detached or died), so no two processes
 * move one arena two ways.  The header is untrusted input: its figures are
 * clamped and never used as offsets. */

#include "shared.h"

enum { STALE_INTERVALS = 3, INTERVAL_MAX_MS = 3600 * 1000 };

/* Published within its publisher's last STALE_INTERVALS intervals. */
static int rate_fresh(const sc_shm_rate *r, uint64_t now) {
  uint64_t stamp = __atomic_load_n(&r->stamp_ns, __ATOMIC_ACQUIRE);
  uint64_t interval = __atomic_load_n(&r->interval_ms, __ATOMIC_RELAXED);
  return interval != 0 && interval <= INTERVAL_MAX_MS && stamp <= now &&
         now - stamp <= STALE_INTERVALS * interval * 1000000u;
}

/* This process's slot; with `claim`, a free or stale one taken when it has
 * none.  NULL: none (all taken by live processes). */
static sc_shm_rate *rate_slot(sc_shm_header *h, uint64_t me, uint64_t now, int claim) {
  for (unsigned i = 0; i < SC_SHM_RATES; i++)
    if (__atomic_load_n(&h->rates[i].owner, __ATOMIC_ACQUIRE) == me)
      return &h->rates[i];
  for (unsigned i = 0; claim && i < SC_SHM_RATES; i++) {
    sc_shm_rate *r = &h->rates[i];
    uint64_t owner = __atomic_load_n(&r->owner, __ATOMIC_ACQUIRE);
    if ((owner == 0 || !rate_fresh(r, now)) &&
        __atomic_compare_exchange_n(&r->owner, &owner, me, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
      return r;
  }
  return NULL;
}

uint64_t sc_shm_rate_share(sc_arena *a, uint64_t per_second, unsigned interval_ms) {
  sc_shm_header *h = sc_shared_of(a)->header;
  uint64_t me = sc_shm_self_id(), now = sc_clock_ns(CLOCK_MONOTONIC);
  sc_shm_rate *mine = rate_slot(h, me, now, 1);
  if (mine != NULL) {
    __atomic_store_n(&mine->per_second, per_second, __ATOMIC_RELAXED);
    __atomic_store_n(&mine->interval_ms, interval_ms, __ATOMIC_RELAXED);
    __atomic_store_n(&mine->stamp_ns, now, __ATOMIC_RELEASE);
  }
  uint64_t sum = mine != NULL ? 0 : per_second; /* counted below when published */
  for (unsigned i = 0; i < SC_SHM_RATES; i++) {
    const sc_shm_rate *r = &h->rates[i];
    if (__atomic_load_n(&r->owner, __ATOMIC_ACQUIRE) == 0 || !rate_fresh(r, now))
      continue;
    uint64_t v = __atomic_load_n(&r->per_second, __ATOMIC_RELAXED);
    sum = sum + v < sum ? UINT64_MAX : sum + v;
  }
  return sum;
}

int sc_shm_placer_claim(sc_arena *a) {
  sc_shm_header *h = sc_shared_of(a)->header;
  uint64_t me = sc_shm_self_id(), now = sc_clock_ns(CLOCK_MONOTONIC);
  uint64_t placer = __atomic_load_n(&h->placer, __ATOMIC_ACQUIRE);
  if (placer == me)
    return 1;
  if (placer != 0)
    for (unsigned i = 0; i < SC_SHM_RATES; i++)
      if (__atomic_load_n(&h->rates[i].owner, __ATOMIC_ACQUIRE) == placer &&
          rate_fresh(&h->rates[i], now))
        return 0; /* its placer lives */
  return __atomic_compare_exchange_n(&h->placer, &placer, me, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE);
}

void sc_shm_placer_release(sc_arena *a) {
  sc_shm_header *h = sc_shared_of(a)->header;
  uint64_t me = sc_shm_self_id(), expected = me;
  __atomic_compare_exchange_n(&h->placer, &expected, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
  sc_shm_rate *mine = rate_slot(h, me, 0, 0);
  if (mine != NULL) {
    __atomic_store_n(&mine->stamp_ns, 0, __ATOMIC_RELEASE);
    expected = me;
    __atomic_compare_exchange_n(&mine->owner, &expected, 0, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_RELAXED);
  }
}
