// The per-operation model (analysis/plan/ops.*, gemm.*), the pipeline layout strings and ZeRO-2/3.
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/error.hpp"
#include "analysis/plan/gemm.hpp"
#include "analysis/plan/model.hpp"
#include "plan_cases.hpp"
#include "analysis/plan/ops.hpp"
#include "analysis/transformer/flops.hpp"

namespace pipebench::analysis::plan {
namespace {

using testing::layout;
using testing::problem;

TEST(PlanGemm, TableInterpolatesInLogOfEachSize) {
  GemmTable t;
  t.sizes = {256, 1024};
  t.efficiency = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8};  // (m, n, k) index (im * 2 + in) * 2 + ik
  EXPECT_DOUBLE_EQ(gemm_efficiency(t, 256, 256, 256), 0.1);
  EXPECT_DOUBLE_EQ(gemm_efficiency(t, 1024, 256, 1024), 0.6);
  EXPECT_DOUBLE_EQ(gemm_efficiency(t, 512, 256, 256), 0.3);    // half way in log2 between 0.1 and 0.5
  EXPECT_DOUBLE_EQ(gemm_efficiency(t, 64, 4096, 256), 0.3);    // clamped to the edges
  EXPECT_DOUBLE_EQ(gemm_efficiency(GemmTable{}, 1, 1, 1), 1.0);  // no table: at peak
  const GemmTable s = saturating_table(0.8, 128, "test");
  EXPECT_NEAR(gemm_efficiency(s, 1024, 1024, 1024), 0.8 * std::pow(1024.0 / 1152, 3), 1e-12);
  GemmTable bad = t;
  bad.efficiency[3] = 1.5;
  EXPECT_THROW(check_gemm_table(bad, "x"), UsageError);
  bad = t;
  bad.efficiency.pop_back();
  EXPECT_THROW(check_gemm_table(bad, "x"), UsageError);
}

// A measured sweep (`pipebench gemm`): the fastest product's rate is the peak, every efficiency its own
// rate over it, in the table's (m, n, k) order; a sweep that is not the whole grid, or a time <= 0, is refused.
TEST(PlanGemm, MeasuredTableIsEachRateOverTheFastest) {
  const std::vector<double> sizes{64, 128};
  std::vector<double> seconds;
  std::vector<double> rates;
  for (double m : sizes)
    for (double n : sizes)
      for (double k : sizes) {
        rates.push_back(1e9 * (m + n / 2 + k / 4));  // a rate per shape, the largest at 128^3
        seconds.push_back(2 * m * n * k / rates.back());
      }
  const MeasuredGemm g = measured_gemm_table(sizes, seconds, "sweep");
  EXPECT_DOUBLE_EQ(g.peak_flops, 1e9 * (128 + 64 + 32));
  ASSERT_EQ(g.table.efficiency.size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) EXPECT_NEAR(g.table.efficiency[i], rates[i] / g.peak_flops, 1e-15);
  EXPECT_NEAR(gemm_efficiency(g.table, 64, 128, 64), (64 + 64 + 16) / 224.0, 1e-15);  // (i_m, i_n, i_k) = (0, 1, 0)
  EXPECT_EQ(g.table.source, "sweep");
  EXPECT_THROW(measured_gemm_table(sizes, std::vector<double>(7, 1.0), "sweep"), UsageError);
  seconds[5] = 0;
  EXPECT_THROW(measured_gemm_table(sizes, seconds, "sweep"), UsageError);
}

// Each GEMM's time is its FLOPs (the cost model's) at the table's efficiency for its own shape, and the
// stage times are the sums of the operations.
TEST(PlanOps, GemmsAtTheirShapesAndStagesAreTheirSum) {
  const Problem pr = problem("gpt3-175b", "a100-80gb", 64);
  const Layout l = layout(8, 8, 1, "1f1b", 1, Recompute::none);
  const StagePlan sp = stage_plan(pr, l);
  const Prediction pd = evaluate(pr, l);
  ModelSpec md = pr.model;
  const transformer::Split split{8, false, true, 1};
  const transformer::Gemm g = transformer::op_gemm(md, split, transformer::Op::fc1);
  EXPECT_DOUBLE_EQ(g.m, 2048);
  EXPECT_DOUBLE_EQ(g.n, 4.0 * 12288 / 8);
  EXPECT_DOUBLE_EQ(g.k, 12288);
  const auto fc1 = transformer::layer_ops(md, split, Recompute::none, transformer::Convention::megatron)[4];
  ASSERT_EQ(fc1.op, transformer::Op::fc1);
  const MachineSpec& mc = pr.machine;
  const OpCost& c = pd.layer_ops[4];
  EXPECT_STREQ(c.name, "fc1");
  EXPECT_DOUBLE_EQ(c.f, fc1.flops.forward / (mc.peak_flops * gemm_efficiency(mc.gemm, g.m, g.n, g.k)));
  EXPECT_DOUBLE_EQ(c.w, fc1.flops.backward_weight / (mc.peak_flops * gemm_efficiency(mc.gemm, g.k, g.n, g.m)));
  double f = 0;
  for (const OpCost& x : pd.layer_ops) f += x.f;
  EXPECT_NEAR(sp.f[3], 12 * f, 1e-12);  // a middle stage: 12 layers, TP exposed in F
}

// Megatron-LM's backward hides the TP collectives of QKV and fc1 behind their weight gradients; the 2021
// code did not.
TEST(PlanOps, AsyncTensorParallelismHidesTheBackwardsCollectives) {
  const Problem pr = problem("gpt3-175b", "a100-80gb", 64);
  Layout l = layout(8, 8, 1, "1f1b", 1, Recompute::none);
  const StagePlan async = stage_plan(pr, l);
  l.async_tp = false;
  const StagePlan sync = stage_plan(pr, l);
  double tp = 0;
  for (const OpCost& x : evaluate(pr, l).layer_ops)
    if (std::string(x.kind) == "tp") tp += x.i;
  EXPECT_GT(tp, 0);
  EXPECT_NEAR(sync.layer_backward - async.layer_backward, tp, 1e-12);
  EXPECT_DOUBLE_EQ(sync.layer_forward, async.layer_forward);
}

// A group kind's measured link (a calibration's all_reduce fit over tp or dp) replaces its tier's for that
// kind's collectives on that tier only: at the fit's rank count the ring gives the fit back.
TEST(PlanOps, AGroupsMeasuredLinkTimesItsCollectivesOnItsTier) {
  MachineSpec mc = machine_preset("a100-80gb");
  const double alpha = 3e-4, beta = 2e9, bytes = 131072;
  const MachineSpec::GroupLink own{beta * 2 * 3.0 / 4, alpha / 6, false};  // 4 ranks: bus 2(n-1)/n, 2(n-1) steps
  EXPECT_NEAR(collective(mc, false, bytes, 4, 2, own), alpha + bytes / beta, 1e-15);
  EXPECT_NEAR(collective(mc, false, bytes, 4, 1, own), (alpha + bytes / beta) / 2, 1e-15);  // a reduce-scatter
  EXPECT_DOUBLE_EQ(collective(mc, true, bytes, 4, 2, own), collective(mc, true, bytes, 4, 2));  // another tier
  const Problem base = problem("gpt3-175b", "a100-80gb", 64);
  Problem pr = base;
  pr.machine.tp_link = own;
  pr.cache = make_parts_cache();  // a copy shares its parts, which the machine decides
  const Layout l = layout(8, 8, 1, "1f1b", 1, Recompute::none);
  const auto tp_f = [&l](const Problem& x) {
    double t = 0;
    for (const OpCost& c : evaluate(x, l).layer_ops)
      if (std::string(c.kind) == "tp") t += c.f;
    return t;
  };
  const double act = 2.0 * 2048 * 12288;  // BF16 n h per micro-batch
  EXPECT_NEAR(tp_f(pr), 2 * collective(pr.machine, false, act, 8, 2, own), 1e-12);
  EXPECT_GT(tp_f(pr), tp_f(base));
  pr.machine.tp_link = {};
  pr.machine.dp_link = own;  // the dp link leaves the tp collectives alone
  pr.cache = make_parts_cache();
  EXPECT_DOUBLE_EQ(tp_f(pr), tp_f(base));
}

TEST(PlanLayout, MegatronLayoutStrings) {
  EXPECT_EQ(parse_pipeline_layout("Ettt|tttt|tttL"), (std::vector<int>{3, 4, 3}));
  EXPECT_EQ(parse_pipeline_layout("Et*3|(t*4|)*2t*3,L"), (std::vector<int>{3, 4, 4, 3}));
  EXPECT_EQ(parse_pipeline_layout("E|t*4|L"), (std::vector<int>{0, 4, 0}));
  for (const char* bad : {"ttt|EttL", "Ett|tLt|t", "Ex|tL", "E(tt|tL", "Et*|tL", "Ett)|tL"})
    EXPECT_THROW(parse_pipeline_layout(bad), UsageError) << bad;
}

// Llama 3 405B at Meta's layout (t 8, p 16, d 64, 16-bit, sharded data parallelism that keeps the weights,
// one layer fewer on the first and last stage) fits in 80 GB with 1F1B; ZeRO-1's full fp32 gradients do
// not, and neither does the interleaved schedule's deeper warm-up (docs/model.md "Validation").
TEST(PlanLayout, Llama3AtMetasLayoutFits) {
  const Problem pr = problem("llama3-405b", "h100-80gb", 2048);
  Layout l = layout(8, 16, 64, "1f1b", 1, Recompute::none, true, 2);
  std::vector<int> balanced(16, 8);
  balanced.front() = balanced.back() = 7;
  l.stage_layers = balanced;
  const Prediction p = evaluate(pr, l);
  EXPECT_TRUE(p.fits);
  EXPECT_NEAR(p.activation_bytes / kGiB, 63.75, 0.01);
  l.zero = 1;
  EXPECT_FALSE(evaluate(pr, l).fits);
  l.zero = 2, l.schedule = "interleaved", l.v = 2;
  l.stage_layers.assign(32, 4);
  l.stage_layers.front() = l.stage_layers.back() = 3;
  EXPECT_FALSE(evaluate(pr, l).fits);
  l.stage_layers = {4, 4};
  EXPECT_EQ(check_layout(pr, l).reason, "layers");
}

TEST(PlanZero, StagesShardStateAndAddTraffic) {
  Problem pr = problem("gpt3-175b", "a100-80gb", 64);
  pr.machine.memory_reserve_bytes = 0;
  std::vector<StagePlan> z;
  for (int stage = 0; stage <= 3; ++stage) z.push_back(stage_plan(pr, layout(8, 8, 8, "1f1b", 1, Recompute::full, false, stage)));
  const double params = z[0].weights / 2;
  EXPECT_DOUBLE_EQ(z[1].static_bytes, (6 + 12.0 / 8) * params);
  EXPECT_DOUBLE_EQ(z[2].static_bytes, (2 + 16.0 / 8) * params);
  EXPECT_GT(z[3].static_bytes, 18.0 / 8 * params);  // plus the two layers gathered
  EXPECT_LT(z[3].static_bytes, z[2].static_bytes);
  EXPECT_DOUBLE_EQ(z[1].dp_time, z[2].dp_time);
  // Gathered twice for every micro-batch (F and backward, analysis/zero.hpp), the gradients reduced once:
  // 2m gathers of 2-byte weights and one reduce-scatter of 4-byte gradients against zero-2's one of each.
  EXPECT_GT(z[3].dp_time, z[2].dp_time * 2 * z[3].m / 3);
  EXPECT_LT(z[3].dp_time, z[2].dp_time * z[3].m);
  EXPECT_EQ(check_layout(pr, layout(8, 8, 8, "1f1b", 1, Recompute::full, false, 4)).reason, "zero");
}

// Context parallelism: each rank holds s/cp of every sequence; K and V are gathered over the cp group.
TEST(PlanContext, CpSplitsTheSequenceAndGathersKeysAndValues) {
  Problem pr = problem("llama3-405b", "h100-80gb", 128);
  pr.model.seq = 131072;
  Layout l = layout(8, 16, 8, "1f1b", 1, Recompute::none, true, 2);
  l.cp = 16;
  const Prediction p = evaluate(pr, l);
  bool gathered = false;
  for (const OpCost& x : p.layer_ops) gathered = gathered || std::string(x.name) == "cp-allgather-kv";
  EXPECT_TRUE(gathered);
  EXPECT_NEAR(p.tokens_per_second * p.step_time, 128.0 * 131072, 1e-3);
  l.cp = 3;
  EXPECT_EQ(check_layout(pr, l).reason, "context");
}

}  // namespace
}  // namespace pipebench::analysis::plan
