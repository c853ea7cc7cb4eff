/* SPDX-License-Identifier: BSD-3-Clause */
/* autoplace_plan.c: which arenas belong on the fast tier this interval — a
 * pure function of what the monitor measured, so that tests can drive it
 * with any history.
 *
 * The set: arenas ranked by heat per resident byte, the heat being the
 * bytes referenced in the last interval or the decaying rate, whichever is
 * more: an arena that turns hot ranks by what it did at once, one that
 * turns cold keeps its past for a few intervals (an arena already on the
 * fast tier ranks with `hysteresis` more, so two arenas of about the same
 * heat do not trade places).  The set is taken greedily while it fits the
 * budget; an arena that referenced nothing never enters it.
 *
 * The moves, by ski rental: an arena of the set that sits off the fast
 * tier accrues, each interval, the bytes it referenced there (what staying
 * cost); it moves once that reaches the bytes the move costs — its own
 * resident bytes plus those of the arenas it displaces — times
 * `move_weight` (for an arena of SICM_ARENA_ANYWHERE, declared idle, the
 * cost of the way back too: its first writes never move it alone).  It
 * leaves the set: its account starts over.  Arenas on
 * the fast tier leave it only when a promotion needs their room or the
 * budget shrank below what they hold; those of SICM_ARENA_ANYWHERE first,
 * then the coldest. */
#include <stdlib.h>

#include "autoplace.h"

static double plan_score(const sc_plan_arena *a, const sc_plan_params *p) {
  double heat = (double)a->referenced > a->rate ? (double)a->referenced : a->rate;
  double density = heat / (double)(a->resident ? a->resident : 1);
  return a->on_fast && !a->anywhere ? density * (1 + p->hysteresis) : density;
}

static const sc_plan_arena *sort_arenas;
static const sc_plan_params *sort_params;

/* Hottest first; on a tie, the one on the fast tier, then the first. */
static int plan_cmp(const void *x, const void *y) {
  unsigned i = *(const unsigned *)x, j = *(const unsigned *)y;
  double si = plan_score(&sort_arenas[i], sort_params), sj = plan_score(&sort_arenas[j], sort_params);
  if (si != sj)
    return si > sj ? -1 : 1;
  if (sort_arenas[i].on_fast != sort_arenas[j].on_fast)
    return sort_arenas[i].on_fast ? -1 : 1;
  return i < j ? -1 : i > j;
}

/* Marks arenas on the fast tier to leave it, outside the set and movable
 * (ANYWHERE first, then coldest first), until `need` bytes are found.
 * Only counts when `mark` is 0.  Returns the bytes found. */
static uint64_t plan_evict(sc_plan_arena *a, unsigned n, const unsigned *order, uint64_t need,
                           int mark) {
  uint64_t found = 0;
  for (int pass = 0; pass < 2 && found < need; pass++)
    for (unsigned k = n; k-- > 0 && found < need;) {
      sc_plan_arena *v = &a[order[k]];
      if (!v->on_fast || v->wanted || !v->movable || v->action != SC_PLAN_STAY ||
          v->anywhere != (pass == 0))
        continue;
      found += v->resident;
      if (mark)
        v->action = SC_PLAN_DEMOTE;
    }
  return found;
}

unsigned sc_plan(sc_plan_arena *a, unsigned n, const sc_plan_params *p, unsigned *order) {
  for (unsigned i = 0; i < n; i++) {
    order[i] = i;
    a[i].wanted = 0;
    a[i].action = SC_PLAN_STAY;
    a[i].cost = 0;
  }
  /* qsort has no context argument; the plan runs on the placer's thread
   * alone (and in tests), so statics serve. */
  sort_arenas = a;
  sort_params = p;
  qsort(order, n, sizeof *order, plan_cmp);

  uint64_t room = p->budget, used = 0;
  for (unsigned k = 0; k < n; k++) {
    sc_plan_arena *x = &a[order[k]];
    if (x->rate > 0 && x->resident > 0 && x->resident <= room) {
      x->wanted = 1;
      room -= x->resident;
    }
    if (x->on_fast)
      used += x->resident;
    x->regret = x->wanted && !x->on_fast ? x->regret + x->referenced : 0;
  }
  /* The budget shrank (the tier's free memory fell): the coldest leave. */
  for (unsigned k = n; k-- > 0 && used > p->budget;) {
    sc_plan_arena *x = &a[order[k]];
    if (x->on_fast && x->movable && !x->wanted) {
      x->action = SC_PLAN_SHED;
      used -= x->resident;
    }
  }
  for (unsigned k = 0; k < n; k++) {
    sc_plan_arena *x = &a[order[k]];
    if (!x->wanted || x->on_fast || !x->movable)
      continue;
    uint64_t free_room = used < p->budget ? p->budget - used : 0;
    uint64_t need = x->resident > free_room ? x->resident - free_room : 0;
    uint64_t found = need ? plan_evict(a, n, order, need, 0) : 0;
    if (found < need)
      continue; /* what holds the room cannot leave yet */
    /* An ANYWHERE arena's data is declared idle: writing it once (its
     * first touch) is no reason to move it, so it pays the way back too. */
    x->cost = (x->resident + found) * (x->anywhere ? 2 : 1);
    if ((double)x->regret < p->move_weight * (double)x->cost)
      continue;
    if (need) {
      plan_evict(a, n, order, need, 1);
      used -= found;
    }
    x->action = SC_PLAN_PROMOTE;
    used += x->resident;
  }
  unsigned moves = 0;
  for (unsigned i = 0; i < n; i++)
    moves += a[i].action != SC_PLAN_STAY;
  return moves;
}
