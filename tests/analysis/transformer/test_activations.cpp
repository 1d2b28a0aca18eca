// The cost model's activation bytes (analysis/transformer/activations.hpp): Korthikanti et al. 2022's
// rows of docs/formulas.md for the megatron convention, docs/transformer.md's inventory of the
// kernels for the pipebench one, both from the one table.
#include <gtest/gtest.h>

#include <string>

#include "analysis/transformer/activations.hpp"

namespace pipebench::analysis::transformer {
namespace {

// s = 32, b = 2, h = 64, a = 8: s b h = 4096, a s / h = 4.
Shape small() {
  Shape m;
  m.layers = 4, m.hidden = 64, m.heads = 8, m.seq = 32, m.vocab = 100, m.micro_batch = 2;
  return m;
}
constexpr double kSbh = 4096, kAsH = 4;

MegatronStash layer(const Split& s, Recompute r, bool flash = false) {
  MegatronOptions o;
  o.flash_attention = flash;
  return megatron_stash(small(), s, r, Part::layer, o);
}

TEST(MegatronActivations, KorthikantiRows) {
  using R = Recompute;
  EXPECT_DOUBLE_EQ(layer({}, R::none).forward, kSbh * (34 + 5 * kAsH));  // no parallelism
  for (const int t : {2, 4, 8}) {
    SCOPED_TRACE(t);
    EXPECT_DOUBLE_EQ(layer({t}, R::none).forward, kSbh * (10 + 24.0 / t + 5 * kAsH / t));       // tensor parallel
    EXPECT_DOUBLE_EQ(layer({t, true}, R::none).forward, kSbh * (34.0 / t + 5 * kAsH / t));      // + sequence parallel
    EXPECT_DOUBLE_EQ(layer({t, true}, R::selective).forward, 34 * kSbh / t);                    // selective + SP
    EXPECT_DOUBLE_EQ(layer({t}, R::selective).forward, kSbh * (10 + 24.0 / t));
    EXPECT_DOUBLE_EQ(layer({t}, R::full).forward, 2 * kSbh);                                    // the layer input
    EXPECT_DOUBLE_EQ(layer({t, true}, R::full).forward, 2 * kSbh / t);
    EXPECT_DOUBLE_EQ(layer({t}, R::none, true).forward, kSbh * (10 + 24.0 / t));                // flash attention
    // After I, for W: the inputs of QKV (2), the projection (2/t), fc1 (2) and fc2 (8/t).
    for (const R r : kRecomputes) EXPECT_DOUBLE_EQ(layer({t}, r).weight, kSbh * (4 + 10.0 / t));
    EXPECT_DOUBLE_EQ(layer({t, true}, R::none).weight, 14 * kSbh / t);
    EXPECT_DOUBLE_EQ(layer({t}, R::none).scores, kSbh * 5 * kAsH / t);  // softmax 2, mask 1, dropout 2
    EXPECT_EQ(layer({t}, R::none, true).scores, 0.0);
  }
}

// The closed form and the row-by-row sum of the same table agree (t a power of two: both exact).
TEST(MegatronActivations, ClosedFormIsTheTableSum) {
  for (const Recompute r : kRecomputes)
    for (const Split s : {Split{1}, Split{2}, Split{4, true}}) {
      double forward = 0, weight = 0;
      for (const Kept& k : kept(small(), s, r, Part::layer, Convention::megatron)) {
        const double bytes = static_cast<double>(k.elements) * (k.element == Element::mask ? 1 : 2);
        (k.life == Life::i_to_w ? weight : forward) += bytes;
        if (k.life == Life::f_to_w) weight += bytes;
      }
      EXPECT_DOUBLE_EQ(layer(s, r).forward, forward) << recompute_name(r) << " t=" << s.t;
      EXPECT_DOUBLE_EQ(layer(s, r).weight, weight) << recompute_name(r) << " t=" << s.t;
    }
}

// The planner's end stages: the embedding's output on the first, the fp32 logits (V/t of them) from F
// to I and the output layer's input from I to W on the last.
TEST(MegatronActivations, EmbeddingAndHead) {
  MegatronOptions bf16;
  const double n = 64, h = 64, V = 100;
  EXPECT_DOUBLE_EQ(megatron_stash(small(), {}, Recompute::full, Part::embedding, bf16).forward, 2 * n * h);
  const MegatronStash head = megatron_stash(small(), {4, false, true}, Recompute::full, Part::head, bf16);
  EXPECT_DOUBLE_EQ(head.forward, 4 * n * V / 4);
  EXPECT_DOUBLE_EQ(head.weight, 2 * n * h);
}

Stash kernels(const Split& s, Recompute r, Part p = Part::layer, std::uint64_t e = 4, const Shape& m = small()) {
  return stash(m, s, r, p, e);
}

// docs/formulas.md "What pipebench's transformer holds", e = 4 and e = 8 (s b h = 4096, a s/h = 4).
TEST(PipebenchActivations, TheKernelsInventory) {
  using R = Recompute;
  const std::uint64_t sbh = 4096, sb = 64, as_h = 4;
  for (const std::uint64_t e : {4u, 8u}) {
    for (const std::uint64_t t : {1u, 2u, 4u}) {
      SCOPED_TRACE(t);
      const Split s{static_cast<int>(t)};
      // s b h (4e + 12e/t + e a s/(h t)) + 2e s b
      EXPECT_EQ(kernels(s, R::none, Part::layer, e).forward, sbh * (4 * e + 12 * e / t + e * as_h / t) + 2 * e * sb);
      EXPECT_EQ(kernels(s, R::selective, Part::layer, e).forward, sbh * (4 * e + 12 * e / t) + 2 * e * sb);
      EXPECT_EQ(kernels(s, R::full, Part::layer, e).forward, e * sbh);
      for (const R r : kRecomputes) EXPECT_EQ(kernels(s, r, Part::layer, e).weight, sbh * (8 * e + 12 * e / t));
    }
    // Sequence-parallel, t = 2: s b h (2e/t + 2e + 12e/t + e a s/(h t)) + 2e s b/t; after I
    // s b h (4e + 4e/t + 12e/t); full: the input shard.
    EXPECT_EQ(kernels({2, true}, R::none, Part::layer, e).forward, sbh * (e + 2 * e + 6 * e + e * as_h / 2) + e * sb);
    EXPECT_EQ(kernels({2, true}, R::none, Part::layer, e).weight, sbh * (4 * e + 2 * e + 6 * e));
    EXPECT_EQ(kernels({2, true}, R::full, Part::layer, e).forward, e * sbh / 2);
  }
  EXPECT_EQ(kernels({}, R::none).forward, 4096u * 80 + 512);  // t = 1, e = 4: s b h (64 + 4 a s/h) + 8 s b
  EXPECT_EQ(kernels({}, R::none).weight, 4096u * 80);
}

TEST(PipebenchActivations, EmbeddingAndHead) {
  const std::uint64_t n = 64, h = 64, V = 100;
  for (const Recompute r : kRecomputes) {  // the end stages are never recomputed
    EXPECT_EQ(kernels({}, r, Part::embedding).forward, 0u);
    EXPECT_EQ(kernels({}, r, Part::embedding).weight, 4 * n * h);  // the output gradient
    EXPECT_EQ(kernels({}, r, Part::head).forward, 4 * (2 * n * h + n + n * V));
    EXPECT_EQ(kernels({}, r, Part::head).weight, 4 * (3 * n * h + n * V));
  }
  // Sequence- and vocabulary-parallel, t = 2: xhat, rstd and dy on n/t rows; V/t logits.
  EXPECT_EQ(kernels({2, true, true}, Recompute::none, Part::head).forward, 4 * (n * h / 2 + n * h + n / 2 + n * V / 2));
  EXPECT_EQ(kernels({2, true, true}, Recompute::none, Part::head).weight, 4 * (2 * n * h / 2 + n * h + n * V / 2));
  EXPECT_EQ(kernels({2, true, true}, Recompute::none, Part::embedding).weight, 4 * n * h);  // gathered
}

// Grouped-query attention and SwiGLU change the widths of K, V, fc1's output and the GELU's.
TEST(PipebenchActivations, GroupedQueryAttentionAndSwiGlu) {
  Shape m = small();
  m.kv_heads = 2, m.ffn = 176, m.gated_mlp = true;
  const std::uint64_t n = 64, h = 64, kv = 16, f = 176, scores = 8 * 32;
  // xhat1, y1, Q, projection input, xhat2, y2: 6 n h; K, V; probabilities; fc1 output 2f, GELU output f;
  // two 1/std.
  const std::uint64_t forward = 6 * n * h + 2 * n * kv + n * scores + n * 2 * f + n * f + 2 * n;
  EXPECT_EQ(stash(m, {}, Recompute::none, Part::layer, 4).forward, 4 * forward);
  // After I: xhat1, y1, ctx, xhat2, y2, g, and the output gradients of fc2, fc1 (2f), LN2, proj, QKV, LN1.
  const std::uint64_t weight = 5 * n * h + n * f + n * h + n * 2 * f + n * h + n * h + n * (h + 2 * kv) + n * h;
  EXPECT_EQ(stash(m, {}, Recompute::none, Part::layer, 4).weight, 4 * weight);
}

}  // namespace
}  // namespace pipebench::analysis::transformer
