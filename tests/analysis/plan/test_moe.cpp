// MoE and expert parallelism in the planner (analysis/plan/ops.cpp add_moe_ops, state.cpp's expert
// sharding, search.cpp's ep axis; docs/model.md "Mixture of experts").
#include <gtest/gtest.h>

#include <cstring>

#include "analysis/plan/model.hpp"
#include "analysis/plan/ops.hpp"
#include "analysis/plan/search.hpp"
#include "analysis/transformer/params.hpp"
#include "plan_cases.hpp"

namespace pipebench::analysis::plan {
namespace {

using testing::layout;
using testing::problem;

const OpCost* op(const std::vector<OpCost>& ops, const char* name) {
  for (const OpCost& c : ops)
    if (!std::strcmp(c.name, name)) return &c;
  return nullptr;
}

Layout with_ep(Layout l, int ep) {
  l.ep = ep;
  return l;
}

// Each rank holds E/ep routed experts: their weights, gradients and optimizer state are 1/ep of them
// (ZeRO 0 here, so the difference is 18 bytes per expert parameter no longer held), the rest unchanged.
TEST(PlanMoe, ExpertStateIsShardedOverEp) {
  const Problem pr = problem("mixtral-8x7b", "h100-80gb", 64);
  const Layout base = layout(1, 4, 8, "1f1b", 1, Recompute::full);
  const StagePlan one = stage_plan(pr, base), eight = stage_plan(pr, with_ep(base, 8));
  transformer::Split s1, s8;
  s8.ep = 8;
  const double per_layer = double(transformer::routed_expert_params(pr.model, s1) - transformer::routed_expert_params(pr.model, s8));
  EXPECT_NEAR(one.static_bytes - eight.static_bytes, 18 * 8 * per_layer, 1e-6 * one.static_bytes);  // 8 layers per stage
  // ZeRO-1: the experts' optimizer state is sharded over cp d / ep = 1 rank, the rest over 8.
  Layout z = with_ep(base, 8);
  z.zero = 1;
  EXPECT_GT(stage_plan(pr, z).optimizer_state, eight.optimizer_state / 8 * 1.5);
}

// The dispatch and combine all-to-all: none without ep; across nodes once the ep group leaves the node
// (t = 1, tp-dp-pp: ep ranks adjacent, 16 of them span two nodes of 8), slower than inside it.
TEST(PlanMoe, AllToAllPerTier) {
  const Problem pr = problem("mixtral-8x7b", "h100-80gb", 256);
  const Layout base = layout(1, 2, 16, "1f1b", 1, Recompute::none);
  const AxisStrides s = strides_of(pr, base);
  EXPECT_EQ(op(layer_part(pr, with_ep(base, 1), s, true).ops, "ep-alltoall"), nullptr);
  const auto part8 = layer_part(pr, with_ep(base, 8), s, true);  // a8 points into it
  const OpCost* a8 = op(part8.ops, "ep-alltoall");
  ASSERT_NE(a8, nullptr);
  EXPECT_GT(a8->f, 0);
  EXPECT_DOUBLE_EQ(a8->i, a8->f);
  Problem wide = pr;
  wide.gpus_per_node = 16;  // the same 8-rank group on a 16-GPU node: inside it either way
  EXPECT_DOUBLE_EQ(op(layer_part(wide, with_ep(base, 8), s, true).ops, "ep-alltoall")->f, a8->f);
  Problem narrow = pr;
  narrow.gpus_per_node = 4;  // the 8 ranks span two nodes
  EXPECT_GT(op(layer_part(narrow, with_ep(base, 8), s, true).ops, "ep-alltoall")->f, 3 * a8->f);  // network 7x slower
  EXPECT_EQ(op(layer_part(pr, base, s, false).ops, "ep-alltoall"), nullptr);  // a dense layer has none
}

// Expert GEMMs at per-expert token counts: ep experts' worth of rows per local expert, the same FLOPs at
// a higher efficiency; the routing imbalance scales the busiest rank's expert work.
TEST(PlanMoe, ExpertGemmsAtTheirTokenCountsAndImbalance) {
  Problem pr = problem("mixtral-8x7b", "a100-80gb", 64);
  pr.model.seq = 256;  // few tokens per expert: the GEMM table's rising part
  const Layout base = layout(1, 1, 8, "1f1b", 1, Recompute::none);
  const AxisStrides s = strides_of(pr, base);
  const double fc1_1 = op(layer_part(pr, base, s, true).ops, "fc1")->f;
  const double fc1_8 = op(layer_part(pr, with_ep(base, 8), s, true).ops, "fc1")->f;
  EXPECT_LT(fc1_8, 0.9 * fc1_1);
  pr.routing_imbalance = 1.5;
  EXPECT_NEAR(op(layer_part(pr, with_ep(base, 8), s, true).ops, "fc1")->f, 1.5 * fc1_8, 1e-12);
  // qkv is not routed.
  Problem balanced = pr;
  balanced.routing_imbalance = 1;
  EXPECT_DOUBLE_EQ(op(layer_part(pr, base, s, true).ops, "qkv")->f, op(layer_part(balanced, base, s, true).ops, "qkv")->f);
}

TEST(PlanMoe, EpMustDivideExpertsAndCpD) {
  const Problem pr = problem("mixtral-8x7b", "h100-80gb", 64);
  EXPECT_EQ(check_layout(pr, with_ep(layout(1, 4, 8, "1f1b", 1, Recompute::full), 3)).reason, "experts");
  EXPECT_EQ(check_layout(pr, with_ep(layout(1, 16, 2, "1f1b", 1, Recompute::full), 4)).reason, "experts");
  EXPECT_EQ(check_layout(pr, with_ep(layout(1, 8, 4, "1f1b", 1, Recompute::full), 4)).reason, "");
  const Problem dense = problem("gpt3-175b", "a100-80gb", 64);
  EXPECT_EQ(check_layout(dense, with_ep(layout(8, 4, 2, "1f1b", 1, Recompute::full), 2)).reason, "experts");
}

// Megatron-LM refuses MoE under tensor parallelism without sequence parallelism, as run does
// (analysis/transformer/shape.hpp, moe_tensor_parallel_refusal): the planner refuses such a layout and
// the search shows none, while a dense model at t > 1 without it stays a layout.
TEST(PlanMoe, TensorParallelExpertsNeedSequenceParallelism) {
  const Problem pr = problem("mixtral-8x7b", "h100-80gb", 64);
  const Refusal r = check_layout(pr, layout(2, 4, 4, "1f1b", 1, Recompute::full));
  EXPECT_EQ(r.reason, "experts");
  EXPECT_NE(r.detail.find("--experts 8 with t = 2 without --sequence-parallel is not allowed"), std::string::npos) << r.detail;
  EXPECT_EQ(check_layout(pr, layout(2, 4, 4, "1f1b", 1, Recompute::full, true)).reason, "");
  EXPECT_EQ(check_layout(pr, layout(1, 4, 8, "1f1b", 1, Recompute::full)).reason, "");
  const Problem dense = problem("gpt3-175b", "a100-80gb", 64);
  EXPECT_EQ(check_layout(dense, layout(8, 4, 2, "1f1b", 1, Recompute::full)).reason, "");
  SearchSpace space;
  space.gpus = 32;
  space.schedules = {"1f1b"};
  space.micro_batch_sizes = {1};
  space.recomputes = {Recompute::full};
  space.zero = {0};
  space.top = 50;
  const SearchResult res = search(pr, space);
  ASSERT_FALSE(res.top.empty());
  bool tensor_parallel = false;
  for (const Prediction& p : res.top) {
    EXPECT_TRUE(p.layout.t == 1 || p.layout.sequence_parallel) << p.layout.t;
    tensor_parallel = tensor_parallel || p.layout.t > 1;
  }
  EXPECT_TRUE(tensor_parallel);  // t > 1 with sequence parallelism is still searched
}

// The search covers ep (and cp when listed) under the memory limit: DeepSeek-V3 does not fit on 256
// H100s without expert parallelism, and every configuration shown fits.
TEST(PlanMoe, SearchCoversEpAndCp) {
  const Problem pr = problem("deepseek-v3-671b", "h100-80gb", 1024);
  SearchSpace space;
  space.gpus = 256;
  space.schedules = {"1f1b"};
  space.micro_batch_sizes = {1};
  space.recomputes = {Recompute::full};
  space.zero = {1};
  space.cps = {1, 2};
  space.top = 3;
  const SearchResult r = search(pr, space);
  ASSERT_FALSE(r.top.empty());
  for (const Prediction& p : r.top) {
    EXPECT_TRUE(p.fits);
    EXPECT_GT(p.layout.ep, 1);
  }
  SearchResult no_ep = search(pr, [&] {
    SearchSpace x = space;
    x.eps = {1};
    return x;
  }());
  if (!no_ep.top.empty()) {
    EXPECT_LT(r.top[0].step_time, no_ep.top[0].step_time);
  }
  EXPECT_GT(r.evaluated, 2 * no_ep.evaluated);
  // Both cp sizes were screened: t p d = 256 and 128.
  SearchSpace one_cp = space;
  one_cp.cps = {1};
  EXPECT_GT(r.evaluated, search(pr, one_cp).evaluated);
}

}  // namespace
}  // namespace pipebench::analysis::plan
