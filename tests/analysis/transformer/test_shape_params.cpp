// The cost model's shape check and parameter counts (analysis/transformer/), against the published
// counts and counts worked out by hand.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "analysis/error.hpp"
#include "analysis/transformer/params.hpp"
#include "analysis/transformer/shape.hpp"

namespace pipebench::analysis::transformer {
namespace {

Shape gpt3() {
  Shape m;
  m.layers = 96, m.hidden = 12288, m.heads = 96, m.seq = 2048, m.vocab = 51200;
  m.tie_embeddings = true;
  return m;
}

Shape llama3_405b() {
  Shape m;
  m.layers = 126, m.hidden = 16384, m.heads = 128, m.kv_heads = 8, m.seq = 8192, m.vocab = 128256;
  m.ffn = 53248, m.gated_mlp = true, m.learned_positions = false;
  return m;
}

void expect_refused(const Shape& m, const Split& s, const std::string& message) {
  try {
    check(m, s);
    ADD_FAILURE() << "no error, expected: " << message;
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(TransformerShape, EachBadValueIsNamedByItsFlag) {
  const Shape ok = gpt3();
  EXPECT_NO_THROW(check(ok, {8, true, true, 1}));
  Shape m = ok;
  m.layers = 0;
  expect_refused(m, {}, "--layers 0 is not allowed: must be >= 1");
  m = ok, m.heads = 100;
  expect_refused(m, {}, "--heads 100 is not allowed: must divide --hidden 12288");
  m = ok, m.kv_heads = 5;
  expect_refused(m, {}, "--kv-heads 5 is not allowed: must divide --heads 96");
  m = ok, m.ffn = -1;
  expect_refused(m, {}, "--ffn -1 is not allowed: must be >= 1");
  m = ok, m.micro_batch = 0;
  expect_refused(m, {}, "--micro-batch-size 0 is not allowed: must be >= 1");
  expect_refused(ok, {5}, "tensor-parallel size t = 5 is not allowed: must divide --heads 96 (heads are split whole "
                          "over the tensor-parallel ranks)");
  m = ok, m.kv_heads = 4;
  expect_refused(m, {8}, "tensor-parallel size t = 8 is not allowed: must divide --kv-heads 4 (key/value heads are "
                         "split whole over the tensor-parallel ranks)");
  m = ok, m.ffn = 1000;
  expect_refused(m, {16}, "tensor-parallel size t = 16 is not allowed: must divide the MLP size 1000 (fc1's columns "
                          "and fc2's rows are split over the tensor-parallel ranks)");
  m = ok, m.vocab = 50257;
  expect_refused(m, {8, false, true}, "vocabulary size 50257 is not divisible by the tensor-parallel size 8 (the "
                                      "vocabulary-parallel embedding and output layer hold V/t rows each): use a "
                                      "multiple of 8, e.g. 50264, or --vocab-parallel off");
  EXPECT_NO_THROW(check(m, {8}));  // replicated, any V
  expect_refused(ok, {1, true}, "--sequence-parallel needs a tensor-parallel size t > 1 (t is 1): it splits the "
                                "sequence over the tensor-parallel ranks");
  m = ok, m.seq = 2047, m.heads = 32, m.hidden = 4096;
  expect_refused(m, {32, true}, "--sequence-parallel: sequence length 2047 is not divisible by the tensor-parallel "
                                "size 32 (each rank holds s/t positions)");
  expect_refused(ok, {1, false, false, 3}, "--context-parallel 3 is not allowed: must be >= 1 and divide --seq 2048 "
                                           "(each rank holds s/cp positions)");
  m = ok, m.experts = 8, m.top_k = 9;
  expect_refused(m, {}, "--top-k 9 is not allowed: must be in [1, --experts 8]");
  m.top_k = 2, m.moe_every = 0;
  expect_refused(m, {}, "--moe-every 0 is not allowed: must be >= 1");
}

// Narayanan et al. 2021: 12 L h^2 (1 + 13/(12h) + (V + s)/(12 L h)) with tied embeddings, plus the
// final LayerNorm; GPT-3's 174.6 billion.
TEST(TransformerParams, Gpt3Is174Point6Billion) {
  const Shape m = gpt3();
  const double L = m.layers, h = m.hidden, V = m.vocab, s = m.seq;
  EXPECT_EQ(layer_params(m), 12 * 12288ull * 12288 + 13 * 12288ull);
  const double literature = 12 * L * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * L * h)) + 2 * h;
  EXPECT_DOUBLE_EQ(double(total_params(m)), literature);
  EXPECT_NEAR(double(total_params(m)) / 1e9, 174.6, 0.05);
  // Untied: the output layer is a second V x h matrix.
  Shape untied = m;
  untied.tie_embeddings = false;
  EXPECT_EQ(total_params(untied) - total_params(m), 51200ull * 12288);
}

// A tensor-parallel rank holds 1/t of QKV, fc1 (weights and biases), the projection and fc2 (weights),
// and all of the row-parallel biases and the LayerNorms: 12 h^2/t + 7 h/t + 6 h.
TEST(TransformerParams, PerTensorParallelRank) {
  const Shape m = gpt3();
  const std::uint64_t h = 12288;
  for (const int t : {1, 2, 8}) EXPECT_EQ(layer_params(m, {t}), 12 * h * h / t + 7 * h / t + 6 * h) << t;
  EXPECT_EQ(embedding_params(m, {8, false, true}), 51200 / 8 * h);
  EXPECT_EQ(embedding_params(m, {8}), 51200 * h);  // replicated without the vocabulary split
  EXPECT_EQ(position_params(m), 2048 * h);
  EXPECT_EQ(final_norm_params(m), 2 * h);
  EXPECT_EQ(head_params(m, {}, true), 2 * h);                       // tied, the embedding on the stage
  EXPECT_EQ(head_params(m, {8, false, true}, false), 2 * h + 6400 * h);  // tied copy on the last stage
}

// Grouped-query attention and SwiGLU, by hand: h = 64, a = 8 (d = 8), 2 kv heads (kv width 16), f = 176.
TEST(TransformerParams, GroupedQueryAttentionAndSwiGlu) {
  Shape m;
  m.layers = 1, m.hidden = 64, m.heads = 8, m.kv_heads = 2, m.ffn = 176, m.gated_mlp = true, m.seq = 16, m.vocab = 10;
  // QKV 64 x 96 + 96, projection 64 x 64 + 64, fc1 64 x 352 + 352, fc2 176 x 64 + 64, LayerNorms 256.
  EXPECT_EQ(layer_params(m), 6144u + 96 + 4096 + 64 + 22528 + 352 + 11264 + 64 + 256);
  // Llama 3 405B: Meta's 405,853,388,800 (no biases, RMSNorm gains only) plus the biases and LayerNorm
  // shifts this GPT-style layer has.
  const Shape l = llama3_405b();
  const std::uint64_t h = 16384, kv = 1024, f = 53248;
  EXPECT_EQ(total_params(l), 405853388800ull + 126 * ((h + 2 * kv) + h + 2 * f + h + 2 * h) + h);
}

// MoE, by hand: h = 16, a = 2, 4 experts and 1 shared of inner size 32, top-2, every other layer.
TEST(TransformerParams, MixtureOfExpertsLayers) {
  Shape m;
  m.layers = 4, m.hidden = 16, m.heads = 2, m.seq = 8, m.vocab = 10;
  m.experts = 4, m.top_k = 2, m.expert_ffn = 32, m.shared_experts = 1, m.moe_every = 2;
  const std::uint64_t attention = 16 * 48 + 48 + 256 + 16, expert = 16 * 32 + 32 + 32 * 16 + 16, norms = 64;
  EXPECT_EQ(layer_params(m, {}, true), attention + 5 * expert + 16 * 4 + norms);
  EXPECT_EQ(layer_params(m, {}, false), 12u * 16 * 16 + 13 * 16);
  EXPECT_EQ(stage_params(m, {}, {0, 4, false, false}), 2 * layer_params(m, {}, true) + 2 * layer_params(m, {}, false));
}

// The closed-form count of MoE layers in a range is the count of moe_layer over it, for every range of
// 0..40 layers and every frequency (and none without experts).
TEST(TransformerShape, MoeLayersInRange) {
  for (int every : {1, 2, 3, 7}) {
    Shape m;
    m.experts = 8, m.moe_every = every;
    for (int first = 0; first < 40; ++first)
      for (int n = 0; first + n <= 40; ++n) {
        int loop = 0;
        for (int l = first; l < first + n; ++l) loop += m.moe_layer(l) ? 1 : 0;
        ASSERT_EQ(m.moe_layers_in(first, n), loop) << "every " << every << ", layers " << first << " + " << n;
      }
  }
  Shape dense;
  EXPECT_EQ(dense.moe_layers_in(0, 16), 0);
}

}  // namespace
}  // namespace pipebench::analysis::transformer
