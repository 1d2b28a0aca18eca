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
  if (m.gpus_per_node < 1)
    throw UsageError("machine " + quoted(m.name) + ": gpus_per_node = " + std::to_string(m.gpus_per_node) +
                     " is not allowed: must be >= 1");
  auto in01 = [&](double x, const char* what) {
    if (!(x >= 0 && x <= 1))
      throw UsageError("machine " + quoted(m.name) + ": " + what + " = " + num(x) + " is not allowed: must be in [0, 1]");
  };
  auto in01open = [&](double x, const char* what) {
    if (!(x > 0 && x <= 1))
      throw UsageError("machine " + quoted(m.name) + ": " + what + " = " + num(x) + " is not allowed: must be in (0, 1]");
  };
  in01open(m.intra_efficiency, "intra_node_efficiency");
  in01open(m.inter_efficiency, "inter_node_efficiency");
  check_gemm_table(m.gemm, "machine " + quoted(m.name));
  in01(m.dp_overlap, "dp_overlap");
  auto nonneg = [&](double x, const char* what) {
    if (!(x >= 0) || !std::isfinite(x))
      throw UsageError("machine " + quoted(m.name) + ": " + what + " = " + num(x) + " is not allowed: must be >= 0");
  };
  nonneg(m.intra_latency, "intra_node_latency_us");
  nonneg(m.inter_latency, "inter_node_latency_us");
  nonneg(m.peak_fp8_flops, "peak_fp8_tflops");
  nonneg(m.memory_reserve_bytes, "memory_reserve_gib");
  nonneg(m.action_gap, "action_gap_us");
  nonneg(m.p2p_extra, "p2p_extra");
  nonneg(m.p2p_wait, "p2p_wait");
}


}  // namespace pipebench::analysis::plan
