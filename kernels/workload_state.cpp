// The settings of a transformer workload and what they imply, without a stage: names of the enums,
// the precision, each stage's TransformerConfig, the model's check, and the bytes of training state a
// rank holds (the formulas the run's measured state is set beside). Split from transformer_workload.cpp.
#include <vector>

#include "analysis/error.hpp"
#include "analysis/zero.hpp"
#include "kernels/transformer_config.hpp"
#include "kernels/transformer_workload.hpp"

namespace pipebench::kernels {

const char* to_string(Optimizer o) { return o == Optimizer::adam ? "adam" : "sgd"; }
const char* to_string(Precision p) {
  switch (p) {
    case Precision::fp64: return "fp64";
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
    case Precision::fp32: break;
  }
  return "fp32";
}

void set_precision(TransformerWorkloadConfig& c, Precision p) {
  c.fp64 = p == Precision::fp64;
  c.half = p == Precision::bf16 ? Half::bf16 : p == Precision::fp16 ? Half::fp16 : Half::none;
}

Precision precision_of(const TransformerWorkloadConfig& c) {
  if (c.fp64) return Precision::fp64;
  return c.half == Half::bf16 ? Precision::bf16 : c.half == Half::fp16 ? Precision::fp16 : Precision::fp32;
}
int weight_element_bytes(const TransformerWorkloadConfig& c) { return c.fp64 ? 8 : c.half != Half::none ? 2 : 4; }

const char* to_string(Balance b) { return b == Balance::flops ? "flops" : "measured"; }

TransformerConfig stage_config(const TransformerWorkloadConfig& c, const std::vector<int>& split, int depth) {
  TransformerConfig t = TransformerConfig::whole_model(c.hidden, c.heads, c.seq, c.micro_batch, c.vocab, c.layers);
  t.first_layer = 0;
  for (int d = 0; d < depth; ++d) t.first_layer += split[d];
  t.num_layers = split[depth];
  t.embedding = depth == 0;
  t.head = depth == static_cast<int>(split.size()) - 1;
  t.tp_size = c.tp_size;
  t.tp_rank = c.tp_rank;
  t.recompute = c.recompute;
  t.attention = c.attention;
  t.seed = c.seed;
  t.tie_embeddings = c.tie_embeddings;
  t.vocab_parallel = c.vocab_parallel;
  t.sequence_parallel = c.sequence_parallel;
  static_cast<analysis::transformer::Moe&>(t) = c.moe;
  t.ep_size = c.ep_size;
  t.ep_rank = c.ep_rank;
  t.context_parallel = c.context_parallel;
  t.cp_rank = c.cp_rank;
  t.cp_chunks = c.cp_chunks;
  t.cp_comm = c.cp_comm;
  t.stash16 = c.fp64 ? Half::none : c.half;
  return t;
}

std::uint64_t optimizer_state_bytes(const TransformerWorkloadConfig& c, const analysis::Schedule& s, int pp_rank,
                                    bool zero, int buckets, int dp, int dp_rank) {
  return state_bytes(c, s, pp_rank, zero ? 1 : 0, buckets, dp, dp_rank).optimizer;
}

StateBytes state_bytes(const TransformerWorkloadConfig& c, const analysis::Schedule& s, int pp_rank, int zero,
                       int buckets, int dp, int dp_rank) {
  return state_bytes(c, s, pp_rank, zero, buckets, ZeroGroups{dp, dp_rank, dp, dp_rank});
}

StateBytes state_bytes(const TransformerWorkloadConfig& c, const analysis::Schedule& s, int pp_rank, int zero,
                       int buckets, const ZeroGroups& g) {
  const auto split = stage_layers(c, s.stages_per_pipe());
  const std::uint64_t e = c.fp64 ? 8 : 4;
  const bool half = c.half != Half::none && !c.fp64;
  std::uint64_t whole = 0, shards = 0;  // parameters of the rank's stages, and of its shards of them
  std::vector<double> decoded(static_cast<std::size_t>(s.num_stages()), 0);  // per stage: its fp32 bytes
  for (int st : s.stages_of_rank(pp_rank)) {
    const StageMemory m = estimate_memory(stage_config(c, split, s.depth_of_stage(st)), e);
    whole += m.parameters;
    decoded[static_cast<std::size_t>(st)] = 4.0 * static_cast<double>(m.parameters);
    // The dense part over d ranks, the routed experts' over edp (whole where edp = 1), as the executor cuts them.
    for (const ZeroShard& z : stage_zero_shards(m.parameters, m.parameters - m.expert_parameters, buckets, g))
      shards += z.hi - z.lo;
  }
  // What the rank's buffers keep per parameter: e-byte weights, gradients and Adam moments, or a 16-bit
  // run's mixed-precision layout (the planner's: 16-bit weights, fp32 gradients, main weights and
  // moments); the stage shards what analysis::sharded_state says.
  analysis::StateParts widths = analysis::kMixedPrecisionWidths;
  if (!half) widths = {static_cast<double>(e), static_cast<double>(e), 0, 2.0 * static_cast<double>(e)};
  if (c.optimizer != Optimizer::adam) widths.optimizer = 0;
  const analysis::StateParts p = analysis::sharded_state(widths, g.d > 1 ? zero : 0, static_cast<double>(whole),
                                                         static_cast<double>(shards));
  const auto bytes = [](double x) { return static_cast<std::uint64_t>(x); };  // integers below 2^53: exact
  const double peak = half ? analysis::decoded_peak_bytes(s, pp_rank, decoded) : 0;
  return {bytes(p.weights), bytes(p.gradients), bytes(p.main_weights), bytes(p.optimizer), bytes(peak)};
}

void validate_model(const TransformerWorkloadConfig& c, int stages_per_pipe) {
  const auto split = stage_layers(c, stages_per_pipe);
  for (int d = 0; d < stages_per_pipe; ++d) validate(stage_config(c, split, d));
}

}  // namespace pipebench::kernels
