// The machine descriptions of `pipebench plan`: their checks and the achieved matrix-product rate
// (docs/model.md). The model's counts are the cost model's (analysis/transformer/).
#include <cmath>
#include <sstream>
#include <string>

#include "analysis/error.hpp"
#include "analysis/plan/model.hpp"
#include "analysis/text.hpp"

namespace pipebench::analysis::plan {

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
