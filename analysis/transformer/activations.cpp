#include "analysis/transformer/activations.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "analysis/transformer/count.hpp"

namespace pipebench::analysis::transformer {

namespace {

// Elements per row (token) of a kept tensor on one rank: the hidden size, one (a statistic), the
// tensor-parallel shares of the query, key/value and QKV widths, of fc1's output (g f) and of the MLP
// (f), the s x s scores of this rank's a/t heads, this rank's vocabulary, one value per head of the
// a/t (a statistic per head: context parallelism's log-sum-exp).
enum class Width { hidden, one, q, kv, qkv, fc1_out, ffn, scores, vocab, heads };
// Rows: `sequence` tensors live in the sequence-parallel regions (s/t positions per rank when split);
// `gathered` ones hold every position of the micro-batch.
enum class Rows { sequence, gathered };

struct Keep {
  bool kept;
  Element element;
  Rows rows;
  Life life;
};
constexpr Keep kNot{false, Element::value, Rows::gathered, Life::f_to_i};
constexpr Keep value(Rows rows, Life life) { return {true, Element::value, rows, life}; }
constexpr Keep mask(Rows rows) { return {true, Element::mask, rows, Life::f_to_i}; }
constexpr Keep wide(Rows rows, Life life) { return {true, Element::wide, rows, life}; }
constexpr Rows seq = Rows::sequence, all = Rows::gathered;
constexpr Life fi = Life::f_to_i, fw = Life::f_to_w, iw = Life::i_to_w;

struct Row {
  Part part;
  const char* tensor;
  const char* op;
  Width width;
  bool layer_input;  // the one tensor F keeps under full recomputation, instead of all the others
  Keep pipebench, megatron;
};

// Megatron's inventory is Korthikanti et al. 2022, section 4.1 (dropout after the attention
// probabilities, the projection and fc2; the LayerNorms keep their input; statistics neglected). The
// kernels keep each LayerNorm's normalised input xhat (the same size, so W needs no statistics) and
// 1/std; they gather the inputs of QKV and fc1 under sequence parallelism and keep them whole for W,
// where Megatron keeps its shard and gathers it again. The planner counts the embedding's output and
// the head's fp32 logits from F to I, and the output layer's input from I to W. `wide`: what a 16-bit
// run of the kernels keeps in fp32, as Megatron's does: LayerNorm's per-row 1/std (apex's and
// Transformer Engine's fused LayerNorm save mean and rstd in fp32 for 16-bit inputs), attention's
// log-sum-exp (FlashAttention's softmax_lse is fp32), and the loss's softmax, which is the logits
// gradient (Megatron computes the cross-entropy on output.float() and saves its fp32 softmax).
constexpr Row kTable[] = {
    {Part::layer, "layer input", "layer", Width::hidden, true, value(seq, fi), value(seq, fi)},
    {Part::layer, "LN1 input (xhat)", "ln1", Width::hidden, false, value(seq, fw), value(seq, fi)},
    {Part::layer, "LN1 1/std", "ln1", Width::one, false, wide(seq, fi), kNot},
    {Part::layer, "QKV input (LN1 output)", "qkv", Width::hidden, false, value(all, fw), value(seq, fw)},
    {Part::layer, "Q", "attention", Width::q, false, value(all, fi), value(all, fi)},
    {Part::layer, "K", "attention", Width::kv, false, value(all, fi), value(all, fi)},
    {Part::layer, "V", "attention", Width::kv, false, value(all, fi), value(all, fi)},
    {Part::layer, "softmax output", "attention", Width::scores, false, value(all, fi), value(all, fi)},
    // Context-parallel (cp > 1), the kernels keep each query row's log-sum-exp instead of the
    // probabilities, which span every rank's keys (kernels/context_parallel.hpp).
    {Part::layer, "attention log-sum-exp (cp)", "attention", Width::heads, false, wide(all, fi), kNot},
    {Part::layer, "attention dropout mask", "attention", Width::scores, false, kNot, mask(all)},
    {Part::layer, "attention dropout output", "attention", Width::scores, false, kNot, value(all, fi)},
    {Part::layer, "projection input", "proj", Width::q, false, value(all, fw), value(all, fw)},
    {Part::layer, "projection dropout mask", "proj", Width::hidden, false, kNot, mask(seq)},
    {Part::layer, "LN2 input (xhat)", "ln2", Width::hidden, false, value(seq, fw), value(seq, fi)},
    {Part::layer, "LN2 1/std", "ln2", Width::one, false, wide(seq, fi), kNot},
    {Part::layer, "fc1 input (LN2 output)", "fc1", Width::hidden, false, value(all, fw), value(seq, fw)},
    {Part::layer, "GELU input (fc1 output)", "gelu", Width::fc1_out, false, value(all, fi), value(all, fi)},
    {Part::layer, "fc2 input (GELU output)", "fc2", Width::ffn, false, value(all, fw), value(all, fw)},
    {Part::layer, "MLP dropout mask", "fc2", Width::hidden, false, kNot, mask(seq)},
    {Part::layer, "fc2 output gradient", "fc2", Width::hidden, false, value(all, iw), kNot},
    {Part::layer, "fc1 output gradient", "fc1", Width::fc1_out, false, value(all, iw), kNot},
    {Part::layer, "LN2 output gradient", "ln2", Width::hidden, false, value(seq, iw), kNot},
    {Part::layer, "projection output gradient", "proj", Width::hidden, false, value(all, iw), kNot},
    {Part::layer, "QKV output gradient", "qkv", Width::qkv, false, value(all, iw), kNot},
    {Part::layer, "LN1 output gradient", "ln1", Width::hidden, false, value(seq, iw), kNot},
    {Part::embedding, "embedding output", "embedding", Width::hidden, false, kNot, value(all, fi)},
    {Part::embedding, "embedding output gradient", "embedding", Width::hidden, false, value(all, iw), kNot},
    {Part::head, "final LN input (xhat)", "final_ln", Width::hidden, false, value(seq, fw), kNot},
    {Part::head, "final LN 1/std", "final_ln", Width::one, false, wide(seq, fi), kNot},
    {Part::head, "output layer input", "output", Width::hidden, false, value(all, fw), value(all, iw)},
    {Part::head, "logits gradient", "loss", Width::vocab, false, wide(all, fw), {true, Element::fp32, all, fi}},
    {Part::head, "final LN output gradient", "final_ln", Width::hidden, false, value(seq, iw), kNot},
};

// The tensor's elements per row on one rank, exact.
std::uint64_t width_of(const Shape& m, const Split& s, Width w) {
  const std::uint64_t t = u64(s.t), h = u64(m.hidden), kv = u64(m.kv_width());
  switch (w) {
    case Width::hidden: return h;
    case Width::one: return 1;
    case Width::q: return h / t;
    case Width::kv: return kv / t;
    case Width::qkv: return add(h, mul(2, kv)) / t;
    case Width::fc1_out: return mul(u64(m.fc1_factor()), u64(m.ffn_size())) / t;
    case Width::ffn: return u64(m.ffn_size()) / t;
    case Width::scores: return mul(u64(m.heads) / t, u64(m.seq));
    case Width::vocab: return u64(s.vocab_split() ? m.vocab / s.t : m.vocab);
    case Width::heads: return u64(m.heads) / t;
  }
  return 0;
}

std::uint64_t rows_of(const Shape& m, const Split& s, Rows r) {
  const std::uint64_t n = mul(u64(m.micro_batch), u64(m.seq / s.cp));
  return r == Rows::sequence && s.seq_split() ? n / u64(s.t) : n;
}

const Keep& keep(const Row& row, Convention c) { return c == Convention::megatron ? row.megatron : row.pipebench; }

// Whether `row` is kept in mode r, and with which life: under full recomputation the layer's input
// from F to I and the rest rebuilt in I, so what W reads is kept from I to W.
bool live(const Row& row, const Keep& k, Recompute r, bool drop_scores, Life* life) {
  if (!k.kept || (row.width == Width::scores && (drop_scores || r == Recompute::selective))) return false;
  *life = k.life;
  if (r != Recompute::full) return !row.layer_input;
  if (row.layer_input) return true;
  if (k.life == Life::f_to_i) return false;
  *life = Life::i_to_w;
  return true;
}

template <class T>
T element_bytes(Element e, T value_bytes) {
  if (e == Element::wide) return value_bytes > T(4) ? value_bytes : T(4);
  return e == Element::value ? value_bytes : e == Element::fp32 ? T(4) : T(1);
}

bool in_forward(Life l) { return l != Life::i_to_w; }
bool in_weight(Life l) { return l != Life::f_to_i; }

}  // namespace

std::vector<Kept> kept(const Shape& m, const Split& split, Recompute r, Part part, Convention c, bool flash) {
  if (part != Part::layer) r = Recompute::none;  // recomputation reruns layers only
  std::vector<Kept> out;
  for (const Row& row : kTable) {
    Life life = Life::f_to_i;
    const Keep& k = keep(row, c);
    // The kernels' context-parallel attention keeps the log-sum-exp in place of the probabilities.
    const bool cp_kernels = c == Convention::pipebench && split.cp > 1;
    if (row.width == Width::heads && !cp_kernels) continue;
    if (row.part != part || !live(row, k, r, (c == Convention::megatron && flash) || cp_kernels, &life)) continue;
    out.push_back({row.tensor, row.op, k.element, life, mul(rows_of(m, split, k.rows), width_of(m, split, row.width))});
  }
  return out;
}

Stash stash(const Shape& m, const Split& split, Recompute r, Part part, std::uint64_t value_bytes) {
  Stash s;
  for (const Kept& k : kept(m, split, r, part, Convention::pipebench)) {
    const std::uint64_t bytes = mul(k.elements, element_bytes(k.element, value_bytes));
    if (in_forward(k.life)) s.forward = add(s.forward, bytes);
    if (in_weight(k.life)) s.weight = add(s.weight, bytes);
  }
  return s;
}

namespace {

// Bytes per n h of one row's tensor, in Korthikanti's three groups: not split by t, split by t (the
// heads' and the MLP's columns), and the s x s scores (per a s/h).
struct Coefficients {
  double unsplit = 0, split = 0, scores = 0;
  void add(const Shape& m, const Row& row, double bytes) {
    const double h = m.hidden;
    switch (row.width) {
      case Width::scores: scores += bytes; break;
      case Width::q: split += bytes; break;
      case Width::kv: split += bytes * static_cast<double>(m.kv_width()) / h; break;
      case Width::qkv: split += bytes * (h + 2.0 * static_cast<double>(m.kv_width())) / h; break;
      case Width::fc1_out: split += bytes * m.fc1_factor() * static_cast<double>(m.ffn_size()) / h; break;
      case Width::ffn: split += bytes * static_cast<double>(m.ffn_size()) / h; break;
      default: unsplit += bytes; break;  // hidden-wide; Megatron keeps no statistic or logit in a layer
    }
  }
  // Korthikanti's closed form. Sequence-parallel, every tensor of the layer is split by t: the
  // sequence regions' rows and the heads' and MLP's columns.
  double bytes(const Shape& m, const Split& s) const {
    const double n = tokens(m, s), h = m.hidden, att = scores * m.heads * m.seq / h;
    if (s.seq_split()) return n * h / s.t * (unsplit + split + att);
    return n * h * (unsplit + split / s.t + att / s.t);
  }
};

MegatronStash megatron_layer(const Shape& m, const Split& s, Recompute r, const MegatronOptions& o) {
  Coefficients forward, weight;
  double score_bytes = 0;  // per n h a s/h: the s x s tensors, kept or not
  for (const Row& row : kTable) {
    Life life = Life::f_to_i;
    if (row.part != Part::layer) continue;
    const double bytes = element_bytes(row.megatron.element, o.value_bytes);
    if (row.width == Width::scores && row.megatron.kept && !o.flash_attention) score_bytes += bytes;
    if (!live(row, row.megatron, r, o.flash_attention, &life)) continue;
    if (in_forward(life)) forward.add(m, row, bytes);
    if (in_weight(life)) weight.add(m, row, bytes);
  }
  const double n = tokens(m, s), h = m.hidden;
  return {forward.bytes(m, s), weight.bytes(m, s), n * h * (score_bytes * m.heads * m.seq / h) / s.t};
}

}  // namespace

MegatronStash megatron_stash(const Shape& m, const Split& split, Recompute r, Part part, const MegatronOptions& o) {
  if (part == Part::layer) return megatron_layer(m, split, r, o);
  // Row by row: bytes * (rows * width) / t, one rounding, whatever the split of the vocabulary.
  // Recomputation reruns layers only.
  r = Recompute::none;
  MegatronStash out;
  const double n = tokens(m, split);
  for (const Row& row : kTable) {
    Life life = Life::f_to_i;
    if (row.part != part || !live(row, row.megatron, r, false, &life)) continue;
    const bool vocab = row.width == Width::vocab;
    const double width = vocab ? m.vocab : m.hidden, t = vocab && split.vocab_split() ? split.t : 1;
    const double x = element_bytes(row.megatron.element, o.value_bytes) * (n * width / t);
    if (in_forward(life)) out.forward += x;
    if (in_weight(life)) out.weight += x;
  }
  return out;
}

MoeRows balanced_moe_rows(const Shape& m, const Split& split) {
  const std::uint64_t n = static_cast<std::uint64_t>(tokens(m, split)), k = u64(m.top_k), e = u64(m.experts);
  const std::uint64_t ep = u64(split.ep), local = e / ep, t = split.seq_split() ? u64(split.t) : 1;
  std::uint64_t per_expert = mul(n, k) / e;  // from one source's micro-batch
  if (m.capacity_factor > 0)
    per_expert = std::min(per_expert, static_cast<std::uint64_t>(std::ceil(m.capacity_factor * static_cast<double>(n * k) / static_cast<double>(e))));
  per_expert /= t;  // from one tp shard of it
  MoeRows r;
  r.kept = mul(per_expert, e);
  r.arrivals = mul(mul(mul(per_expert, local), ep), t);
  r.rows = mul(mul(per_expert, ep), t);
  return r;
}

Stash moe_stash(const Shape& m, const Split& split, const MoeRows& r, std::uint64_t value_bytes) {
  // Tensor-parallel (sequence-parallel, kernels/moe.hpp): the routes of this rank's n/t tokens and the
  // experts' F/t columns; the shared experts' rows and the router logits' gradient span all n tokens.
  const std::uint64_t t = split.seq_split() ? u64(split.t) : 1;
  const std::uint64_t n = static_cast<std::uint64_t>(tokens(m, split)), h = u64(m.hidden);
  const std::uint64_t f = u64(m.expert_ffn_size()) / t;
  const std::uint64_t local_rows = mul(u64(m.experts) / u64(split.ep), r.rows), routes = mul(n / t, u64(m.top_k));
  const std::uint64_t rows4 = add(mul(local_rows, mul(2, add(h, f))), mul(mul(u64(m.shared_experts), n), mul(2, add(h, f))));
  const std::uint64_t gates = add(r.kept, routes);                                  // values
  const std::uint64_t indices = add(add(r.kept, routes), add(r.arrivals, local_rows));  // 4 bytes each
  Stash s;
  s.forward = add(mul(add(add(rows4, mul(r.kept, h)), gates), value_bytes), mul(indices, 4));
  s.weight = add(mul(add(add(rows4, mul(n, u64(m.experts))), gates), value_bytes), mul(indices, 4));
  return s;
}

Stash moe_layer_stash(const Shape& m, const Split& split, Recompute r, const MoeRows& rows, std::uint64_t value_bytes) {
  Stash s;
  for (const Kept& k : kept(m, split, r, Part::layer, Convention::pipebench)) {
    const std::string op = k.op, tensor = k.tensor;
    if (op == "gelu" || op == "fc2" || tensor == "fc1 output gradient") continue;  // the dense MLP's own
    const std::uint64_t bytes = mul(k.elements, element_bytes(k.element, value_bytes));
    if (in_forward(k.life)) s.forward = add(s.forward, bytes);
    if (in_weight(k.life)) s.weight = add(s.weight, bytes);
  }
  const Stash moe = moe_stash(m, split, rows, value_bytes);
  if (r != Recompute::full) s.forward = add(s.forward, moe.forward);  // full: F keeps the layer input only
  s.weight = add(s.weight, moe.weight);
  return s;
}

}  // namespace pipebench::analysis::transformer
