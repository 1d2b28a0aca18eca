#include "kernels/transformer_config.hpp"

#include "analysis/error.hpp"

#include <algorithm>
#include <climits>
#include <string>

namespace pipebench::kernels {

TransformerConfig TransformerConfig::whole_model(int hidden, int heads, int seq, int micro_batch, int vocab,
                                                 int layers) {
  TransformerConfig c;
  c.hidden = hidden;
  c.heads = heads;
  c.seq = seq;
  c.micro_batch = micro_batch;
  c.vocab = vocab;
  c.layers = layers;
  c.num_layers = layers;
  c.embedding = c.head = true;
  return c;
}

namespace {

void require_positive(int v, const char* what) {
  if (v < 1) throw UsageError(std::string(what) + " must be at least 1, got " + std::to_string(v));
}

// The kernels index rows and columns with int and hand them to BLAS as int.
void require_int_range(long long v, const std::string& what) {
  if (v > INT_MAX)
    throw UsageError(what + " = " + std::to_string(v) + " exceeds " + std::to_string(INT_MAX) +
                     ", the largest dimension the kernels index");
}

// Checked arithmetic for byte counts: a model whose bytes overflow 64 bits is refused, not wrapped.
std::uint64_t mul(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > UINT64_MAX / a) throw UsageError("model too large: its size in bytes overflows 64 bits");
  return a * b;
}
std::uint64_t add(std::uint64_t a, std::uint64_t b) {
  if (b > UINT64_MAX - a) throw UsageError("model too large: its size in bytes overflows 64 bits");
  return a + b;
}

}  // namespace

void validate(const TransformerConfig& c) {
  require_positive(c.hidden, "hidden size");
  require_positive(c.heads, "number of attention heads");
  require_positive(c.seq, "sequence length");
  require_positive(c.micro_batch, "micro-batch size");
  require_positive(c.vocab, "vocabulary size");
  require_positive(c.layers, "number of layers");
  require_positive(c.tp_size, "tensor-parallel size");
  if (c.hidden % c.heads != 0)
    throw UsageError("hidden size " + std::to_string(c.hidden) + " is not divisible by the number of heads " +
                     std::to_string(c.heads));
  if (c.heads % c.tp_size != 0)
    throw UsageError("number of heads " + std::to_string(c.heads) + " is not divisible by the tensor-parallel size " +
                     std::to_string(c.tp_size) + " (heads are split whole over tensor-parallel ranks)");
  if (c.tp_rank < 0 || c.tp_rank >= c.tp_size)
    throw UsageError("tensor-parallel rank " + std::to_string(c.tp_rank) + " is outside [0, " +
                     std::to_string(c.tp_size) + ")");
  if (c.vocab_split() && c.vocab % c.tp_size != 0)
    throw UsageError("vocabulary size " + std::to_string(c.vocab) + " is not divisible by the tensor-parallel size " +
                     std::to_string(c.tp_size) + " (the vocabulary-parallel embedding and output layer hold V/t rows " +
                     "each): use a multiple of " + std::to_string(c.tp_size) + ", e.g. " +
                     std::to_string((c.vocab / c.tp_size + 1) * c.tp_size) + ", or --vocab-parallel off");
  if (c.sequence_parallel && c.tp_size < 2)
    throw UsageError("--sequence-parallel needs a tensor-parallel size t > 1 (t is " + std::to_string(c.tp_size) +
                     "): it splits the sequence over the tensor-parallel ranks");
  if (c.seq_split() && c.seq % c.tp_size != 0)
    throw UsageError("--sequence-parallel: sequence length " + std::to_string(c.seq) +
                     " is not divisible by the tensor-parallel size " + std::to_string(c.tp_size) +
                     " (each rank holds s/t positions)");
  if (c.num_layers < 0 || c.first_layer < 0 || c.first_layer + static_cast<long long>(c.num_layers) > c.layers)
    throw UsageError("stage layers [" + std::to_string(c.first_layer) + ", " +
                     std::to_string(static_cast<long long>(c.first_layer) + c.num_layers) +
                     ") are not inside the model's " + std::to_string(c.layers) + " layers");
  if (c.num_layers == 0 && !c.embedding && !c.head)
    throw UsageError("a stage with 0 layers must hold the embedding or the head");
  if (c.embedding && c.first_layer != 0)
    throw UsageError("the embedding belongs to the stage that starts at layer 0, not at layer " +
                     std::to_string(c.first_layer));
  if (c.head && c.first_layer + c.num_layers != c.layers)
    throw UsageError("the head belongs to the stage that ends at layer " + std::to_string(c.layers) +
                     ", not at layer " + std::to_string(c.first_layer + c.num_layers));
  require_int_range(static_cast<long long>(c.micro_batch) * c.seq, "micro-batch size x sequence length");
  require_int_range(4LL * c.hidden, "4 x hidden size");
}

std::uint64_t StageMemory::total(int in_flight) const {
  // Each micro-batch in flight holds its forward or its weight stash; the one inside its I holds the
  // weight stash of the layers done and the forward stash of the others, at most both in full.
  const std::uint64_t k = static_cast<std::uint64_t>(std::max(in_flight, 0));
  const std::uint64_t stashes = add(mul(k, std::max(forward_stash, weight_stash)),
                                    in_flight > 0 ? std::min(forward_stash, weight_stash) : 0);
  return add(add(add(weights, grads), stashes), workspace);
}

StageMemory estimate_memory(const TransformerConfig& c, std::uint64_t e) {
  validate(c);
  using u64 = std::uint64_t;
  const u64 h = static_cast<u64>(c.hidden), s = static_cast<u64>(c.seq), V = static_cast<u64>(c.local_vocab());
  const u64 t = static_cast<u64>(c.tp_size), ht = h / t, L = static_cast<u64>(c.num_layers);
  const u64 b = static_cast<u64>(c.micro_batch), n = b * s, z = b * (static_cast<u64>(c.heads) / t);
  const u64 nh = mul(n, h), nht = mul(n, ht), ss = mul(s, s), nV = mul(n, V);
  // Sequence-parallel: the LayerNorms' xhat, rstd and output gradients hold this rank's nl = n/t rows;
  // the gathered linear inputs and output gradients that W reads keep all n (docs/formulas.md).
  const u64 nl = c.seq_split() ? n / t : n, nhl = mul(nl, h);

  StageMemory m;
  const u64 layer_params = add(add(mul(12, mul(h, ht)), mul(7, ht)), mul(6, h));
  m.parameters = mul(L, layer_params);
  if (c.embedding) m.parameters = add(m.parameters, mul(add(V, s), h));
  if (c.head) m.parameters = add(m.parameters, c.tie_embeddings && c.embedding ? mul(2, h) : add(mul(2, h), mul(h, V)));
  m.weights = m.grads = mul(m.parameters, e);

  // Per layer (docs/transformer.md): xhat1, y1, xhat2, y2 [n,h]; q, k, v, ctx, u, g = 12 [n, h/t];
  // rstd1, rstd2 [n]; probabilities [b*a/t, s, s] unless recomputed.
  const u64 layer_core = add(add(add(mul(2, nhl), mul(2, nh)), mul(12, nht)), mul(2, nl));
  u64 layer_f = 0;
  switch (c.recompute) {
    case Recompute::none: layer_f = add(layer_core, mul(z, ss)); break;
    case Recompute::selective: layer_f = layer_core; break;
    case Recompute::full: layer_f = nhl; break;
  }
  // After I: y1, y2, dx2, dout [n,h]; xhat1, xhat2, dy1, dy2 [nl,h]; ctx, g, dqkv, du = 12 [n, h/t].
  const u64 layer_w = add(add(mul(4, nh), mul(4, nhl)), mul(12, nht));
  m.layer_forward_stash = mul(layer_f, e);
  m.layer_weight_stash = mul(layer_w, e);
  m.forward_stash = mul(L, m.layer_forward_stash);
  m.weight_stash = mul(L, m.layer_weight_stash);
  if (c.embedding) m.weight_stash = add(m.weight_stash, mul(nh, e));  // the embedding's output gradient
  if (c.head) {
    // xhat [nl,h], y [n,h], rstd [nl], dlogits [n,V]; after I: dy [nl,h] replaces rstd.
    m.forward_stash = add(m.forward_stash, mul(add(add(add(nhl, nh), nl), nV), e));
    m.weight_stash = add(m.weight_stash, mul(add(add(mul(2, nhl), nh), nV), e));
  }

  // Transient buffers of one call (bounded, not exact): residual stream and layer output [n,h] x 3,
  // split/merged heads and gradients 8 [n, h/t], two [s,s] score buffers, per-row scratch; full
  // recomputation also rebuilds one layer's complete stash inside I.
  m.workspace = add(mul(add(add(mul(3, nh), mul(8, nht)), mul(2, ss)), e), mul(8, n));
  if (c.recompute == Recompute::full && L > 0) m.workspace = add(m.workspace, mul(add(layer_core, mul(z, ss)), e));
  return m;
}

StageFlops stage_flops(const TransformerConfig& c) {
  validate(c);
  const double h = c.hidden, s = c.seq, V = c.local_vocab(), ht = h / c.tp_size, L = c.num_layers;
  const double n = static_cast<double>(c.micro_batch) * s;
  const double linears = 24 * n * h * ht;  // QKV 6, output 2, MLP 8 + 8 (x n h h/t)
  const double attn_f = 4 * n * s * ht;    // scores and weighted sum, 2 n s h/t each
  double recompute = 0;
  if (c.recompute == Recompute::selective) recompute = 2 * n * s * ht;
  if (c.recompute == Recompute::full) recompute = linears + attn_f;
  StageFlops f;
  f.forward = L * (linears + attn_f);
  f.recompute = L * recompute;
  f.backward_input = L * (linears + 2 * attn_f) + f.recompute;  // dP, dV, dQ, dK: 8 n s h/t
  f.backward_weight = L * linears;
  if (c.head) {
    f.forward += 2 * n * h * V;
    f.backward_input += 2 * n * h * V;
    f.backward_weight += 2 * n * h * V;
    if (!c.vocab_split()) f.replicated = 2 * n * h * V;
  }
  return f;
}

}  // namespace pipebench::kernels
