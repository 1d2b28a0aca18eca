#pragma once
// Parameter counts of the transformer (docs/formulas.md "Parameters"), whole or as one tensor-parallel
// rank holds them: Megatron's column-parallel QKV and fc1 and row-parallel projection and fc2 hold 1/t
// of their weights (and QKV's and fc1's biases), while the row-parallel biases, the LayerNorms and the
// MoE router are replicated. Exact integers; UsageError where a count overflows 64 bits.
#include <cstdint>

#include "analysis/transformer/shape.hpp"

namespace pipebench::analysis::transformer {

// One layer, dense or MoE, as a rank of `split` holds it; split.t = 1 is the whole layer. GPT (t = 1):
// 12h^2 + 13h.
std::uint64_t layer_params(const Shape& m, const Split& split = {}, bool moe = false);
// An MoE layer's router and experts (the part that replaces the MLP) as a rank of `split` holds them:
// the router h x E, and E/ep routed plus every shared expert's MLP (fc1 and its bias over t).
std::uint64_t moe_params(const Shape& m, const Split& split = {});
// The routed experts alone of one MoE layer on a rank of `split` (E/ep of them, fc1 and fc2 over t, the
// fc2 biases whole): the part expert parallelism shards, whose gradients reduce over cp d / ep ranks.
std::uint64_t routed_expert_params(const Shape& m, const Split& split = {});
// The token embedding: V x h, or this rank's V/t rows (vocabulary-parallel).
std::uint64_t embedding_params(const Shape& m, const Split& split = {});
// The position embedding: s x h when learned, else 0. Replicated over tensor-parallel ranks.
std::uint64_t position_params(const Shape& m);
// The final LayerNorm's gain and shift: 2h, replicated.
std::uint64_t final_norm_params(const Shape& m);
// The final LayerNorm and the output layer: h x V (h x V/t vocabulary-parallel), or nothing when tied
// to an embedding on the same stage (`with_embedding`); tied on another stage, a copy of it.
std::uint64_t head_params(const Shape& m, const Split& split = {}, bool with_embedding = false);
// A stage's parameters on one rank: its layers, plus the embeddings and the head it holds.
std::uint64_t stage_params(const Shape& m, const Split& split, const StageParts& part);
// The whole model, counted once (tied embeddings counted once): GPT-3 175B's 174.6 billion.
std::uint64_t total_params(const Shape& m);

}  // namespace pipebench::analysis::transformer
