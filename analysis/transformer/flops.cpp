#include "analysis/transformer/flops.hpp"

#include <algorithm>

namespace pipebench::analysis::transformer {

namespace {

// The matrix products of a layer, in the order F runs them.
struct Product {
  Op op;
  bool weights;     // a weight product; false: one of the attention's two, which have no weights
  bool moe_only;    // only in MoE layers
  bool replicated;  // every tensor-parallel rank computes it whole (Megatron-Core's router)
  bool selective_pipebench, selective_megatron;  // rerun in I by selective recomputation
};

constexpr Product kLayer[] = {
    {Op::qkv, true, false, false, false, false},     {Op::scores, false, false, false, true, true},
    {Op::values, false, false, false, false, true},  {Op::proj, true, false, false, false, false},
    {Op::router, true, true, true, false, false},    {Op::fc1, true, false, false, false, false},
    {Op::fc2, true, false, false, false, false},
};

// Forward FLOPs of one token through `op`, all tensor-parallel ranks together: 2 per multiply-add,
// each of the token's queries against all s keys.
double per_token(const Shape& m, Op op, bool moe) {
  const double h = m.hidden, kv = static_cast<double>(m.kv_width()), s = m.seq, g = m.fc1_factor();
  const double f = static_cast<double>(moe ? m.expert_ffn_size() : m.ffn_size());
  const double routes = moe ? m.top_k + m.shared_experts : 1;  // MLPs each token passes through
  switch (op) {
    case Op::qkv: return 2 * h * (h + 2 * kv);
    case Op::scores: return 2 * s * h;
    case Op::values: return 2 * s * h;
    case Op::proj: return 2 * h * h;
    case Op::fc1: return 2 * h * (g * f) * routes;
    case Op::fc2: return 2 * f * h * routes;
    case Op::router: return moe ? 2 * h * m.experts : 0;
    case Op::head: return 2 * h * m.vocab;
  }
  return 0;
}

bool present(const Product& p, bool moe) { return !p.moe_only || moe; }

bool recomputed(const Product& p, Recompute r, Convention c) {
  if (r == Recompute::full) return true;
  if (r == Recompute::selective) return c == Convention::megatron ? p.selective_megatron : p.selective_pipebench;
  return false;
}

// Per-token FLOPs of one pass, split over t and replicated, summed before they are scaled to a
// micro-batch: exact integers, so the sum does not depend on the order.
struct PerToken {
  double split = 0, replicated = 0;
  void add(const Product& p, double x) { (p.replicated ? replicated : split) += x; }
  double on_rank(double n, int t) const { return n * split / t + n * replicated; }
};

// F, I, W and the recomputation of some of a layer's products.
struct Passes {
  PerToken f, i, w, rc;
  void add(const Shape& m, const Product& p, Recompute r, Convention c, bool moe) {
    const double x = per_token(m, p.op, moe);
    f.add(p, x);
    i.add(p, p.weights ? x : 2 * x);
    w.add(p, p.weights ? x : 0);
    if (recomputed(p, r, c)) rc.add(p, x);
  }
  Flops on_rank(const Shape& m, const Split& split) const {
    const double n = tokens(m, split);
    Flops out;
    out.forward = f.on_rank(n, split.t);
    out.recompute = rc.on_rank(n, split.t);
    out.backward_input = i.on_rank(n, split.t) + out.recompute;
    out.backward_weight = w.on_rank(n, split.t);
    out.replicated = n * f.replicated;
    return out;
  }
};

}  // namespace

const char* op_name(Op op) {
  switch (op) {
    case Op::qkv: return "qkv";
    case Op::scores: return "scores";
    case Op::values: return "values";
    case Op::proj: return "proj";
    case Op::fc1: return "fc1";
    case Op::fc2: return "fc2";
    case Op::router: return "router";
    case Op::head: return "head";
  }
  return "?";
}

Gemm op_gemm(const Shape& m, const Split& split, Op op, bool moe) {
  const double t = split.t, n = tokens(m, split), h = m.hidden, kv = static_cast<double>(m.kv_width());
  const double d = static_cast<double>(m.head_dim()), s = m.seq, g = m.fc1_factor();
  const double f = static_cast<double>(moe ? m.expert_ffn_size() : m.ffn_size());
  // An expert's tokens: each token goes to top_k routed experts (spread evenly over them) and every
  // shared one; one product of an expert's width stands for all of them. With expert parallelism the
  // rank's E/ep routed experts take the routes of ep ranks' tokens: n k rows in all, n k ep / E each.
  const double local = double(m.experts) / std::max(1, split.ep);
  const double rows = moe && m.experts > 0 ? n * (m.top_k + m.shared_experts) / (local + m.shared_experts) : n;
  const double heads = static_cast<double>(m.micro_batch) * m.heads / t;
  switch (op) {
    case Op::qkv: return {1, n, (h + 2 * kv) / t, h};
    case Op::scores: return {heads, n / m.micro_batch, s, d};
    case Op::values: return {heads, n / m.micro_batch, d, s};
    case Op::proj: return {1, n, h, h / t};
    case Op::fc1: return {1, rows, g * f / t, h};
    case Op::fc2: return {1, rows, h, f / t};
    case Op::router: return {1, n, double(m.experts), h};
    case Op::head: return {1, n, split.vocab_split() ? double(m.vocab) / t : double(m.vocab), h};
  }
  return {};
}

double layer_forward_flops_per_token(const Shape& m, bool moe) {
  double sum = 0;
  for (const Product& p : kLayer)
    if (present(p, moe)) sum += per_token(m, p.op, moe);
  return sum;
}

double head_forward_flops_per_token(const Shape& m) { return per_token(m, Op::head, false); }

std::vector<OpFlops> layer_ops(const Shape& m, const Split& split, Recompute r, Convention c, bool moe) {
  std::vector<OpFlops> ops;
  for (const Product& p : kLayer) {
    if (!present(p, moe)) continue;
    Passes one;
    one.add(m, p, r, c, moe);
    ops.push_back({p.op, one.on_rank(m, split)});
  }
  return ops;
}

Flops layer_flops(const Shape& m, const Split& split, Recompute r, Convention c, bool moe) {
  Passes all;
  for (const Product& p : kLayer)
    if (present(p, moe)) all.add(m, p, r, c, moe);
  return all.on_rank(m, split);
}

Flops head_flops(const Shape& m, const Split& split) {
  const double n = tokens(m, split), x = n * head_forward_flops_per_token(m);
  Flops out;
  out.forward = out.backward_input = out.backward_weight = split.vocab_split() ? x / split.t : x;
  out.replicated = split.vocab_split() ? 0 : x;
  return out;
}

Flops stage_flops(const Shape& m, const Split& split, const StageParts& part, Recompute r, Convention c) {
  Flops out;
  const auto add = [&out](const Flops& f, double times) {
    out.forward += times * f.forward;
    out.backward_input += times * f.backward_input;
    out.backward_weight += times * f.backward_weight;
    out.recompute += times * f.recompute;
    out.replicated += times * f.replicated;
  };
  if (m.experts == 0)
    add(layer_flops(m, split, r, c), part.layers);
  else
    for (int l = part.first_layer; l < part.first_layer + part.layers; ++l)
      add(layer_flops(m, split, r, c, m.moe_layer(l)), 1);
  if (part.head) add(head_flops(m, split), 1);
  return out;
}

namespace {

// Sum over the model's layers of per_layer(moe), L times one value for a dense model.
template <class F>
double over_layers(const Shape& m, F per_layer) {
  if (m.experts == 0) return m.layers * per_layer(false);
  double sum = 0;
  for (int l = 0; l < m.layers; ++l) sum += per_layer(m.moe_layer(l));
  return sum;
}

}  // namespace

double model_flops_per_step(const Shape& m, std::int64_t global_batch) {
  const double tokens = double(global_batch) * m.seq;
  const double layers = over_layers(m, [&](bool moe) { return layer_forward_flops_per_token(m, moe); });
  return 3 * tokens * (layers + head_forward_flops_per_token(m));
}

double recompute_flops_per_step(const Shape& m, std::int64_t global_batch, Recompute r, Convention c) {
  const double tokens = double(global_batch) * m.seq;
  return tokens * over_layers(m, [&](bool moe) {
           double sum = 0;
           for (const Product& p : kLayer)
             if (present(p, moe) && recomputed(p, r, c)) sum += per_token(m, p.op, moe);
           return sum;
         });
}

}  // namespace pipebench::analysis::transformer
