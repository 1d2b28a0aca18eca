#include "analysis/transformer/params.hpp"

#include "analysis/transformer/count.hpp"

namespace pipebench::analysis::transformer {

namespace {

// A block's parameters: `split` are divided over the tensor-parallel ranks, `replicated` are not.
struct Block {
  std::uint64_t split = 0, replicated = 0;
};

// QKV weight [h, h + 2 kv] and bias (column-parallel), projection weight [h, h] (row-parallel), and
// the projection's bias (replicated: added once after the all-reduce).
Block attention(const Shape& m) {
  const std::uint64_t h = u64(m.hidden), qkv = add(h, mul(2, u64(m.kv_width())));
  return {add(add(mul(h, qkv), qkv), mul(h, h)), h};
}

// An MLP of inner size f: fc1 [h, g f] and its bias (column-parallel; g = 2 for a gated MLP), fc2
// [f, h] (row-parallel) and its bias (replicated).
Block mlp(const Shape& m, std::uint64_t f) {
  const std::uint64_t h = u64(m.hidden), g = u64(m.fc1_factor());
  return {add(add(mul(h, mul(g, f)), mul(g, f)), mul(f, h)), h};
}

// An MoE layer's MLPs on one ep rank: its E/ep routed experts and every shared expert, and the router
// [h, experts] (replicated, as Megatron-Core keeps it).
Block experts(const Shape& m, int ep) {
  const Block one = mlp(m, u64(m.expert_ffn_size()));
  const std::uint64_t n = add(u64(m.experts) / u64(ep), u64(m.shared_experts));
  return {mul(n, one.split), add(mul(n, one.replicated), mul(u64(m.hidden), u64(m.experts)))};
}

}  // namespace

std::uint64_t moe_params(const Shape& m, const Split& split) {
  const Block f = experts(m, split.ep);
  return add(f.split / u64(split.t), f.replicated);
}

std::uint64_t routed_expert_params(const Shape& m, const Split& split) {
  const Block one = mlp(m, u64(m.expert_ffn_size()));
  const std::uint64_t n = u64(m.experts) / u64(split.ep);
  return add(mul(n, one.split) / u64(split.t), mul(n, one.replicated));
}

std::uint64_t layer_params(const Shape& m, const Split& split, bool moe) {
  const Block a = attention(m), f = moe ? experts(m, split.ep) : mlp(m, u64(m.ffn_size()));
  const std::uint64_t norms = mul(4, u64(m.hidden));  // two LayerNorms' gains and biases
  return add(add(add(a.split, f.split) / u64(split.t), add(a.replicated, f.replicated)), norms);
}

std::uint64_t embedding_params(const Shape& m, const Split& split) {
  const std::uint64_t rows = u64(split.vocab_split() ? m.vocab / split.t : m.vocab);
  return mul(rows, u64(m.hidden));
}

std::uint64_t position_params(const Shape& m) { return m.learned_positions ? mul(u64(m.seq), u64(m.hidden)) : 0; }

std::uint64_t final_norm_params(const Shape& m) { return mul(2, u64(m.hidden)); }

std::uint64_t head_params(const Shape& m, const Split& split, bool with_embedding) {
  const std::uint64_t norm = final_norm_params(m);
  return m.tie_embeddings && with_embedding ? norm : add(norm, embedding_params(m, split));
}

std::uint64_t stage_params(const Shape& m, const Split& split, const StageParts& part) {
  std::uint64_t n = 0;
  if (m.experts == 0) {
    n = mul(u64(part.layers), layer_params(m, split));
  } else {
    for (int l = part.first_layer; l < part.first_layer + part.layers; ++l)
      n = add(n, layer_params(m, split, m.moe_layer(l)));
  }
  if (part.embedding) n = add(n, add(embedding_params(m, split), position_params(m)));
  if (part.head) n = add(n, head_params(m, split, part.embedding));
  return n;
}

std::uint64_t total_params(const Shape& m) { return stage_params(m, {}, whole(m)); }

}  // namespace pipebench::analysis::transformer
