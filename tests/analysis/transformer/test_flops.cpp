// The cost model's FLOPs per operation (analysis/transformer/flops.hpp) against the literature's model
// FLOPs and counts worked out by hand.
#include <gtest/gtest.h>

#include <map>

#include "analysis/transformer/flops.hpp"

namespace pipebench::analysis::transformer {
namespace {

Shape small() {
  Shape m;
  m.layers = 4, m.hidden = 64, m.heads = 8, m.seq = 32, m.vocab = 100, m.micro_batch = 2;
  return m;
}

std::map<Op, Flops> by_op(const std::vector<OpFlops>& ops) {
  std::map<Op, Flops> out;
  for (const auto& o : ops) out[o.op] = o.flops;
  return out;
}

// Korthikanti et al. 2022 (and Narayanan et al. 2021): 72 B L s h^2 (1 + s/(6h) + V/(12 h L)) model
// FLOPs per step of B sequences; with full recomputation 96 B L s h^2 (1 + s/(6h) + V/(16 h L)).
TEST(TransformerFlops, ModelFlopsAreKorthikantis) {
  Shape m;
  m.layers = 96, m.hidden = 12288, m.heads = 96, m.seq = 2048, m.vocab = 51200;
  const double B = 1536, L = m.layers, s = m.seq, h = m.hidden, V = m.vocab;
  const double model = 72 * B * L * s * h * h * (1 + s / (6 * h) + V / (12 * h * L));
  EXPECT_NEAR(model_flops_per_step(m, 1536) / model, 1.0, 1e-12);
  const double hardware = 96 * B * L * s * h * h * (1 + s / (6 * h) + V / (16 * h * L));
  const double full = model_flops_per_step(m, 1536) + recompute_flops_per_step(m, 1536, Recompute::full,
                                                                               Convention::megatron);
  EXPECT_NEAR(full / hardware, 1.0, 1e-12);
  EXPECT_EQ(recompute_flops_per_step(m, 1536, Recompute::none, Convention::megatron), 0.0);
  // Selective: Megatron reruns both attention products (4 s h per token), the kernels the scores only.
  EXPECT_DOUBLE_EQ(recompute_flops_per_step(m, 1536, Recompute::selective, Convention::megatron),
                   B * s * L * 4 * s * h);
  EXPECT_DOUBLE_EQ(recompute_flops_per_step(m, 1536, Recompute::selective, Convention::pipebench),
                   B * s * L * 2 * s * h);
}

// The whole model on one rank, F + I + W of one micro-batch of b sequences: exactly the same formula
// with B = b, for every recomputation's model part.
TEST(TransformerFlops, StagePassesSumToTheModelFlops) {
  const Shape m = small();
  const double b = 2, L = 4, s = 32, h = 64, V = 100, n = b * s;
  for (const Recompute r : kRecomputes) {
    const Flops f = stage_flops(m, {}, whole(m), r, Convention::pipebench);
    EXPECT_DOUBLE_EQ(f.total() - f.recompute, 72 * b * L * s * h * h * (1 + s / (6 * h) + V / (12 * h * L)));
    EXPECT_DOUBLE_EQ(f.forward, L * (24 * n * h * h + 4 * n * s * h) + 2 * n * h * V);
    EXPECT_DOUBLE_EQ(f.backward_weight, L * 24 * n * h * h + 2 * n * h * V);
    const double rc = r == Recompute::full ? L * (24 * n * h * h + 4 * n * s * h)
                                           : r == Recompute::selective ? L * 2 * n * s * h : 0;
    EXPECT_DOUBLE_EQ(f.recompute, rc);  // the head is never recomputed
    EXPECT_DOUBLE_EQ(f.backward_input, L * (24 * n * h * h + 8 * n * s * h) + 2 * n * h * V + rc);
  }
}

// Per operation, one micro-batch on one of t = 2 ranks: the weight products' F = I = W, the attention's
// I = 2 F and W = 0; n = 64 tokens, h = 64, s = 32.
TEST(TransformerFlops, PerOperationOnATensorParallelRank) {
  const Shape m = small();
  const double n = 64, h = 64, s = 32, t = 2;
  auto ops = by_op(layer_ops(m, {2}, Recompute::none, Convention::pipebench));
  const std::map<Op, double> forward = {{Op::qkv, 2 * n * h * 3 * h / t},  {Op::scores, 2 * n * s * h / t},
                                        {Op::values, 2 * n * s * h / t},   {Op::proj, 2 * n * h * h / t},
                                        {Op::fc1, 2 * n * h * 4 * h / t}, {Op::fc2, 2 * n * 4 * h * h / t}};
  ASSERT_EQ(ops.size(), forward.size());  // no router in a dense layer
  for (const auto& [op, f] : forward) {
    SCOPED_TRACE(op_name(op));
    const bool attention = op == Op::scores || op == Op::values;
    EXPECT_DOUBLE_EQ(ops[op].forward, f);
    EXPECT_DOUBLE_EQ(ops[op].backward_input, attention ? 2 * f : f);
    EXPECT_DOUBLE_EQ(ops[op].backward_weight, attention ? 0 : f);
  }
  // Selective: the kernels rerun Q K^T; Megatron reruns the core attention, Q K^T and the product with V.
  ops = by_op(layer_ops(m, {2}, Recompute::selective, Convention::pipebench));
  EXPECT_DOUBLE_EQ(ops[Op::scores].recompute, forward.at(Op::scores));
  EXPECT_EQ(ops[Op::values].recompute, 0.0);
  ops = by_op(layer_ops(m, {2}, Recompute::selective, Convention::megatron));
  EXPECT_DOUBLE_EQ(ops[Op::values].recompute, forward.at(Op::values));
  EXPECT_DOUBLE_EQ(layer_flops(m, {2}, Recompute::none, Convention::pipebench).forward * 2,
                   layer_flops(m, {}, Recompute::none, Convention::pipebench).forward);
}

// The output layer: V/t of it per rank when the vocabulary is split, else all of it on every rank
// (replicated: model FLOPs count it once).
TEST(TransformerFlops, HeadSplitOrReplicated) {
  const Shape m = small();
  const double n = 64, h = 64, V = 100;
  const Flops split = head_flops(m, {2, false, true}), replicated = head_flops(m, {2});
  EXPECT_DOUBLE_EQ(split.forward, 2 * n * h * V / 2);
  EXPECT_EQ(split.replicated, 0.0);
  EXPECT_DOUBLE_EQ(replicated.forward, 2 * n * h * V);
  EXPECT_DOUBLE_EQ(replicated.replicated, 2 * n * h * V);
  EXPECT_DOUBLE_EQ(split.backward_input, split.forward);
  EXPECT_DOUBLE_EQ(split.backward_weight, split.forward);
}

// Grouped-query attention and SwiGLU per token: QKV 2 h (h + 2 kv), fc1 2 h (2 f), fc2 2 f h.
TEST(TransformerFlops, GroupedQueryAttentionAndSwiGlu) {
  Shape m = small();
  m.kv_heads = 2, m.ffn = 176, m.gated_mlp = true;
  const double h = 64, kv = 16, f = 176, s = 32;
  EXPECT_DOUBLE_EQ(layer_forward_flops_per_token(m), 2 * h * (h + 2 * kv) + 4 * s * h + 2 * h * h + 2 * h * 2 * f + 2 * f * h);
  EXPECT_DOUBLE_EQ(head_forward_flops_per_token(m), 2 * h * 100);
}

// MoE: each token passes through top_k routed and every shared expert; the router is replicated.
TEST(TransformerFlops, MixtureOfExperts) {
  Shape m = small();
  m.experts = 8, m.top_k = 2, m.shared_experts = 1, m.expert_ffn = 32, m.moe_every = 2;
  const double h = 64, s = 32, fe = 32, n = 64;
  const double dense = 24 * h * h + 4 * s * h, moe = 8 * h * h + 4 * s * h + 3 * (4 * h * fe) + 2 * h * 8;
  EXPECT_DOUBLE_EQ(layer_forward_flops_per_token(m, true), moe);
  EXPECT_DOUBLE_EQ(model_flops_per_step(m, 1), 3 * 32 * (2 * dense + 2 * moe + 2 * h * 100));
  const Flops f = layer_flops(m, {2}, Recompute::none, Convention::pipebench, true);
  EXPECT_DOUBLE_EQ(f.replicated, n * 2 * h * 8);
  EXPECT_DOUBLE_EQ(f.forward, n * (moe - 2 * h * 8) / 2 + n * 2 * h * 8);
}

}  // namespace
}  // namespace pipebench::analysis::transformer
