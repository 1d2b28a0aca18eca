#include "kernels/transformer_config.hpp"

#include "analysis/error.hpp"
#include "analysis/transformer/activations.hpp"
#include "analysis/transformer/count.hpp"
#include "analysis/transformer/params.hpp"
#include "kernels/host_tuning.hpp"

#include <Kokkos_Macros.hpp>

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

namespace tf = analysis::transformer;

tf::Split TransformerConfig::split() const {
  return {tp_size, sequence_parallel, vocab_parallel, context_parallel, ep_size};
}

tf::StageParts TransformerConfig::parts() const { return {first_layer, num_layers, embedding, head}; }

namespace {

// The kernels index rows and columns with int and hand them to BLAS as int.
void require_int_range(long long v, const std::string& what) {
  if (v > INT_MAX)
    throw UsageError(what + " = " + std::to_string(v) + " exceeds " + std::to_string(INT_MAX) +
                     ", the largest dimension the kernels index");
}

void refuse(const std::string& what, const std::string& why) {
  throw UsageError(what + " is not allowed: " + why);
}

void check_stage(const TransformerConfig& c) {
  if (c.ep_rank < 0 || c.ep_rank >= c.ep_size)
    throw UsageError("expert-parallel rank " + std::to_string(c.ep_rank) + " is outside [0, " + std::to_string(c.ep_size) + ")");
  if (c.tp_rank < 0 || c.tp_rank >= c.tp_size)
    throw UsageError("tensor-parallel rank " + std::to_string(c.tp_rank) + " is outside [0, " +
                     std::to_string(c.tp_size) + ")");
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
}

}  // namespace

void check_runnable_by_kernels(const tf::Shape& m, const tf::Split& split) {
  const std::string kernels = "the transformer kernels run ";
  if (m.kv() != m.heads)
    refuse("--kv-heads " + std::to_string(m.kv_heads), kernels + "multi-head attention only (--kv-heads = --heads " +
                                                          std::to_string(m.heads) + ")");
  if (m.gated_mlp) refuse("a gated MLP (SwiGLU)", kernels + "a GELU MLP");
  if (m.ffn_size() != 4LL * m.hidden)
    refuse("--ffn " + std::to_string(m.ffn), kernels + "an MLP of 4 x --hidden = " + std::to_string(4LL * m.hidden));
  // The MoE layer (kernels/moe_stage.hpp): under t > 1 its experts are tensor-parallel (expert tensor
  // parallelism = t), with sequence parallelism (analysis/transformer/shape.hpp's check holds that rule);
  // its routing and aux loss see a micro-batch's tokens whole (no cp).
  if (m.experts > 0 && split.cp > 1)
    refuse("--experts " + std::to_string(m.experts) + " with --context-parallel " + std::to_string(split.cp),
           kernels + "MoE layers without context parallelism (the router sees a micro-batch's tokens whole)");
  if (!m.learned_positions) refuse("a model without learned positions", kernels + "a learned [s, h] position table");
}

namespace {

// Context parallelism's own conditions (the cost model checks that cp divides s).
void check_context_parallel(const TransformerConfig& c) {
  if (c.context_parallel <= 1) return;
  const std::string cp = std::to_string(c.context_parallel);
  if (c.attention == Attention::fused)
    refuse("--attention fused with --context-parallel " + cp,
           "the transformer kernels run context-parallel attention unfused (--attention unfused)");
  if (c.cp_chunks == CpChunks::zigzag && c.seq % (2 * c.context_parallel) != 0)
    refuse("--seq " + std::to_string(c.seq) + " with --context-parallel " + cp + " and --cp-chunks zigzag",
           "s must be a multiple of 2 x cp = " + std::to_string(2 * c.context_parallel) +
               " (each rank holds two chunks of s/(2 cp))");
  if (c.seq_split() && c.cp_seq() % c.tp_size != 0)
    refuse("--sequence-parallel with --context-parallel " + cp + " and t = " + std::to_string(c.tp_size),
           "the s/cp = " + std::to_string(c.cp_seq()) + " positions of a rank must split evenly over t");
  if (c.cp_rank < 0 || c.cp_rank >= c.context_parallel)
    throw Error("context-parallel rank " + std::to_string(c.cp_rank) + " is outside [0, " + cp + ")");
}

}  // namespace

void validate(const TransformerConfig& c) {
  tf::check(c, c.split());
  check_runnable_by_kernels(c, c.split());
  check_context_parallel(c);
  check_stage(c);
  require_int_range(static_cast<long long>(c.micro_batch) * c.seq, "micro-batch size x sequence length");
  require_int_range(4LL * c.hidden, "4 x hidden size");
}

std::uint64_t StageMemory::total(int in_flight) const {
  // Each micro-batch in flight holds its forward or its weight stash; the one inside its I holds the
  // weight stash of the layers done and the forward stash of the others, at most both in full.
  const std::uint64_t k = static_cast<std::uint64_t>(std::max(in_flight, 0));
  using tf::add;
  using tf::mul;
  const std::uint64_t stashes = add(mul(k, std::max(forward_stash, weight_stash)),
                                    in_flight > 0 ? std::min(forward_stash, weight_stash) : 0);
  return add(add(add(weights, grads), stashes), workspace);
}

const char* attention_name(Attention a) { return a == Attention::fused ? "fused" : "unfused"; }
const char* cp_chunks_name(CpChunks c) { return c == CpChunks::contiguous ? "contiguous" : "zigzag"; }
const char* cp_comm_name(CpComm c) { return c == CpComm::allgather ? "allgather" : "ring"; }

Attention default_attention() {
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP)
  return Attention::fused;
#else
  return Attention::unfused;
#endif
}

Recompute modelled_recompute(const TransformerConfig& c) {
  return c.attention == Attention::fused && c.recompute == Recompute::none ? Recompute::selective : c.recompute;
}

std::uint64_t fused_attention_scratch_limit() {
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP)
  // Kokkos 4.6.01 (Cuda/Kokkos_Cuda_Parallel_Team.hpp, scratch_size_max) keeps (1024 + 2) doubles and
  // one int64 of each block's shared memory for team reductions.
  return 48 * 1024 - (1024 + 2) * 8 - 8;
#else
  return 0;
#endif
}

std::string fused_attention_refusal(const TransformerConfig& c, std::uint64_t scalar_bytes, std::uint64_t limit) {
  const int d = c.hidden / c.heads;
  const std::uint64_t need = flash_scratch_values(16, d) * scalar_bytes;
  if (limit == 0 || need <= limit) return "";
  return "--attention fused needs " + std::to_string(need) + " bytes of team scratch per GPU thread block at head size " +
         std::to_string(d) + " (--hidden / --heads), more than the " + std::to_string(limit) +
         " a block offers (48 KiB less Kokkos' reserve); use --attention unfused";
}

StageMemory estimate_memory(const TransformerConfig& c, std::uint64_t e) {
  validate(c);
  if (c.attention == Attention::fused)
    if (const std::string why = fused_attention_refusal(c, e); !why.empty()) throw UsageError(why);
  using tf::add;
  using tf::mul;
  using u64 = std::uint64_t;
  const tf::Split split = c.split();
  StageMemory m;
  m.parameters = tf::stage_params(c, split, c.parts());
  m.weights = m.grads = mul(m.parameters, e);

  // 16-bit activations: the stashes' values 2 bytes (their statistics stay fp32: tf::Element::wide).
  const u64 v = c.stash16 != Half::none ? 2 : e;
  const tf::Stash layer = tf::stash(c, split, modelled_recompute(c), tf::Part::layer, v);
  m.layer_forward_stash = layer.forward;
  m.layer_weight_stash = layer.weight;
  // An MoE layer's stash depends on its routing: counted here at balanced routing (docs/transformer.md).
  const tf::Stash moe = c.experts > 0 ? tf::moe_layer_stash(c, split, modelled_recompute(c), tf::balanced_moe_rows(c, split), v)
                                      : layer;
  const u64 moe_layers = static_cast<u64>(c.moe_layers_in(c.first_layer, c.num_layers));
  if (c.experts > 0) m.expert_parameters = mul(moe_layers, tf::routed_expert_params(c, split));
  const u64 dense_layers = static_cast<u64>(c.num_layers) - moe_layers;
  m.forward_stash = add(mul(dense_layers, layer.forward), mul(moe_layers, moe.forward));
  m.weight_stash = add(mul(dense_layers, layer.weight), mul(moe_layers, moe.weight));
  for (const auto& [held, part] : {std::pair{c.embedding, tf::Part::embedding}, std::pair{c.head, tf::Part::head}}) {
    if (!held) continue;
    const tf::Stash s = tf::stash(c, split, modelled_recompute(c), part, v);
    m.forward_stash = add(m.forward_stash, s.forward);
    m.weight_stash = add(m.weight_stash, s.weight);
  }

  // Transient buffers of one call (bounded, not exact): residual stream and layer output [n,h] x 3,
  // split/merged heads and gradients 8 [n, h/t], two [s,s] score buffers per head of a group
  // (attention_group_for: Kokkos has not started yet, so the host threads are OpenMP's), per-row scratch; full
  // recomputation also rebuilds one layer's complete stash inside I.
  const u64 h = static_cast<u64>(c.hidden), s = static_cast<u64>(c.seq), t = static_cast<u64>(c.tp_size);
  const u64 n = static_cast<u64>(c.micro_batch) * s, nh = mul(n, h), nht = mul(n, h / t), ss = mul(s, s);
  const int host_threads = host_compute_threads();
  const u64 group = attention_group_for(static_cast<u64>(c.micro_batch) * static_cast<u64>(c.heads / c.tp_size), host_threads);
  m.workspace = add(mul(add(add(mul(3, nh), mul(8, nht)), mul(mul(2, group), ss)), e), mul(8, n));
  if (c.recompute == Recompute::full && c.num_layers > 0)
    m.workspace = add(m.workspace, tf::stash(c, split, Recompute::none, tf::Part::layer, e).forward);
  // Context-parallel attention: the K/V blocks in flight, the block scores and their gradient, two
  // [b a/t, s/cp, s/cp], and the seven [b a/t, s/cp, d] copies of a block's window (q, dO, k, v, dq,
  // dk, dv; kernels/context_parallel.hpp).
  if (split.cp > 1 && c.num_layers > 0) {
    const u64 local = s / static_cast<u64>(split.cp), z = static_cast<u64>(c.micro_batch) * (c.heads / t);
    const u64 scores = mul(mul(2, z), mul(mul(local, local), e));
    const u64 windows = mul(7, mul(mul(static_cast<u64>(c.micro_batch), local), mul(h / t, e)));
    m.workspace = add(m.workspace, add(tf::cp_buffer_bytes(c, split, c.cp_comm, e), add(scores, windows)));
  }
  return m;
}

StageFlops stage_flops(const TransformerConfig& c) {
  validate(c);
  return tf::stage_flops(c, c.split(), c.parts(), modelled_recompute(c), tf::Convention::pipebench);
}

}  // namespace pipebench::kernels
