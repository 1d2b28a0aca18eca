// The schedule catalog (analysis/catalog.hpp): every row is complete, and each of its facts is what the
// schedule it generates does, so that the planner and run, which read the facts instead of the
// generated lists, plan what the schedule runs. tests/mpi/test_catalog.cpp takes every row end to end.
#include <gtest/gtest.h>

#include <set>

#include "analysis/catalog.hpp"
#include "analysis/error.hpp"
#include "analysis/plan/model.hpp"
#include "analysis/simulate.hpp"

namespace pipebench::analysis {
namespace {

bool has_kind(const Schedule& s, Kind k) {
  for (const auto& list : s.actions)
    for (const Action& a : list)
      if (a.kind == k) return true;
  return false;
}

// A schedule of the row that every m rule of the catalog accepts: m a multiple of 2p, m >= 2p.
Schedule sample(const ScheduleRow& row, int p, int v = 0) { return make_schedule({row.name, p, 4 * p, v}); }

TEST(Catalog, EveryRowIsComplete) {
  std::set<std::string> names;
  ASSERT_FALSE(schedule_catalog().empty());
  for (const ScheduleRow& row : schedule_catalog()) {
    SCOPED_TRACE(row.name);
    EXPECT_FALSE(row.name.empty());
    EXPECT_TRUE(names.insert(row.name).second) << "a second row of the name";
    EXPECT_FALSE(row.summary.empty());
    EXPECT_NE(row.generate, nullptr) << "no generator";
    EXPECT_NE(row.figures, nullptr) << "no analytic figures";
    EXPECT_NE(row.screen_idle, nullptr) << "no screening idle";
    EXPECT_NE(row.layout, ChunkLayout::none) << "no chunk layout";
    EXPECT_GE(row.pipes, 1);
    EXPECT_GE(row.default_v, 1);
    if (row.layout == ChunkLayout::v) {
      EXPECT_EQ(row.default_v * row.pipes, 2) << "a V holds two stages per rank";
    }
    EXPECT_EQ(find_schedule(row.name), &row);
    EXPECT_EQ(&schedule_row(row.name), &row);
  }
  EXPECT_EQ(find_schedule("nope"), nullptr);
  EXPECT_THROW(schedule_row("nope"), UsageError);
}

// Looped: stage s on rank s mod p; V: rank r holds stages r and 2p-1-r, written out independently here.
TEST(Catalog, LayoutPipesAndVAreWhatTheScheduleHolds) {
  for (const ScheduleRow& row : schedule_catalog()) {
    SCOPED_TRACE(row.name);
    for (int p : {1, 2, 3, 4}) {
      if (row.m_rule.even && p % 2) continue;
      const Schedule s = sample(row, p);
      EXPECT_EQ(s.name, row.name);
      EXPECT_EQ(s.pipes, row.pipes);
      EXPECT_EQ(s.v(), row.default_v);
      ASSERT_EQ(s.num_stages(), p * row.default_v * row.pipes);
      for (int r = 0; r < p; ++r) {
        std::vector<int> want;
        if (row.layout == ChunkLayout::looped)
          for (int c = 0; c < row.default_v; ++c) want.push_back(c * p + r);
        else
          want = {r, 2 * p - 1 - r};
        EXPECT_EQ(s.stages_of_rank(r), want) << "p=" << p << " rank " << r;
      }
      for (int st = 0; st < s.num_stages(); ++st) EXPECT_EQ(row.rank_of_stage(p, st), s.stage_rank[st]);
    }
    if (row.fixed_v) {
      EXPECT_THROW(sample(row, 4, row.default_v + 1), UsageError);
    } else {
      EXPECT_EQ(sample(row, 3, 3).v(), 3);
    }
  }
}

TEST(Catalog, SplitBackwardAndOverlapAreTheKindsTheScheduleRuns) {
  for (const ScheduleRow& row : schedule_catalog()) {
    SCOPED_TRACE(row.name);
    const Schedule s = sample(row, 4);
    EXPECT_EQ(has_kind(s, Kind::I), row.split_backward);
    EXPECT_EQ(has_kind(s, Kind::W), row.split_backward);
    EXPECT_EQ(has_kind(s, Kind::FB), row.overlaps_fb);
  }
}

// With uniform stages and free transfers the last rank's first action starts after p-1 chunk
// forwards, or at once where micro-batches also enter there.
TEST(Catalog, WaitsForFillIsWhenTheLastRankStarts) {
  for (const ScheduleRow& row : schedule_catalog()) {
    SCOPED_TRACE(row.name);
    const int p = 4;
    const Schedule s = sample(row, p);
    const SimResult sim = simulate(s, uniform_costs(s, 1, 2, 1), SimOptions{true});
    double first = -1;
    for (const auto& t : sim.timeline)
      if (t.rank == p - 1 && (first < 0 || t.start < first)) first = t.start;
    EXPECT_DOUBLE_EQ(first, row.waits_for_fill ? (p - 1) * 1.0 / s.v() : 0.0);
  }
}

TEST(Catalog, OnlyRowsWithAGroupRuleTakeAGroup) {
  for (const ScheduleRow& row : schedule_catalog()) {
    SCOPED_TRACE(row.name);
    if (row.takes_group()) {
      EXPECT_EQ(make_schedule({row.name, 2, 8, 2, 4}).m, 8);
    } else {
      EXPECT_THROW(make_schedule({row.name, 2, 8, 0, 4}), UsageError);
    }
  }
}

// The planner reads the m rules from the row; the generator refuses with them. Both must accept the same
// (p, m, v) for the default group, which is all the planner asks for.
TEST(Catalog, PlannerAndGeneratorAcceptTheSameMicroBatches) {
  plan::Problem pr;
  pr.model.layers = 24, pr.model.hidden = 64, pr.model.heads = 4, pr.model.seq = 32, pr.model.vocab = 128;
  pr.machine = plan::machine_preset("a100-80gb");
  int refused = 0, accepted = 0;
  for (const ScheduleRow& row : schedule_catalog())
    for (int v : row.fixed_v ? std::vector<int>{row.default_v} : std::vector<int>{1, 2, 3})
      for (int p = 1; p <= 6; ++p)
        for (int m = 1; m <= 20; ++m) {
          bool generated = true;
          try {
            make_schedule({row.name, p, m, v});
          } catch (const UsageError&) {
            generated = false;
          }
          plan::Layout l;
          l.schedule = row.name, l.p = p, l.v = v;
          pr.global_batch = m;
          const plan::Refusal why = plan::check_layout(pr, l);
          EXPECT_EQ(why.reason.empty(), generated) << row.name << " p=" << p << " m=" << m << " v=" << v << ": "
                                                   << why.reason << " " << why.detail;
          (generated ? accepted : refused)++;
        }
  EXPECT_GT(refused, 100);
  EXPECT_GT(accepted, 100);
}

}  // namespace
}  // namespace pipebench::analysis
