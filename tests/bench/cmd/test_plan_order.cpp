// `plan --order`: the planner takes each layout's strides from topology::Grid under the order (any order
// Grid allows), refuses a bad one with Grid's own message, and its default (an empty Problem::rank_order)
// is the Grid's tp-dp-pp.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/error.hpp"
#include "analysis/plan/model.hpp"
#include "bench/cmd/plan_inputs.hpp"
#include "topology/grid.hpp"

namespace pipebench::bench::testing {
namespace {

namespace plan = analysis::plan;

// The distance between neighbours along `axis`, derived here from the order string alone: the product of
// the sizes of the axes before it (Megatron's RankGenerator; cp and ep have size 1).
std::int64_t expected_stride(const std::string& order, const std::string& axis, int t, int p, int d) {
  std::int64_t stride = 1;
  std::stringstream in(order);
  for (std::string name; std::getline(in, name, '-');) {
    if (name == axis) return stride;
    stride *= name == "tp" ? t : name == "pp" ? p : name == "dp" ? d : 1;
  }
  ADD_FAILURE() << axis << " is not in " << order;
  return 0;
}

TEST(PlanOrder, EveryOrderGivesTheStridesOfItsRanks) {
  std::vector<std::string> axes = {"dp", "pp", "tp"};
  std::vector<std::string> orders;
  do {
    orders.push_back(axes[0] + "-" + axes[1] + "-" + axes[2]);
    orders.push_back("cp-" + axes[0] + "-" + axes[1] + "-ep-" + axes[2]);  // size-1 axes anywhere
  } while (std::next_permutation(axes.begin(), axes.end()));
  ASSERT_EQ(orders.size(), 12u);
  for (const std::string& order : orders) {
    const plan::RankOrder strides = rank_order(order);
    for (auto [t, p, d] : {std::array<int, 3>{2, 4, 8}, {8, 8, 1}, {1, 8, 8}, {3, 5, 7}, {1, 1, 1}}) {
      SCOPED_TRACE(order + " " + std::to_string(t) + "x" + std::to_string(p) + "x" + std::to_string(d));
      const plan::AxisStrides s = strides(t, p, d);
      EXPECT_EQ(s.tp, expected_stride(order, "tp", t, p, d));
      EXPECT_EQ(s.pp, expected_stride(order, "pp", t, p, d));
      EXPECT_EQ(s.dp, expected_stride(order, "dp", t, p, d));
    }
  }
}

// analysis/plan/model.cpp's own tp-dp-pp, for the problems built without the front end, is the Grid's.
TEST(PlanOrder, TheModelsDefaultIsTheGridsTpDpPp) {
  plan::Problem pr;
  const plan::RankOrder grid = rank_order(topology::default_order());
  for (int t = 1; t <= 8; ++t)
    for (int p = 1; p <= 8; ++p)
      for (int d = 1; d <= 8; ++d) {
        plan::Layout l;
        l.t = t, l.p = p, l.d = d;
        const plan::AxisStrides model = plan::strides_of(pr, l), want = grid(t, p, d);
        ASSERT_EQ(model.tp, want.tp) << t << "x" << p << "x" << d;
        ASSERT_EQ(model.pp, want.pp) << t << "x" << p << "x" << d;
        ASSERT_EQ(model.dp, want.dp) << t << "x" << p << "x" << d;
      }
}

std::string grid_message(const std::string& order) {
  try {
    topology::Grid(1, 1, 1, 1, order);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(PlanOrder, ABadOrderIsRefusedWithTheGridsMessage) {
  for (const std::string bad : {"tp-dp", "tp-pp-dp-tp", "tp-xx-pp-dp", "", "tp--dp-pp"}) {
    SCOPED_TRACE(bad);
    const std::string want = grid_message(bad);
    if (bad.empty()) {  // empty is the Grid's default order
      EXPECT_EQ(want, "accepted");
      EXPECT_NO_THROW(rank_order(bad));
      continue;
    }
    ASSERT_NE(want, "accepted");
    try {
      rank_order(bad);
      ADD_FAILURE() << "accepted";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()), want);
    }
  }
}

// 64 GPUs in nodes of 8, t = 1, p = 8, d = 8: in tp-dp-pp pipeline neighbours are 8 ranks apart, so every
// transfer leaves the node while each data-parallel group is one node; pp-dp-tp puts pipeline neighbours
// 1 apart, each pipeline in one node, and spreads the data-parallel groups over all 64 ranks.
TEST(PlanOrder, PipelineNeighboursOneApartStayInTheNode) {
  plan::Problem pr;
  pr.model = plan::model_preset("gpt3-175b");
  pr.machine = plan::machine_preset("a100-80gb");
  pr.global_batch = 64;
  plan::Layout l;
  l.t = 1, l.p = 8, l.d = 8, l.schedule = "1f1b", l.recompute = plan::Recompute::full;
  pr.rank_order = rank_order("tp-dp-pp");
  const plan::StagePlan dp_inside = plan::stage_plan(pr, l);
  pr.rank_order = rank_order("pp-dp-tp");
  const plan::StagePlan pp_inside = plan::stage_plan(pr, l);
  const plan::MachineSpec& mc = pr.machine;
  const double bytes = 2.0 * 2048 * 12288;  // one micro-batch's boundary activation, 16-bit
  EXPECT_DOUBLE_EQ(dp_inside.p2p, mc.inter_latency + bytes / mc.inter_bandwidth);
  EXPECT_DOUBLE_EQ(pp_inside.p2p, mc.intra_latency + bytes / mc.intra_bandwidth);
  EXPECT_LT(dp_inside.dp_time, pp_inside.dp_time);
  // Tensor-parallel ranks p*d = 64 apart leave the node: refused unless asked for.
  l.t = 2, l.d = 4;
  const plan::Refusal r = plan::check_layout(pr, l);
  EXPECT_EQ(r.reason, "tensor");
  EXPECT_NE(r.detail.find("its ranks 32 apart in the rank order"), std::string::npos) << r.detail;
  pr.rank_order = rank_order("tp-dp-pp");
  EXPECT_EQ(plan::check_layout(pr, l).reason, "");
}

}  // namespace
}  // namespace pipebench::bench::testing
