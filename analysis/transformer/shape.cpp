#include "analysis/transformer/shape.hpp"

#include <string>

#include "analysis/error.hpp"
#include "analysis/limits.hpp"

namespace pipebench::analysis::transformer {

namespace {

std::string str(long long v) { return std::to_string(v); }

void at_least(long long v, long long low, const char* flag) {
  if (v < low) throw UsageError(std::string(flag) + " " + str(v) + " is not allowed: must be >= " + str(low));
}

void check_sizes(const Shape& m) {
  at_least(m.layers, 1, "--layers");
  if (m.layers > kMaxModelLayers)
    throw UsageError("--layers " + str(m.layers) + " is not allowed: at most " + str(kMaxModelLayers) +
                     " (a hundred times the deepest published models)");
  at_least(m.hidden, 1, "--hidden");
  at_least(m.heads, 1, "--heads");
  at_least(m.seq, 1, "--seq");
  at_least(m.vocab, 1, "--vocab");
  if (m.hidden % m.heads != 0)
    throw UsageError("--heads " + str(m.heads) + " is not allowed: must divide --hidden " + str(m.hidden));
  if (m.kv_heads < 0 || (m.kv_heads > 0 && m.heads % m.kv_heads != 0))
    throw UsageError("--kv-heads " + str(m.kv_heads) + " is not allowed: must divide --heads " + str(m.heads));
  // 0 is "4h": the flag's default, never a size.
  if (m.ffn < 0) throw UsageError("--ffn " + str(m.ffn) + " is not allowed: must be >= 1");
  at_least(m.micro_batch, 1, "--micro-batch-size");
}

void check_experts(const Shape& m) {
  at_least(m.experts, 0, "--experts");
  if (m.experts == 0) return;
  if (m.top_k < 1 || m.top_k > m.experts)
    throw UsageError("--top-k " + str(m.top_k) + " is not allowed: must be in [1, --experts " + str(m.experts) + "]");
  at_least(m.expert_ffn, 0, "--moe-ffn");
  at_least(m.shared_experts, 0, "--shared-experts");
  at_least(m.moe_every, 1, "--moe-every");
  if (m.capacity_factor < 0 || !(m.capacity_factor == m.capacity_factor))
    throw UsageError("--capacity-factor " + std::to_string(m.capacity_factor) +
                     " is not allowed: expected a number > 0, or dropless");
  if (m.aux_loss_coeff < 0 || !(m.aux_loss_coeff == m.aux_loss_coeff))
    throw UsageError("--aux-loss-coeff " + std::to_string(m.aux_loss_coeff) + " is not allowed: must be >= 0");
}

void check_split(const Shape& m, const Split& s) {
  if (s.t < 1) throw UsageError("tensor-parallel size t = " + str(s.t) + " is not allowed: must be >= 1");
  if (m.heads % s.t != 0)
    throw UsageError("tensor-parallel size t = " + str(s.t) + " is not allowed: must divide --heads " + str(m.heads) +
                     " (heads are split whole over the tensor-parallel ranks)");
  if (m.kv() % s.t != 0)
    throw UsageError("tensor-parallel size t = " + str(s.t) + " is not allowed: must divide --kv-heads " +
                     str(m.kv()) + " (key/value heads are split whole over the tensor-parallel ranks)");
  if (m.ffn_size() % s.t != 0 || (m.experts > 0 && m.expert_ffn_size() % s.t != 0))
    throw UsageError("tensor-parallel size t = " + str(s.t) + " is not allowed: must divide the MLP size " +
                     str(m.ffn_size() % s.t != 0 ? m.ffn_size() : m.expert_ffn_size()) +
                     " (fc1's columns and fc2's rows are split over the tensor-parallel ranks)");
  if (s.vocab_split() && m.vocab % s.t != 0)
    throw UsageError("vocabulary size " + str(m.vocab) + " is not divisible by the tensor-parallel size " + str(s.t) +
                     " (the vocabulary-parallel embedding and output layer hold V/t rows each): use a multiple of " +
                     str(s.t) + ", e.g. " + str((m.vocab / s.t + 1) * s.t) + ", or --vocab-parallel off");
  if (s.sequence_parallel && s.t < 2)
    throw UsageError("--sequence-parallel needs a tensor-parallel size t > 1 (t is " + str(s.t) +
                     "): it splits the sequence over the tensor-parallel ranks");
  if (s.seq_split() && m.seq % s.t != 0)
    throw UsageError("--sequence-parallel: sequence length " + str(m.seq) + " is not divisible by the tensor-parallel size " +
                     str(s.t) + " (each rank holds s/t positions)");
  if (s.cp < 1 || m.seq % s.cp != 0)
    throw UsageError("--context-parallel " + str(s.cp) + " is not allowed: must be >= 1 and divide --seq " + str(m.seq) +
                     " (each rank holds s/cp positions)");
}

}  // namespace

std::string moe_tensor_parallel_refusal(const Moe& m, const Split& split) {
  if (m.experts == 0 || split.t < 2 || split.sequence_parallel) return {};
  return "--experts " + str(m.experts) + " with t = " + str(split.t) +
         " without --sequence-parallel is not allowed: MoE layers under tensor parallelism need sequence "
         "parallelism, as in Megatron-LM (add --sequence-parallel)";
}

void check_expert_parallel(const Moe& m, int ep, const char* flag) {
  if (ep < 1 || (m.experts > 0 && m.experts % ep != 0))
    throw UsageError("--experts " + str(m.experts) + " is not allowed with " + flag + " " + str(ep) +
                     ": E must be a multiple of ep (each rank holds E/ep experts)");
}

void check(const Shape& m, const Split& split) {
  check_sizes(m);
  check_experts(m);
  check_split(m, split);
  if (const std::string why = moe_tensor_parallel_refusal(m, split); !why.empty()) throw UsageError(why);
  check_expert_parallel(m, split.ep);
}

}  // namespace pipebench::analysis::transformer
