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
 * budget; an arena with no heat (less than `heat_floor`) never enters it.
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
 * then the coldest.
 *
 * The split: what room the set leaves goes to the hottest arena that
 * ranks outside it (its resident bytes exceed that room), as a part of
 * it, in whole grains — the fractional step of the greedy knapsack, so
 * that a hot block larger than the fast tier is not left off it whole.
 * The part costs its own bytes by the same ski rental, accrued from the
 * bytes the arena referenced in both of the last two intervals, in
 * proportion to the part's share of them; it
 * grows once the room has grown by a quarter of it, and leaves whole
 * (the arena goes home, to be split again smaller) when the budget no
 * longer holds it, when a promotion needs its room, or when another arena
 * ranks above it.  One arena at a time is split, and it ranks with the
 * hysteresis of an arena on the fast tier. */
#include <stdlib.h>

#include "autoplace.h"

static double plan_heat(const sc_plan_arena *a) {
  return (double)a->referenced > a->rate ? (double)a->referenced : a->rate;
}

/* Whether the arena has heat to rank by.  Heat under the floor (a page an
 * interval) is none: the monitor counts whole pages, so it is what is
 * left of old heat as the rate decays, or a page of the allocator's own
 * touched once; an arena ranked by it would hold room it never uses and
 * keep an idle ANYWHERE arena off the cheapest memory for good. */
static int plan_warm(const sc_plan_arena *a, const sc_plan_params *p) {
  double heat = plan_heat(a);
  return heat > 0 && heat >= (double)p->heat_floor;
}

static double plan_score(const sc_plan_arena *a, const sc_plan_params *p) {
  double density = plan_heat(a) / (double)(a->resident ? a->resident : 1);
  return (a->on_fast || a->part) && !a->anywhere ? density * (1 + p->hysteresis) : density;
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

/* The bytes referenced in the last interval that pay toward a move: those
 * of pages resident before it.  A page faulted in was referenced by its
 * first touch, which says nothing of what comes next: an arena written as
 * it is made never moves for it. */
static uint64_t paid(const sc_plan_arena *a) {
  return a->referenced > a->grown ? a->referenced - a->grown : 0;
}

/* The bytes the arena holds on the fast tier (a part holds no more than
 * the arena). */
static uint64_t fast_bytes(const sc_plan_arena *a) {
  return a->on_fast || a->part > a->resident ? a->resident : a->part;
}

/* Marks arenas on the fast tier, whole or in part, to leave it, outside
 * the set and movable (ANYWHERE first, then coldest first), until `need`
 * bytes are found.  Only counts when `mark` is 0.  Returns the bytes
 * found. */
static uint64_t plan_evict(sc_plan_arena *a, unsigned n, const unsigned *order, uint64_t need,
                           int mark) {
  uint64_t found = 0;
  for (int pass = 0; pass < 2 && found < need; pass++)
    for (unsigned k = n; k-- > 0 && found < need;) {
      sc_plan_arena *v = &a[order[k]];
      if (fast_bytes(v) == 0 || v->wanted || !v->movable || v->action != SC_PLAN_STAY ||
          v->anywhere != (pass == 0))
        continue;
      found += fast_bytes(v);
      if (mark)
        v->action = SC_PLAN_DEMOTE;
    }
  return found;
}

/* The split of `c`, the hottest arena outside the set: its part leaves
 * when the fast tier's budget no longer holds it beside the other arenas
 * there; it grows, by the ski rental on what it adds, into the room the
 * set leaves (`left`) that the budget holds too. */
static void plan_split(sc_plan_arena *c, uint64_t left, uint64_t used, const sc_plan_params *p) {
  uint64_t others = used - fast_bytes(c);
  uint64_t room = p->budget > others ? p->budget - others : 0;
  if (c->part > room) { /* the budget shrank: the part leaves whole */
    c->action = SC_PLAN_DEMOTE;
    c->regret = 0;
    return;
  }
  if (room > left)
    room = left;
  if (room > c->part_limit)
    room = c->part_limit;
  uint64_t part = room / p->split_grain * p->split_grain;
  uint64_t step = c->part / 4 > p->split_grain ? c->part / 4 : p->split_grain;
  if (part < c->part + step) {
    c->regret = 0;
    return;
  }
  uint64_t added = part - c->part;
  /* Only heat held over two intervals pays: data written once (its first
   * touch) never moves in part, as two hinting faults in a row are what
   * NUMA balancing asks before it promotes a page. */
  uint64_t held = paid(c) < c->referenced_before ? paid(c) : c->referenced_before;
  c->regret += (uint64_t)((double)held * (double)added / (double)c->resident);
  c->cost = added;
  if ((double)c->regret < p->move_weight * (double)added)
    return;
  c->action = SC_PLAN_SPLIT;
  c->part_wanted = part;
  c->regret = 0;
}

/* A part that is no longer the split's (*split) leaves, unless its arena
 * ranks in the set now (it is promoted whole when that pays); while it
 * stays, no other arena is split (*split cleared).  The bytes that leave. */
static uint64_t plan_parts_leave(sc_plan_arena *a, unsigned n, sc_plan_arena **split) {
  uint64_t left = 0;
  for (unsigned i = 0; i < n; i++) {
    sc_plan_arena *x = &a[i];
    if (x->part && x != *split && !x->wanted && x->movable) {
      x->action = SC_PLAN_DEMOTE;
      left += fast_bytes(x);
    }
  }
  for (unsigned i = 0; i < n && *split != NULL; i++)
    if (a[i].part && &a[i] != *split && a[i].action == SC_PLAN_STAY) {
      (*split)->regret = 0;
      *split = NULL;
    }
  return left;
}

unsigned sc_plan(sc_plan_arena *a, unsigned n, const sc_plan_params *p, unsigned *order) {
  for (unsigned i = 0; i < n; i++) {
    order[i] = i;
    a[i].wanted = 0;
    a[i].action = SC_PLAN_STAY;
    a[i].cost = 0;
    a[i].part_wanted = 0;
  }
  /* qsort has no context argument; the plan runs on the placer's thread
   * alone (and in tests), so statics serve. */
  sort_arenas = a;
  sort_params = p;
  qsort(order, n, sizeof *order, plan_cmp);

  uint64_t room = p->budget, used = 0;
  sc_plan_arena *split = NULL; /* the hottest arena outside the set */
  for (unsigned k = 0; k < n; k++) {
    sc_plan_arena *x = &a[order[k]];
    int warm = plan_warm(x, p) && x->resident > 0;
    if (warm && x->resident <= room) {
      x->wanted = 1;
      room -= x->resident;
    } else if (split == NULL && warm && x->splittable && !x->on_fast && p->split_grain > 0) {
      split = x;
    }
    used += fast_bytes(x);
    if (x != split)
      x->regret = x->wanted && !x->on_fast ? x->regret + paid(x) : 0;
  }
  used -= plan_parts_leave(a, n, &split);
  /* The budget shrank (the tier's free memory fell): the coldest leave. */
  for (unsigned k = n; k-- > 0 && used > p->budget;) {
    sc_plan_arena *x = &a[order[k]];
    if (fast_bytes(x) && x->movable && !x->wanted && x->action == SC_PLAN_STAY) {
      x->action = x->on_fast ? SC_PLAN_SHED : SC_PLAN_DEMOTE;
      used -= fast_bytes(x);
    }
  }
  for (unsigned k = 0; k < n; k++) {
    sc_plan_arena *x = &a[order[k]];
    if (!x->wanted || x->on_fast || !x->movable)
      continue;
    uint64_t mine = fast_bytes(x);
    uint64_t free_room = used - mine < p->budget ? p->budget - (used - mine) : 0;
    uint64_t need = x->resident > free_room ? x->resident - free_room : 0;
    uint64_t found = need ? plan_evict(a, n, order, need, 0) : 0;
    if (found < need)
      continue; /* what holds the room cannot leave yet */
    /* An ANYWHERE arena's data is declared idle: writing it once (its
     * first touch) is no reason to move it, so it pays the way back too. */
    x->cost = (x->resident - mine + found) * (x->anywhere ? 2 : 1);
    if ((double)x->regret < p->move_weight * (double)x->cost)
      continue;
    if (need) {
      plan_evict(a, n, order, need, 1);
      used -= found;
    }
    x->action = SC_PLAN_PROMOTE;
    used += x->resident - mine;
  }
  if (split != NULL && split->action == SC_PLAN_STAY && split->movable)
    plan_split(split, room, used, p);
  else if (split != NULL && split->action != SC_PLAN_STAY)
    split->regret = 0;
  unsigned moves = 0;
  for (unsigned i = 0; i < n; i++)
    moves += a[i].action != SC_PLAN_STAY;
  return moves;
}
