// The model and machine descriptions of `pipebench plan`: parameter and FLOP counts, machine checks and
// the achieved matrix-product rate (docs/model.md).
#include <cmath>
#include <sstream>
#include <string>

#include "analysis/error.hpp"
#include "analysis/plan/model.hpp"
#include "analysis/text.hpp"

namespace pipebench::analysis::plan {

// ---- model ------------------------------------------------------------------------------------------

void check_model(const ModelSpec& m) {
  auto positive = [](long long x, const char* what) {
    if (x < 1) throw UsageError(std::string("--") + what + " " + std::to_string(x) + " is not allowed: must be >= 1");
  };
  positive(m.layers, "layers");
  positive(m.hidden, "hidden");
  positive(m.heads, "heads");
  positive(m.seq, "seq");
  positive(m.vocab, "vocab");
  if (m.hidden % m.heads != 0)
    throw UsageError("--heads " + std::to_string(m.heads) + " is not allowed: must divide --hidden " + std::to_string(m.hidden));
  if (m.kv_heads < 0 || (m.kv_heads > 0 && m.heads % m.kv_heads != 0))
    throw UsageError("--kv-heads " + std::to_string(m.kv_heads) + " is not allowed: must divide --heads " +
                     std::to_string(m.heads));
  if (m.ffn < 0) throw UsageError("--ffn " + std::to_string(m.ffn) + " is not allowed: must be >= 1");
}

double layer_params(const ModelSpec& m) {
  const double h = m.hidden, f = static_cast<double>(m.ffn_size());
  const double kv = h * m.kv() / m.heads;  // key/value width
  const double mats = m.gated_mlp ? 3 : 2;
  // QKV, projection, MLP matrices; their biases and two LayerNorms (12h^2 + 13h for GPT).
  return h * (h + 2 * kv) + h * h + mats * h * f + (h + 2 * kv) + h + (mats - 1) * f + h + 4 * h;
}

double total_params(const ModelSpec& m) {
  // Tied input embedding and output head (Megatron-LM GPT), position embeddings of s*h, final LayerNorm.
  return m.layers * layer_params(m) + double(m.vocab) * m.hidden + double(m.seq) * m.hidden + 2.0 * m.hidden;
}

double layer_forward_flops_per_token(const ModelSpec& m) {
  const double h = m.hidden, f = static_cast<double>(m.ffn_size());
  const double kv = h * m.kv() / m.heads;
  const double mats = m.gated_mlp ? 3 : 2;
  // 2 FLOPs per multiply-add: the weight products, then Q K^T and scores x V over the whole sequence.
  return 2 * (h * (h + 2 * kv) + h * h + mats * h * f) + 4.0 * m.seq * h;
}

double head_forward_flops_per_token(const ModelSpec& m) { return 2.0 * m.hidden * m.vocab; }

double model_flops_per_step(const ModelSpec& m, std::int64_t global_batch) {
  const double tokens = double(global_batch) * m.seq;
  return 3 * tokens * (m.layers * layer_forward_flops_per_token(m) + head_forward_flops_per_token(m));
}

// ---- machine ----------------------------------------------------------------------------------------

void check_machine(const MachineSpec& m) {
  auto positive = [&](double x, const char* what) {
    if (!(x > 0) || !std::isfinite(x))
      throw UsageError("machine " + quoted(m.name) + ": " + what + " = " + num(x) + " is not allowed: must be > 0");
  };
  positive(m.peak_flops, "peak_tflops");
  positive(m.memory_bytes, "memory_gib");
  positive(m.hbm_bandwidth, "hbm_gbps");
  positive(m.intra_bandwidth, "intra_node_gbps");
  positive(m.inter_bandwidth, "inter_node_gbps");
  positive(m.matmul_efficiency, "matmul_efficiency");
  if (m.gpus_per_node < 1)
    throw UsageError("machine " + quoted(m.name) + ": gpus_per_node = " + std::to_string(m.gpus_per_node) +
                     " is not allowed: must be >= 1");
  auto in01 = [&](double x, const char* what) {
    if (!(x >= 0 && x <= 1))
      throw UsageError("machine " + quoted(m.name) + ": " + what + " = " + num(x) + " is not allowed: must be in [0, 1]");
  };
  if (m.matmul_efficiency > 1)
    throw UsageError("machine " + quoted(m.name) + ": matmul_efficiency = " + num(m.matmul_efficiency) +
                     " is not allowed: must be in (0, 1]");
  in01(m.dp_overlap, "dp_overlap");
  auto nonneg = [&](double x, const char* what) {
    if (!(x >= 0) || !std::isfinite(x))
      throw UsageError("machine " + quoted(m.name) + ": " + what + " = " + num(x) + " is not allowed: must be >= 0");
  };
  nonneg(m.intra_latency, "intra_node_latency_us");
  nonneg(m.inter_latency, "inter_node_latency_us");
  nonneg(m.gemm_half_width, "gemm_half_width");
  nonneg(m.memory_reserve_bytes, "memory_reserve_gib");
  nonneg(m.action_gap, "action_gap_us");
}

double achieved_rate(const MachineSpec& m, double width) {
  const double shape = m.gemm_half_width > 0 ? width / (width + m.gemm_half_width) : 1.0;
  return m.peak_flops * m.matmul_efficiency * shape;
}

}  // namespace pipebench::analysis::plan
