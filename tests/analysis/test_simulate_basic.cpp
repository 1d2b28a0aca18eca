// Simulator and metrics on the seed's unit-time figures (F = 1, B = 2).
#include <gtest/gtest.h>

#include <algorithm>

#include "analysis/catalog.hpp"
#include "analysis/error.hpp"
#include "analysis/simulate.hpp"

using namespace pipebench::analysis;

namespace {
SimResult unit(const char* name, int p, int m) {
  const Schedule s = make_schedule({name, p, m});
  return simulate(s, uniform_costs(s, 1, 2, 1));
}
}  // namespace

TEST(SimulateBasic, SeedFigures) {
  // docs/formulas.md: p=4, m=4 -> 21, 42.9 %; p=8, m=64 -> 213, 9.9 %, stage 0 holds 64 (GPipe) / 8 (1F1B).
  for (const char* name : {"gpipe", "1f1b"}) {
    const auto a = unit(name, 4, 4);
    EXPECT_DOUBLE_EQ(a.metrics.makespan, 21);
    EXPECT_NEAR(a.metrics.bubble_fraction, 3.0 / 7.0, 1e-12);
    const auto b = unit(name, 8, 64);
    EXPECT_DOUBLE_EQ(b.metrics.makespan, 213);
    EXPECT_NEAR(b.metrics.bubble_fraction, 7.0 / 71.0, 1e-12);
  }
  EXPECT_EQ(unit("gpipe", 8, 64).metrics.ranks[0].peak_inflight, 64);
  EXPECT_EQ(unit("1f1b", 8, 64).metrics.ranks[0].peak_inflight, 8);
}

TEST(SimulateBasic, PerRankMetricsOf1F1B) {
  const auto r = unit("1f1b", 4, 8);
  ASSERT_EQ(r.metrics.ranks.size(), 4u);
  for (int k = 0; k < 4; ++k) {
    const auto& rm = r.metrics.ranks[k];
    EXPECT_DOUBLE_EQ(rm.busy, 24);                    // 8 * (1 + 2)
    EXPECT_DOUBLE_EQ(rm.idle, 33 - 24);               // (m+p-1)(F+B) = 33
    EXPECT_EQ(rm.peak_inflight, 4 - k);               // min(p-r, m)
    EXPECT_DOUBLE_EQ(rm.span_bubble, 3.0 * (3 - k));  // starts at r*F, ends at 33 - r*B: (p-1-r)(F+B)
  }
}

TEST(SimulateBasic, StageMultipliersAndP2P) {
  const Schedule s = make_schedule({"gpipe", 2, 1});
  // Last stage twice as heavy, 0.5 per cross-rank message: 0F0 [0,1] 1F0 [1.5,3.5] 1B0 [3.5,7.5] 0B0 [8,10].
  const auto r = simulate(s, uniform_costs(s, 1, 2, 1, -1, {1, 2}, 0.5));
  EXPECT_DOUBLE_EQ(r.metrics.makespan, 10);
  EXPECT_THROW(uniform_costs(s, 1, 2, 1, -1, {1, 2, 3}), pipebench::UsageError);
  EXPECT_THROW(uniform_costs(s, 0, 2, 1), pipebench::UsageError);
  EXPECT_THROW(uniform_costs(s, 1, 2, 2), pipebench::UsageError);  // tw must be < tb
}

// simulate(s, costs, options) gives the same metrics, to the bit, as simulate(s, costs), and its
// timeline is that one stably sorted by (rank, start) (what the front-ends used to sort it into).
TEST(SimulateOptions, SameFiguresWithoutTimelineAndTimelineInRankOrder) {
  for (const auto& info : schedule_catalog()) {
    for (double tw : {0.0, 0.7}) {
      const Schedule s = make_schedule({info.name, 4, 8});
      const SimCosts costs = uniform_costs(s, 1.1, 2.3, tw, 2.9, {}, 0.05);
      SimResult ref = simulate(s, costs);
      const SimResult lean = simulate(s, costs, SimOptions{false});
      const SimResult full = simulate(s, costs, SimOptions{true});
      EXPECT_TRUE(lean.timeline.empty());
      for (const SimResult* r : {&lean, &full}) {
        EXPECT_EQ(r->metrics.makespan, ref.metrics.makespan) << info.name;
        EXPECT_EQ(r->metrics.bubble_fraction, ref.metrics.bubble_fraction) << info.name;
        ASSERT_EQ(r->metrics.ranks.size(), ref.metrics.ranks.size());
        for (std::size_t k = 0; k < ref.metrics.ranks.size(); ++k) {
          EXPECT_EQ(r->metrics.ranks[k].busy, ref.metrics.ranks[k].busy) << info.name;
          EXPECT_EQ(r->metrics.ranks[k].idle, ref.metrics.ranks[k].idle) << info.name;
          EXPECT_EQ(r->metrics.ranks[k].span_bubble, ref.metrics.ranks[k].span_bubble) << info.name;
          EXPECT_EQ(r->metrics.ranks[k].peak_inflight, ref.metrics.ranks[k].peak_inflight) << info.name;
        }
      }
      std::stable_sort(ref.timeline.begin(), ref.timeline.end(), [](const TimedOp& a, const TimedOp& b) {
        return a.rank != b.rank ? a.rank < b.rank : a.start < b.start;
      });
      ASSERT_EQ(full.timeline.size(), ref.timeline.size());
      for (std::size_t k = 0; k < ref.timeline.size(); ++k) {
        EXPECT_EQ(full.timeline[k].rank, ref.timeline[k].rank);
        EXPECT_EQ(full.timeline[k].action, ref.timeline[k].action) << info.name << " at " << k;
        EXPECT_EQ(full.timeline[k].start, ref.timeline[k].start);
        EXPECT_EQ(full.timeline[k].end, ref.timeline[k].end);
      }
    }
  }
}

// p2p_pair replaces p2p only for an action that waits for two inputs from other ranks: the F&B pairs
// of DualPipeV in the middle of the pipeline. Unset (< 0) it is p2p; 1F1B has no such action.
TEST(SimulateBasic, PairLinkTimeAppliesToActionsWithTwoRemoteInputs) {
  const Schedule v = make_schedule({"dualpipev", 4, 16});
  SimCosts c = uniform_costs(v, 1, 2, 1, -1, {}, 0.1);
  const SimResult same = simulate(v, c);
  c.p2p_pair = 0.1;
  const SimResult equal = simulate(v, c);
  ASSERT_EQ(equal.timeline.size(), same.timeline.size());
  for (std::size_t i = 0; i < same.timeline.size(); ++i) EXPECT_EQ(equal.timeline[i].start, same.timeline[i].start);
  c.p2p_pair = 0.5;
  const SimResult slower = simulate(v, c);
  EXPECT_GT(slower.metrics.makespan, same.metrics.makespan);
  // Exactly the F&B actions with both inputs remote start later; no other action starts earlier.
  int later = 0;
  for (std::size_t i = 0; i < same.timeline.size(); ++i) {
    EXPECT_GE(slower.timeline[i].start, same.timeline[i].start);
    later += slower.timeline[i].start > same.timeline[i].start;
  }
  EXPECT_GT(later, 0);
  const Schedule f = make_schedule({"1f1b", 4, 8});
  SimCosts k = uniform_costs(f, 1, 2, 1, -1, {}, 0.1);
  const double makespan = simulate(f, k).metrics.makespan;
  k.p2p_pair = 0.5;
  EXPECT_DOUBLE_EQ(simulate(f, k).metrics.makespan, makespan);
}

// One link time per stage boundary (issue 27: a shared-memory link inside a node and a slow one
// across nodes): GPipe, p = 3, m = 1, F = 1, B = 2, boundary 0 (ranks 0-1) 0.1, boundary 1 (ranks 1-2)
// 2. 0F0 [0, 1], 1F0 [1.1, 2.1], 2F0 [4.1, 5.1], 2B0 [5.1, 7.1], 1B0 [9.1, 11.1], 0B0 [11.2, 13.2].
// One time for both links (their mean, 1.05) puts 1F0 at 2.05 and 1B0 at 8.15.
TEST(SimulateBasic, LinkTimePerStageBoundary) {
  const Schedule s = make_schedule({"gpipe", 3, 1});
  SimCosts c = uniform_costs(s, 1, 2, 0, -1, {}, 1.05);
  auto start_of = [&s](const SimCosts& k, int rank, Kind kind) {
    for (const TimedOp& op : simulate(s, k).timeline)
      if (op.rank == rank && op.action.kind == kind) return op.start;
    return -1.0;
  };
  EXPECT_DOUBLE_EQ(start_of(c, 1, Kind::F), 2.05);
  EXPECT_DOUBLE_EQ(start_of(c, 1, Kind::B), 8.15);
  c.link_p2p = {0.1, 2.0};
  EXPECT_DOUBLE_EQ(start_of(c, 1, Kind::F), 1.1);
  EXPECT_DOUBLE_EQ(start_of(c, 2, Kind::F), 4.1);
  EXPECT_DOUBLE_EQ(start_of(c, 1, Kind::B), 9.1);
  EXPECT_DOUBLE_EQ(start_of(c, 0, Kind::B), 11.2);
  EXPECT_DOUBLE_EQ(simulate(s, c).metrics.makespan, 13.2);
  EXPECT_DOUBLE_EQ(simulate(s, c, SimOptions{false}).metrics.makespan, 13.2);
  c.link_p2p = {-1, 2.0};  // a boundary without a figure gets p2p
  EXPECT_DOUBLE_EQ(start_of(c, 1, Kind::F), 2.05);
  EXPECT_DOUBLE_EQ(start_of(c, 2, Kind::F), 5.05);
  c.link_p2p = {0.1};
  EXPECT_THROW(simulate(s, c), pipebench::Error);
}

// SimCosts::link_wait: an input from another rank takes at least that long after its receiver reaches
// it, however early it was sent (a rendezvous needing both ranks in MPI, docs/netns.md). GPipe, p = 2,
// m = 2, F = 1, B = 2, link 0.1, wait 0.5: 1F0 [1.1, 2.1] (its input arrives 1.1, after 0 + 0.5),
// 1F1 [2.6, 3.6] (rank 1 reaches it at 2.1), 1B0 [3.6, 5.6], 1B1 [5.6, 7.6], 0B0 [5.7, 7.7], 0B1
// [8.2, 10.2]. Without the wait: 1F1 at 2.1, 0B1 at 7.2, makespan 9.2.
TEST(SimulateBasic, LinkWaitAfterTheReceiverArrives) {
  const Schedule s = make_schedule({"gpipe", 2, 2});
  SimCosts c = uniform_costs(s, 1, 2, 0, -1, {}, 0.1);
  auto start_of = [&s](const SimCosts& k, int rank, Kind kind, int mb) {
    for (const TimedOp& op : simulate(s, k).timeline)
      if (op.rank == rank && op.action.kind == kind && op.action.mb == mb) return op.start;
    return -1.0;
  };
  EXPECT_DOUBLE_EQ(start_of(c, 1, Kind::F, 1), 2.1);
  EXPECT_DOUBLE_EQ(start_of(c, 0, Kind::B, 1), 7.2);
  EXPECT_DOUBLE_EQ(simulate(s, c).metrics.makespan, 9.2);
  c.link_wait = {0.5};
  EXPECT_DOUBLE_EQ(start_of(c, 1, Kind::F, 0), 1.1);
  EXPECT_DOUBLE_EQ(start_of(c, 1, Kind::F, 1), 2.6);
  EXPECT_DOUBLE_EQ(start_of(c, 1, Kind::B, 0), 3.6);
  EXPECT_DOUBLE_EQ(start_of(c, 0, Kind::B, 0), 5.7);
  EXPECT_DOUBLE_EQ(start_of(c, 0, Kind::B, 1), 8.2);
  EXPECT_DOUBLE_EQ(simulate(s, c).metrics.makespan, 10.2);
  EXPECT_DOUBLE_EQ(simulate(s, c, SimOptions{false}).metrics.makespan, 10.2);
  c.link_wait = {-1};  // no figure: no wait
  EXPECT_DOUBLE_EQ(simulate(s, c).metrics.makespan, 9.2);
  c.link_wait = {0.5, 0.5};
  EXPECT_THROW(simulate(s, c), pipebench::Error);
}

// SimCosts::action: an action's own duration wins over its stage's (a measured run's replay charges what
// each action took, e.g. an F whose expert exchange was exposed); the others keep the stage times.
TEST(SimulateBasic, AnActionsOwnDurationIsCharged) {
  const Schedule s = make_schedule({"1f1b", 4, 4});
  SimCosts c = uniform_costs(s, 1, 2, 1);
  c.action.assign(action_slots(s), -1.0);
  c.action[action_slot(s, Action::make(Kind::F, 0, 0))] = 3;  // 2 more than the stage's F, on the critical path
  EXPECT_DOUBLE_EQ(simulate(s, c).metrics.makespan, 23);
  const Schedule v = make_schedule({"dualpipev", 2, 8});
  SimCosts d = uniform_costs(v, 1, 2, 1);
  d.action.assign(action_slots(v), -1.0);
  const auto pair = std::find_if(v.actions[0].begin(), v.actions[0].end(), [](const Action& a) { return a.kind == Kind::FB; });
  ASSERT_NE(pair, v.actions[0].end());
  d.action[action_slot(v, *pair)] = 7.5;
  for (const auto& op : simulate(v, d).timeline) {
    if (op.action == *pair) {
      EXPECT_DOUBLE_EQ(op.end - op.start, 7.5);
    }
  }
  d.action.pop_back();
  EXPECT_THROW(simulate(v, d), pipebench::Error);  // sized for another schedule
}
