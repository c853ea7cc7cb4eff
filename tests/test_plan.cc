/* SPDX-License-Identifier: BSD-3-Clause */
// test_plan.cc: the placer's plan (autoplace_plan.c), a pure function,
// driven by hand-made histories and checked against its promises on
// random ones.  Linked with the convenience library to reach it.
#include <stdint.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "sicm_test.h"

extern "C" {
#include "autoplace.h"
}

namespace {

const uint64_t MiB = 1 << 20;

struct Plan {
  std::vector<sc_plan_arena> a;
  std::vector<unsigned> order;
  sc_plan_params p = {};
  // Arenas of 1 MiB, cold, off the fast tier, movable; a budget of 4.
  explicit Plan(unsigned n) : a(n), order(n) {
    p.budget = 4 * MiB;
    p.hysteresis = 0.25;
    p.move_weight = 1.0;
    for (auto &x : a) {
      x = sc_plan_arena();
      x.resident = MiB;
      x.movable = 1;
      x.part_limit = UINT64_MAX;
    }
  }
  // One interval: each arena referenced refs[i] MiB; the plan's moves are
  // carried out at once, as the placer does.  Returns the moves.
  unsigned Step(const std::vector<double> &refs, double alpha = 0.5) {
    for (size_t i = 0; i < a.size(); i++) {
      a[i].referenced_before = a[i].referenced;
      a[i].referenced = (uint64_t)(refs[i] * MiB);
      a[i].rate += alpha * (refs[i] * MiB - a[i].rate);
    }
    unsigned moves = sc_plan(a.data(), (unsigned)a.size(), &p, order.data());
    for (auto &x : a) {
      if (x.action == SC_PLAN_PROMOTE) x.on_fast = 1, x.part = 0;
      if (x.action == SC_PLAN_DEMOTE || x.action == SC_PLAN_SHED) x.on_fast = 0, x.part = 0;
      if (x.action == SC_PLAN_SPLIT) x.part = x.part_wanted;
    }
    return moves;
  }
  // Bytes on the fast tier, whole arenas and parts.
  uint64_t FastBytes() const {
    uint64_t n = 0;
    for (auto &x : a) n += x.on_fast ? x.resident : std::min(x.part, x.resident);
    return n;
  }
  unsigned OnFast() const {
    unsigned n = 0;
    for (auto &x : a) n += x.on_fast;
    return n;
  }
};

TEST(PlanRule, AHotArenaMovesOnceItsAccessesPayForTheMove) {
  Plan plan(2);
  plan.a[0].resident = 4 * MiB;
  // Referenced a quarter of its bytes per interval: the move (4 MiB) pays
  // after 4 intervals, not before.
  for (int i = 0; i < 3; i++) {
    EXPECT_EQ(0u, plan.Step({1, 0})) << "interval " << i;
    EXPECT_EQ(0, plan.a[0].on_fast);
  }
  EXPECT_EQ(1u, plan.Step({1, 0}));
  EXPECT_EQ(1, plan.a[0].on_fast);
  EXPECT_EQ(0, plan.a[1].on_fast) << "an arena that referenced nothing never moves";
}

TEST(PlanRule, AnArenaThatTurnsHotDisplacesAColdOneAfterOneInterval) {
  // The placer's weight: a third of the move's bytes referenced pay for it.
  Plan plan(3);
  plan.p.budget = 2 * MiB;
  plan.p.move_weight = 1.0 / 3;
  for (int i = 0; i < 10; i++) plan.Step({1, 1, 0});
  EXPECT_EQ(1, plan.a[0].on_fast);
  EXPECT_EQ(1, plan.a[1].on_fast);
  // The hot pair slides by one: arena 2 ranks in by the interval it just
  // had (its decayed rate alone would still trail arena 0's), and its
  // bytes referenced pay a third of the move, its own and arena 0's.
  EXPECT_EQ(2u, plan.Step({0, 1, 1}));
  EXPECT_EQ(0, plan.a[0].on_fast);
  EXPECT_EQ(1, plan.a[1].on_fast);
  EXPECT_EQ(1, plan.a[2].on_fast);
}

TEST(PlanRule, TheHotSetFollowsThePhasesWithoutPingPong) {
  // 8 arenas of 1 MiB, room for 2; each phase touches two of them fully.
  Plan plan(8);
  plan.p.budget = 2 * MiB;
  const int phases[3][2] = {{0, 1}, {5, 6}, {2, 7}};
  for (auto &ph : phases) {
    std::vector<double> refs(8, 0.0);
    refs[ph[0]] = refs[ph[1]] = 1.0;
    unsigned moves = 0;
    for (int i = 0; i < 10; i++) moves += plan.Step(refs);
    EXPECT_EQ(1, plan.a[ph[0]].on_fast);
    EXPECT_EQ(1, plan.a[ph[1]].on_fast);
    EXPECT_EQ(2u, plan.OnFast());
    EXPECT_LE(moves, 4u) << "two in, at most two out";
  }
}

TEST(PlanRule, ArenasOfEqualHeatStayPut) {
  Plan plan(4);
  plan.p.budget = 2 * MiB;
  unsigned moves = 0;
  for (int i = 0; i < 40; i++)
    moves += plan.Step({1.0 + 0.05 * (i % 2), 1.0, 1.0 + 0.05 * ((i + 1) % 2), 1.0});
  EXPECT_LE(moves, 2u) << "the first two in, then hysteresis holds";
}

TEST(PlanRule, AnywhereArenasLeaveFirstAndTheBudgetIsKept) {
  Plan plan(3);
  plan.p.budget = 2 * MiB;
  plan.a[0].on_fast = plan.a[1].on_fast = 1;
  plan.a[1].anywhere = 1;
  // Arena 2 becomes hot; 0 and 1 are equally cold: the ANYWHERE one leaves.
  for (int i = 0; i < 4; i++) plan.Step({0, 0, 1});
  EXPECT_EQ(1, plan.a[2].on_fast);
  EXPECT_EQ(0, plan.a[1].on_fast);
  EXPECT_EQ(1, plan.a[0].on_fast);
  // The budget shrinks to 1 MiB: the colder of the two leaves, shed.
  plan.p.budget = 1 * MiB;
  plan.Step({0, 0, 1});
  EXPECT_EQ(SC_PLAN_SHED, plan.a[0].action);
  EXPECT_EQ(1, plan.a[2].on_fast);
  EXPECT_EQ(0, plan.a[0].on_fast);
}

// An ANYWHERE arena written whole once (its first touch), then idle, never
// reaches the fast tier, with room there; referenced interval after
// interval, it does.
TEST(PlanRule, AnAnywhereArenaWrittenOnceStaysOffTheFastTier) {
  Plan plan(2);
  plan.a[0].anywhere = 1;
  plan.Step({1, 0});
  for (int i = 0; i < 20; i++) plan.Step({0, 0});
  EXPECT_EQ(0, plan.a[0].on_fast);
  plan.a[1].anywhere = 1;
  for (int i = 0; i < 3; i++) plan.Step({0, 1});
  EXPECT_EQ(1, plan.a[1].on_fast) << "sustained heat";
}

TEST(PlanRule, AnArenaThatCannotMoveKeepsItsPlace) {
  Plan plan(2);
  plan.p.budget = 1 * MiB;
  plan.a[0].on_fast = 1;
  plan.a[0].movable = 0;  // just moved
  for (int i = 0; i < 5; i++) EXPECT_EQ(0u, plan.Step({0, 1}));
  EXPECT_EQ(1, plan.a[0].on_fast);
  plan.a[0].movable = 1;
  EXPECT_EQ(2u, plan.Step({0, 1}));
  EXPECT_EQ(1, plan.a[1].on_fast);
}

TEST(PlanRule, AHotArenaLargerThanTheRoomGoesThereInPart) {
  Plan plan(2);
  plan.p.split_grain = MiB;
  plan.a[0].resident = 10 * MiB;
  plan.a[0].splittable = 1;
  plan.a[1].resident = 1 * MiB;
  // Arena 1 fits and goes whole; the 3 MiB it leaves go to arena 0 in part.
  unsigned moves = 0;
  for (int i = 0; i < 6; i++) moves += plan.Step({3, 1});
  EXPECT_EQ(1, plan.a[1].on_fast);
  EXPECT_EQ(3 * MiB, plan.a[0].part);
  EXPECT_EQ(2u, moves) << "arena 1 whole, then arena 0 in part";
  for (int i = 0; i < 10; i++) EXPECT_EQ(0u, plan.Step({3, 1})) << "steady";
  // Arena 1 turns cold, with nothing to displace it: it stays, and the
  // part does not grow into its room.
  for (int i = 0; i < 10; i++) plan.Step({3, 0});
  EXPECT_EQ(1, plan.a[1].on_fast);
  EXPECT_EQ(3 * MiB, plan.a[0].part);
  // The budget grows: so does the part.
  plan.p.budget = 8 * MiB;
  for (int i = 0; i < 10; i++) plan.Step({3, 1});
  EXPECT_EQ(7 * MiB, plan.a[0].part);
  // The budget shrinks below the part: it leaves whole, and comes back
  // smaller.
  plan.p.budget = 5 * MiB;
  plan.Step({3, 1});
  EXPECT_EQ(SC_PLAN_DEMOTE, plan.a[0].action);
  EXPECT_EQ(0u, plan.a[0].part);
  for (int i = 0; i < 10; i++) plan.Step({3, 1});
  EXPECT_EQ(4 * MiB, plan.a[0].part);
  // A part asks no more than the arena can give (sc_arena_move_part's
  // reach), so that no move repeats.
  plan.a[0].part_limit = 4 * MiB + 4096;
  plan.p.budget = 9 * MiB;
  for (int i = 0; i < 10; i++) EXPECT_EQ(0u, plan.Step({3, 1}));
  EXPECT_EQ(4 * MiB, plan.a[0].part);
}

// Written whole once (its first touch), then idle: never split.
TEST(PlanRule, AnArenaWrittenOnceIsNotSplit) {
  Plan plan(1);
  plan.p.split_grain = MiB;
  plan.a[0].resident = 10 * MiB;
  plan.a[0].splittable = 1;
  EXPECT_EQ(0u, plan.Step({10}));
  for (int i = 0; i < 10; i++) EXPECT_EQ(0u, plan.Step({0})) << "no part";
}

TEST(PlanRule, APartLeavesForAHotterArenaThatNeedsItsRoom) {
  Plan plan(2);
  plan.p.split_grain = MiB;
  plan.p.move_weight = 1.0 / 3;
  plan.a[0].resident = 10 * MiB;
  plan.a[0].splittable = 1;
  plan.a[1].resident = 2 * MiB;
  for (int i = 0; i < 6; i++) plan.Step({3, 0});
  EXPECT_EQ(4 * MiB, plan.a[0].part);
  for (int i = 0; i < 6; i++) plan.Step({3, 2});
  EXPECT_EQ(1, plan.a[1].on_fast) << "denser than the split arena";
  EXPECT_EQ(2 * MiB, plan.a[0].part) << "the room left, taken again";
  EXPECT_LE(plan.FastBytes(), plan.p.budget);
}

// One page referenced once, long ago (the allocator's own, say): the rate
// it left decays below a page an interval and is no heat.  The arena holds
// no room in the set, so the split arena gets it all, and an idle
// ANYWHERE arena is free to go to the cheapest memory (not wanted).
TEST(PlanRule, WhatIsLeftOfOldHeatHoldsNoRoom) {
  for (uint64_t floor : {(uint64_t)0, (uint64_t)4096}) {
    Plan plan(2);
    plan.p.split_grain = MiB;
    plan.p.heat_floor = floor;
    plan.a[0].resident = 10 * MiB;
    plan.a[0].splittable = 1;
    plan.a[1].resident = 2 * MiB;
    plan.a[1].anywhere = 1;
    plan.Step({0, 4096.0 / MiB});
    EXPECT_EQ(1, plan.a[1].wanted) << "a page this interval is heat";
    for (int i = 0; i < 6; i++) plan.Step({3, 0});
    if (floor == 0) {  // the rule off: the old page's remnant takes 2 MiB
      EXPECT_EQ(1, plan.a[1].wanted);
      EXPECT_EQ(2 * MiB, plan.a[0].part);
    } else {
      EXPECT_EQ(0, plan.a[1].wanted);
      EXPECT_EQ(4 * MiB, plan.a[0].part);
    }
  }
}

// The plan against its promises on random histories, with the placer's
// stay of two intervals after a move: the budget holds once every arena
// may move, one arena at most is split, a part is whole grains and
// smaller than its arena, and with the heat held still the placement
// settles.
TEST(PlanRule, RandomHistoriesKeepThePlansPromises) {
  std::mt19937 rng(20261130);
  unsigned splits = 0;
  for (int round = 0; round < 300; round++) {
    unsigned n = 1 + rng() % 6;
    Plan plan(n);
    plan.p.split_grain = MiB;
    plan.p.move_weight = 1.0 / 3;
    plan.p.budget = (1 + rng() % 12) * MiB;
    plan.p.heat_floor = round % 2 ? 4096 : 0;
    for (auto &x : plan.a) {
      x.resident = (1 + rng() % 10) * MiB;
      x.splittable = rng() % 4 != 0;
      x.anywhere = rng() % 8 == 0;
    }
    std::vector<double> refs(n);
    std::vector<int> stay(n);
    for (int step = 0; step < 60; step++) {
      if (step < 30 && rng() % 4 == 0) {
        for (auto &r : refs) r = rng() % 3 == 0 ? 0 : (double)(rng() % 8);
        if (rng() % 3 == 0) plan.p.budget = (1 + rng() % 12) * MiB;
      }
      bool all_movable = true;
      for (unsigned i = 0; i < n; i++) all_movable &= (plan.a[i].movable = stay[i] == 0);
      unsigned moves = plan.Step(refs), split = 0;
      const std::string at = "round " + std::to_string(round) + " step " + std::to_string(step);
      for (unsigned i = 0; i < n; i++) {
        const sc_plan_arena &x = plan.a[i];
        stay[i] = x.action != SC_PLAN_STAY ? 2 : std::max(0, stay[i] - 1);
        splits += x.action == SC_PLAN_SPLIT;
        split += x.part > 0;
        EXPECT_EQ(0u, x.part % MiB) << at;
        EXPECT_TRUE(x.part == 0 || (!x.on_fast && x.part < x.resident && x.splittable)) << at;
      }
      if (step >= 45) {
        EXPECT_EQ(0u, moves) << at << ": not settled";
      }
      if (all_movable) {
        ASSERT_LE(plan.FastBytes(), plan.p.budget) << at;
      }
      ASSERT_LE(split, 1u) << at;
    }
  }
  EXPECT_GT(splits, 100u) << "the histories must split arenas to check the split";
}
}  // namespace
