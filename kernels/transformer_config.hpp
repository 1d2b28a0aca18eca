#pragma once
// Shape of a transformer stage, its validation, and what it costs (bytes, FLOPs), computed from the shapes
// alone so that a caller can refuse a configuration before anything is allocated. The formulas are the
// cost model's (analysis/transformer/, convention pipebench): this header adapts them to one stage of
// the kernels. docs/transformer.md derives them.
#include <cstddef>
#include <cstdint>
#include <string>

#include "analysis/recompute.hpp"
#include "analysis/transformer/context_parallel.hpp"
#include "analysis/transformer/flops.hpp"
#include "analysis/transformer/shape.hpp"
#include "kernels/precision.hpp"

namespace pipebench::kernels {

// Activation recomputation: none, selective or full (analysis/recompute.hpp).
using analysis::Recompute;

// How the attention core runs (`run --attention`): unfused (kernels/attention.hpp: the scores as
// strided-batched BLAS products, the probabilities in memory) or fused (kernels/flash_attention.hpp:
// flash attention's tiles in team scratch, no s x s matrix). The fused path stores what selective
// recomputation stores and recomputes the scores in I, so the cost model counts it as selective.
enum class Attention { unfused, fused };

// Context parallelism's chunks of a sequence (`run --cp-chunks`, kernels/cp_positions.hpp) and how the
// keys and values reach the queries (`run --cp-comm`, kernels/context_parallel.hpp).
enum class CpChunks { zigzag, contiguous };
using CpComm = analysis::transformer::CpExchange;
const char* cp_chunks_name(CpChunks c);
const char* cp_comm_name(CpComm c);
constexpr Attention kAttentions[] = {Attention::unfused, Attention::fused};
const char* attention_name(Attention a);
// The faster of the two on this build's backend (docs/transformer.md, "Fused attention"): unfused on a
// host backend, where the BLAS runs the products several times faster than the fused kernel's loops;
// fused on a device, where the unfused path's [b*a, s, s] probabilities are memory traffic (not yet
// measured on one: docs/gpu.md).
Attention default_attention();

// The whole model is the cost model's Shape (hidden, heads, seq, micro_batch, vocab, layers,
// tie_embeddings, ...); the kernels run only part of what it describes (check_runnable_by_kernels).
struct TransformerConfig : analysis::transformer::Shape {
  // This stage: layers [first_layer, first_layer + num_layers), plus the token embedding (first stage)
  // and/or the final LayerNorm, output projection and loss (last stage).
  int first_layer = 0;
  int num_layers = 0;
  bool embedding = false;
  bool head = false;
  // Megatron tensor parallelism: this rank holds heads/tp_size heads and 4h/tp_size MLP columns.
  int tp_size = 1;
  int tp_rank = 0;
  Recompute recompute = Recompute::none;
  Attention attention = Attention::unfused;
  std::uint64_t seed = 1;
  // Tied input and output embeddings (Shape::tie_embeddings): the head projects with the token
  // embedding's [V, h] matrix (transposed). On a stage that holds both, one parameter; on a last stage
  // without the embedding, a copy of it, named `embedding.tokens` too, that starts equal and that the
  // caller keeps equal by summing both copies' gradients every step (the embedding group).
  // Vocabulary-parallel embedding and output layer (Megatron, on when t > 1): this rank holds the
  // vocabulary rows [tp_rank*V/t, (tp_rank+1)*V/t) of the embedding and the matching columns of the
  // output layer, and the loss is the parallel cross-entropy (no rank holds the full logits). Needs
  // V % t == 0. Without it (or at t = 1) both are replicated.
  bool vocab_parallel = false;
  bool vocab_split() const { return vocab_parallel && tp_size > 1; }
  int local_vocab() const { return vocab_split() ? vocab / tp_size : vocab; }
  // Sequence parallelism (kernels/sequence_parallel.hpp, Korthikanti et al. 2022): the residual stream,
  // the LayerNorms and the element-wise regions hold s/tp_size positions of every sequence; stage
  // inputs and outputs are [b, s/t, h]. Needs t > 1 and s % t == 0.
  bool sequence_parallel = false;
  bool seq_split() const { return sequence_parallel && tp_size > 1; }
  int local_seq() const { return seq_split() ? cp_seq() / tp_size : cp_seq(); }
  // Context parallelism (kernels/context_parallel.hpp): this rank, cp_rank of context_parallel, holds
  // cp_seq() = s/cp positions of every sequence (which ones: cp_chunks, kernels/cp_positions.hpp), and
  // attention takes the other ranks' keys and values by cp_comm. Sequence parallelism then splits the
  // s/cp positions over t. The unfused attention only.
  int context_parallel = 1;
  int cp_rank = 0;
  CpChunks cp_chunks = CpChunks::zigzag;
  CpComm cp_comm = CpComm::ring;
  int cp_seq() const { return seq / context_parallel; }
  // Expert parallelism (kernels/moe_stage.hpp): this rank, ep_rank of ep_size, holds the routed experts
  // [ep_rank E/ep, (ep_rank + 1) E/ep) of every MoE layer; the router and shared experts are replicated.
  int ep_size = 1;
  int ep_rank = 0;
  // 16-bit activations (a float stage of a bf16 or fp16 run, kernels/stash16.hpp): what F and I keep
  // for the backward is kept as 16-bit values, the per-row statistics and the loss's logits gradient
  // in fp32; none keeps every tensor in the stage's own type.
  Half stash16 = Half::none;

  // This rank's split and this stage's parts, as the cost model names them.
  analysis::transformer::Split split() const;
  analysis::transformer::StageParts parts() const;

  // The whole model on one rank.
  static TransformerConfig whole_model(int hidden, int heads, int seq, int micro_batch, int vocab, int layers);
};

// UsageError, one line, for what the model describes but the kernels cannot run: grouped-query
// attention, a gated MLP or another MLP size than 4h, experts with t > 1 or cp > 1, positions that are not learned,
// fused attention under cp > 1, s not divisible by 2·cp (zigzag chunks) or cp (contiguous).
void check_runnable_by_kernels(const analysis::transformer::Shape& m, const analysis::transformer::Split& split);

// Throws UsageError naming the bad value: the cost model's checks (analysis::transformer::check: zero
// sizes, h % a, a % t, V % t and s % t where split), check_runnable_by_kernels, a tensor-parallel rank
// outside [0, t), a layer range outside the model, an embedding not on layer 0, a head not after the
// last layer, sizes past what the kernels index.
void validate(const TransformerConfig& c);

// Bytes a stage holds, for scalar_bytes-sized values (4 for fp32; the stashes 2-byte values where
// stash16 is set). Exact for everything but `workspace`.
struct StageMemory {
  std::uint64_t parameters = 0;              // number of parameters (not bytes)
  std::uint64_t expert_parameters = 0;       // of them the routed experts', the flat buffer's tail
  std::uint64_t weights = 0;                 // bytes
  std::uint64_t grads = 0;                   // bytes (same shapes as the weights)
  std::uint64_t forward_stash = 0;           // per micro-batch, held from the end of F to the start of I
  std::uint64_t weight_stash = 0;            // per micro-batch, held from the end of I to the end of W
  std::uint64_t layer_forward_stash = 0;     // the per-layer part of forward_stash
  std::uint64_t layer_weight_stash = 0;      // the per-layer part of weight_stash
  std::uint64_t workspace = 0;               // upper bound of the transient buffers of one call
  // Upper bound with `in_flight` micro-batches between their F and their W: weights, grads, each
  // micro-batch's larger stash, the partial overlap of both stashes inside one I, and the workspace.
  std::uint64_t total(int in_flight) const;
};
StageMemory estimate_memory(const TransformerConfig& c, std::uint64_t scalar_bytes = 4);

// The recomputation the cost model counts for c: fused attention without recomputation stores and
// reruns what selective recomputation does (the memory and FLOP figures of estimate_memory, stage_flops).
Recompute modelled_recompute(const TransformerConfig& c);

// Values of team scratch one team of the fused attention takes at tile t (query rows = key columns) and
// head size d: the K^T and V^T tiles and two [t, d] accumulators, two [t, t] tiles, three row vectors.
inline std::size_t flash_scratch_values(int t, int d) {
  const std::size_t tt = static_cast<std::size_t>(t) * t, td = static_cast<std::size_t>(t) * d;
  return 4 * td + 2 * tt + 3 * static_cast<std::size_t>(t);
}

// Why the fused attention cannot run c, "" where it can: its smallest tile (16) must fit `limit` bytes
// of team scratch. The build's limit (fused_attention_scratch_limit) is one GPU thread block's (48 KiB,
// CUDA's default per block, less what Kokkos reserves for its team reductions); a host build has none
// (0). Known before Kokkos starts, so `run` refuses before it allocates anything.
std::uint64_t fused_attention_scratch_limit();
std::string fused_attention_refusal(const TransformerConfig& c, std::uint64_t scalar_bytes,
                                    std::uint64_t limit = fused_attention_scratch_limit());

// How many heads' [s, s] score matrices the unfused attention holds at once in a workspace (selective
// recomputation's F and every I's dP; kernels/attention.hpp): one per host thread, since each thread then
// runs whole products (kernels/gemm_batched.hpp), or 8 on a device (host_threads 0), at most z.
inline std::size_t attention_group_for(std::size_t z, int host_threads) {
  const std::size_t g = host_threads > 0 ? static_cast<std::size_t>(host_threads) : 8;
  return g < z ? g : (z > 0 ? z : 1);
}

// Floating-point operations of one micro-batch's F, I and W on this stage (analysis/transformer/flops.hpp
// gives the convention: matrix products only, 2 per multiply-add, attention's s x s products in full).
// backward_input includes `recompute`, the forward work that selective/full recomputation redoes;
// `replicated` is what every tensor-parallel rank repeats (the output layer without the vocabulary split).
using StageFlops = analysis::transformer::Flops;
StageFlops stage_flops(const TransformerConfig& c);

}  // namespace pipebench::kernels
