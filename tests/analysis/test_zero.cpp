// ZeRO-3's gather plan (analysis/zero.hpp): what each action gathers and releases, its count against
// the planner's per-stage figure over the catalog's schedules, and the gathered bytes held at once.
#include <gtest/gtest.h>

#include <map>

#include "analysis/catalog.hpp"
#include "analysis/zero.hpp"

using namespace pipebench::analysis;

namespace {
Schedule sample(const ScheduleRow& row, int p) { return make_schedule({row.name, p, 4 * p, 0}); }
}  // namespace

// Every F and backward of a stage gathers its weights (W none) with reshard after forward, once a step
// without: the count per stage is gathers_per_stage's for the micro-batches through the stage, and
// every gather is released by the end of the step.
TEST(Zero, GathersPerStageAreThePlannersOverTheCatalog) {
  for (const ScheduleRow& row : schedule_catalog())
    for (int p : {2, 4})
      for (bool reshard : {true, false}) {
        SCOPED_TRACE(row.name + " p=" + std::to_string(p) + (reshard ? "" : " kept"));
        const Schedule s = sample(row, p);
        for (int r = 0; r < p; ++r) {
          const GatherPlan g = gather_plan(s, r, reshard);
          std::map<int, int> gathers, held;
          for (std::size_t i = 0; i < g.gather_before.size(); ++i) {
            for (int st : g.gather_before[i]) ++gathers[st], ++held[st];
            for (int st : stages_used(s.actions[r][i])) EXPECT_EQ(held[st], 1) << "stage " << st << " not whole";
            for (int st : g.release_after[i]) --held[st];
          }
          for (int st : s.stages_of_rank(r)) {
            EXPECT_EQ(gathers[st], gathers_per_stage(s.mbs_per_pipe(), reshard)) << "stage " << st;
            EXPECT_EQ(held[st], 0) << "stage " << st << " still whole at the end of the step";
          }
        }
      }
}

// 1F1B on one rank of two stages' worth: F0 B0 F1 B1 (p = 1, m = 2) holds its stage during each action,
// and with prefetch the next action's staging too.
TEST(Zero, GatheredPeakCountsTheHeldStagesAndThePrefetch) {
  const Schedule s = make_schedule({"1f1b", 1, 2, 0});
  const GatherPlan on = gather_plan(s, 0, true), off = gather_plan(s, 0, false);
  EXPECT_EQ(on.gathers(), 4);
  EXPECT_EQ(off.gathers(), 1);
  const std::vector<double> bytes = {100};
  EXPECT_EQ(gathered_peak_bytes(on, bytes, false), 100);
  EXPECT_EQ(gathered_peak_bytes(on, bytes, true), 200);
  EXPECT_EQ(gathered_peak_bytes(off, bytes, true), 100);  // nothing left to prefetch after the first
  const Action w = Action::make(Kind::W, 3, 0);
  EXPECT_TRUE(stages_used(w).empty());
  EXPECT_EQ(stages_used(Action::overlapped(1, 0, 6, 2)), (std::vector<int>{1, 6}));
}

// A 16-bit run's decoded weights (kernels/half_weights.hpp): each action holds the fp32 decoding of
// the stages it reads, so the peak is one chunk's where the actions read one (interleaved 1F1B: the
// larger of the two), both chunks' during DualPipeV's overlapped F&B pairs, and nothing is held for
// a rank whose actions read no weights.
TEST(Zero, DecodedPeakIsTheLargestActionsStages) {
  const Schedule inter = make_schedule({"interleaved", 2, 4, 2});
  std::vector<double> bytes(4, 0);
  for (int st : inter.stages_of_rank(0)) bytes[static_cast<std::size_t>(st)] = st == 0 ? 100 : 30;
  EXPECT_EQ(decoded_peak_bytes(inter, 0, bytes), 100);
  const Schedule v = make_schedule({"dualpipev", 2, 8, 0});
  std::vector<double> vb(4, 0);
  for (int st : v.stages_of_rank(0)) vb[static_cast<std::size_t>(st)] = st == 0 ? 100 : 30;
  bool pairs = false;
  for (const Action& a : v.actions[0]) pairs |= a.kind == Kind::FB && a.b_stage != a.stage;
  ASSERT_TRUE(pairs) << "DualPipeV's rank 0 runs overlapped pairs of its two chunks";
  EXPECT_EQ(decoded_peak_bytes(v, 0, vb), 130);
}
