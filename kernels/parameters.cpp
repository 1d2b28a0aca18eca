#include "kernels/parameters.hpp"

#include <cmath>
#include <tuple>

namespace pipebench::kernels {

std::vector<ParamInfo> parameter_table(const TransformerConfig& c) {
  validate(c);
  using Init = ParamInfo::Init;
  using Split = ParamInfo::Split;
  const std::size_t h = static_cast<std::size_t>(c.hidden), ht = h / static_cast<std::size_t>(c.tp_size);
  const std::size_t s = static_cast<std::size_t>(c.seq), vocab = static_cast<std::size_t>(c.local_vocab());
  // Vocabulary-parallel: the embedding's rows and the output layer's columns of this rank's vocabulary.
  const Split vrows = c.vocab_split() ? Split::rows : Split::none, vcols = c.vocab_split() ? Split::columns : Split::none;
  // GPT-2 initialisation: N(0, 0.02)-like weights, the residual branches' output projections scaled by
  // 1/sqrt(2L), biases 0, LayerNorm gains 1.
  const double std_w = 0.02, std_out = 0.02 / std::sqrt(2.0 * c.layers);
  std::vector<ParamInfo> table;
  std::size_t offset = 0;
  auto add = [&](std::string name, int layer, std::size_t rows, std::size_t cols, Init init, double stddev,
                 Split split) {
    ParamInfo p;
    p.name = std::move(name);
    p.layer = layer;
    p.offset = offset;
    p.rows = rows;
    p.cols = cols;
    p.init = init;
    p.stddev = stddev;
    p.split = split;
    offset += p.size();
    table.push_back(std::move(p));
  };
  // An MoE layer's experts as stacks, fc1 weights [h, F] of each in turn, then the fc1 biases, fc2
  // weights [F, h] and fc2 biases; each named by its global index (the values do not depend on ep).
  // Tensor-parallel (expert tensor parallelism = t, Megatron-Core's default): fc1 column-parallel
  // [h, F/t] with its bias, fc2 row-parallel [F/t, h], its bias replicated, as the dense MLP.
  auto experts = [&](const std::string& p, int l, int first, int n) {
    const std::size_t f = static_cast<std::size_t>(c.expert_ffn_size() / c.tp_size);
    const bool tp = c.tp_size > 1;
    for (const auto& [what, rows, cols, init, sd, split] :
         {std::tuple{".fc1.weight", h, f, Init::normal, std_w, tp ? Split::columns : Split::none},
          std::tuple{".fc1.bias", std::size_t{1}, f, Init::zeros, 0.0, tp ? Split::columns : Split::none},
          std::tuple{".fc2.weight", f, h, Init::normal, std_out, tp ? Split::rows : Split::none},
          std::tuple{".fc2.bias", std::size_t{1}, h, Init::zeros, 0.0, Split::none}})
      for (int e = first; e < first + n; ++e) add(p + std::to_string(e) + what, l, rows, cols, init, sd, split);
  };
  if (c.embedding) {
    add("embedding.tokens", -1, vocab, h, Init::normal, std_w, vrows);
    add("embedding.positions", -1, s, h, Init::normal, std_w, Split::none);
  }
  for (int l = c.first_layer; l < c.first_layer + c.num_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    add(p + "ln1.gamma", l, 1, h, Init::ones, 0, Split::none);
    add(p + "ln1.beta", l, 1, h, Init::zeros, 0, Split::none);
    add(p + "qkv.weight", l, h, 3 * ht, Init::normal, std_w, Split::qkv_columns);
    add(p + "qkv.bias", l, 1, 3 * ht, Init::zeros, 0, Split::qkv_columns);
    add(p + "proj.weight", l, ht, h, Init::normal, std_out, Split::rows);
    add(p + "proj.bias", l, 1, h, Init::zeros, 0, Split::none);
    add(p + "ln2.gamma", l, 1, h, Init::ones, 0, Split::none);
    add(p + "ln2.beta", l, 1, h, Init::zeros, 0, Split::none);
    if (c.moe_layer(l)) {  // the router and the shared experts here, the routed experts after the head
      add(p + "router.weight", l, h, static_cast<std::size_t>(c.experts), Init::normal, std_w, Split::none);
      experts(p + "shared.", l, 0, c.shared_experts);
      continue;
    }
    add(p + "fc1.weight", l, h, 4 * ht, Init::normal, std_w, Split::columns);
    add(p + "fc1.bias", l, 1, 4 * ht, Init::zeros, 0, Split::columns);
    add(p + "fc2.weight", l, 4 * ht, h, Init::normal, std_out, Split::rows);
    add(p + "fc2.bias", l, 1, h, Init::zeros, 0, Split::none);
  }
  if (c.head) {
    add("head.ln.gamma", -1, 1, h, Init::ones, 0, Split::none);
    add("head.ln.beta", -1, 1, h, Init::zeros, 0, Split::none);
    // Tied: the embedding's matrix [V, h]; a copy of it (same name, same values) on a stage without it.
    if (!c.tie_embeddings)
      add("head.out.weight", -1, h, vocab, Init::normal, std_w, vcols);
    else if (!c.embedding)
      add("embedding.tokens", -1, vocab, h, Init::normal, std_w, vrows);
  }
  // The routed experts last: the one range whose gradients reduce over the expert-data-parallel group.
  const int local = c.experts / c.ep_size;
  for (int l = c.first_layer; l < c.first_layer + c.num_layers; ++l)
    if (c.moe_layer(l)) experts("layers." + std::to_string(l) + ".experts.", l, c.ep_rank * local, local);
  return table;
}

bool tied_range(const TransformerConfig& c, const std::vector<ParamInfo>& table, std::size_t& offset, std::size_t& count) {
  if (!c.tie_embeddings || c.embedding == c.head) return false;
  for (const ParamInfo& p : table)
    if (p.name == "embedding.tokens") {
      offset = p.offset;
      count = p.size();
      return true;
    }
  return false;
}

bool routed_expert_range(const std::vector<ParamInfo>& table, std::size_t& offset, std::size_t& count) {
  for (const ParamInfo& p : table)
    if (p.name.find(".experts.") != std::string::npos) {  // the routed experts come last (parameter_table)
      offset = p.offset;
      count = table.back().offset + table.back().size() - p.offset;
      return true;
    }
  return false;
}

}  // namespace pipebench::kernels
