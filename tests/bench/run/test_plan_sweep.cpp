// plan_sweep (bench/run/plan.hpp): the flags of `pipebench run` become one immutable Plan per
// configuration, in sweep order, checked before anything runs, with its configuration record and key.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "analysis/error.hpp"
#include "bench/run/plan.hpp"
#include "kernels/transformer_workload.hpp"

using namespace pipebench;
using namespace pipebench::bench;

namespace {

// The message of the UsageError `f` throws, or "" when it throws none.
template <class F>
std::string refusal(F f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

RunSettings transformer_settings() {
  RunSettings rs;
  rs.workload = WorkloadKind::transformer;
  rs.schedules = {"1f1b"};
  rs.microbatches = {4};
  rs.model.layers = 4;
  rs.model.hidden = 64;
  rs.model.heads = 4;
  rs.model.seq = 16;
  rs.model.vocab = 128;
  return rs;
}

}  // namespace

TEST(PlanSweep, DefaultSweepIsSixSchedulesTimesTwoMicroBatchCountsInOrder) {
  const RunSettings defaults;
  const auto plans = plan_sweep(defaults, 4);
  ASSERT_EQ(plans.size(), 12u);
  const char* names[] = {"gpipe", "1f1b", "interleaved", "zb-h1", "zbv", "dualpipev"};
  std::set<std::string> keys;
  for (std::size_t k = 0; k < plans.size(); ++k) {
    const Plan& pl = plans[k];
    EXPECT_EQ(pl.index, static_cast<int>(k) + 1);
    EXPECT_EQ(pl.schedule.name, names[k / 2]);
    EXPECT_EQ(pl.schedule.m, k % 2 ? 16 : 8);
    EXPECT_EQ(pl.mapping.t, 1);
    EXPECT_EQ(pl.mapping.p, 4);
    EXPECT_EQ(pl.mapping.d, 1);
    EXPECT_EQ(pl.config.at("schedule"), names[k / 2]);
    EXPECT_EQ(pl.config.at("order"), "tp-dp-pp");
    EXPECT_EQ(pl.config.at("tf"), "0.002");  // seconds, 9 significant digits at most
    EXPECT_EQ(pl.optimizer_state_bytes, 0);   // synthetic: no optimizer
    keys.insert(pl.key);
  }
  EXPECT_EQ(keys.size(), plans.size());
  EXPECT_EQ(plans[0].label, "gpipe 1x4x1 m=8");
  EXPECT_EQ(plans[4].schedule.v(), 2);  // interleaved's default
}

TEST(PlanSweep, EqualConfigurationsAreDroppedAndNamed) {
  RunSettings rs;
  rs.schedules = {"interleaved"};
  rs.microbatches = {8, 8};
  rs.vs = {0, 2};  // 2 is interleaved's default
  std::vector<std::string> dropped;
  const auto plans = plan_sweep(rs, 4, &dropped);
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(dropped, (std::vector<std::string>{"interleaved 1x4x1 m=8", "interleaved 1x4x1 m=8 v=2",
                                               "interleaved 1x4x1 m=8 v=2"}));
}

TEST(PlanSweep, NormalisedSettingsShareTheirKey) {
  const auto interleaved = [](int group, std::vector<double> cost) {
    RunSettings rs;
    rs.schedules = {"interleaved"};
    rs.microbatches = {8};
    rs.group = group;
    rs.synthetic.times.stage_cost = std::move(cost);
    return plan_sweep(rs, 4).at(0);
  };
  const Plan plain = interleaved(0, {});
  const Plan same = interleaved(4, std::vector<double>(8, 1.0));  // group p and all-1 costs: the defaults
  EXPECT_EQ(same.key, plain.key);
  EXPECT_EQ(same.config.at("group"), "0");
  EXPECT_EQ(same.config.at("stage_cost"), "uniform");
  EXPECT_NE(interleaved(8, {}).key, plain.key);
}

TEST(PlanSweep, MappingsMustCoverTheWorld) {
  RunSettings rs;
  rs.mappings = {{2, 2, 1}, {1, 2, 2}, {2, 2, 2}};
  EXPECT_NE(refusal([&] { plan_sweep(rs, 4); })
                .find("--mapping 2x2x2 needs t*p*d = 8 ranks, but the job has 4"),
            std::string::npos);
  rs.mappings.pop_back();
  rs.schedules = {"1f1b"};
  const auto plans = plan_sweep(rs, 4);
  ASSERT_EQ(plans.size(), 4u);
  EXPECT_EQ(plans[2].label, "1f1b 1x2x2 m=8");
}

TEST(PlanSweep, BoundsAndBadValuesAreRefusedNamingTheConfiguration) {
  {
    RunSettings rs;
    rs.schedules = {"dualpipe"};
    rs.microbatches = {4};  // DualPipe needs m >= 2p
    EXPECT_EQ(refusal([&] { plan_sweep(rs, 4); }).rfind("configuration dualpipe 1x4x1 m=4: ", 0), 0u);
  }
  {
    RunSettings rs;
    rs.pick = 13;
    EXPECT_NE(refusal([&] { plan_sweep(rs, 4); }).find("--trace-config = 13 is not allowed: the sweep has configurations 1..12"),
              std::string::npos);
  }
  {
    RunSettings rs;
    rs.microbatches = std::vector<int>(kMaxConfigurations / 6 + 1, 8);
    EXPECT_NE(refusal([&] { plan_sweep(rs, 4); }).find("configurations (--schedule x --mapping x --chunks x --microbatches)"),
              std::string::npos);
  }
  {
    RunSettings rs;
    rs.schedules = {"1f1b"};
    rs.microbatches = {1 << 21};
    rs.steps = 1;
    EXPECT_NE(refusal([&] { plan_sweep(rs, 4); }).find("pairs"), std::string::npos);
  }
  {
    RunSettings rs;
    rs.resume = true;
    EXPECT_NE(refusal([&] { plan_sweep(rs, 4); }).find("--resume needs --append"), std::string::npos);
  }
}

TEST(PlanSweep, TransformerPlansCarryTheirMemoryAndOptimizerStateFormula) {
  RunSettings rs = transformer_settings();
  rs.mappings = {{1, 2, 2}};
  const auto sgd = plan_sweep(rs, 4);
  ASSERT_EQ(sgd.size(), 1u);
  EXPECT_EQ(sgd[0].optimizer_state_bytes, 0);
  ASSERT_EQ(sgd[0].memory_need.size(), 2u);
  EXPECT_GT(sgd[0].memory_need[0], 0);
  EXPECT_EQ(sgd[0].config.at("layers_per_stage"), "2,2");

  rs.model.optimizer = kernels::Optimizer::adam;
  const Plan whole = plan_sweep(rs, 4)[0];
  double most = 0;
  for (int pp = 0; pp < 2; ++pp)
    most = std::max(most, static_cast<double>(kernels::optimizer_state_bytes(whole.model, whole.schedule, pp, false, 0, 2, 0)));
  EXPECT_GT(most, 0);
  EXPECT_EQ(whole.optimizer_state_bytes, most);
  rs.zero = 1;
  const Plan sharded = plan_sweep(rs, 4)[0];
  EXPECT_LT(sharded.optimizer_state_bytes, whole.optimizer_state_bytes);
  EXPECT_GE(sharded.optimizer_state_bytes, whole.optimizer_state_bytes / 2);
  EXPECT_EQ(sharded.config.at("zero"), "1");
}

TEST(PlanSweep, MemoryCheckNamesTheFullestRank) {
  const auto plans = plan_sweep(transformer_settings(), 2);
  EXPECT_NO_THROW(check_memory(plans, 0));  // unknown memory: no check
  const std::string why = refusal([&] { check_memory(plans, 1024); });
  EXPECT_EQ(why.rfind("configuration 1f1b 1x2x1 m=4 needs about ", 0), 0u) << why;
  EXPECT_NE(why.find("on pipeline rank "), std::string::npos) << why;
}
