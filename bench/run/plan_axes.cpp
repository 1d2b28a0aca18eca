// The checks of the flags of the context- and expert-parallel axes in `run` (bench/run/plan.hpp): the
// MoE layer's flags and the context-parallel exchange's, before MPI starts.
#include "analysis/error.hpp"
#include "analysis/transformer/shape.hpp"
#include "bench/run/plan.hpp"

namespace pipebench::bench {

// The MoE flags (docs/transformer.md "Mixture of experts"): only with the transformer, all but --experts
// only with experts, and E split evenly over the ep ranks. The shape's own checks (top-k, sizes) follow
// in validate_model.
void check_moe(const RunSettings& rs) {
  const auto& moe = rs.model.moe;
  if (rs.moe_flags.empty()) return;
  const std::string& first = rs.moe_flags.front();
  if (rs.workload != WorkloadKind::transformer)
    throw UsageError(first + " needs --workload transformer: the synthetic workload has no MoE layer");
  if (moe.experts == 0)
    for (const std::string& flag : rs.moe_flags)
      if (flag != "--experts")
        throw UsageError(flag + " needs --experts E >= 1: without experts no layer is an MoE layer");
  analysis::transformer::check_expert_parallel(moe, rs.ep);
}

// --context-parallel and its flags: the transformer over MPI only, a cp that divides the job.
void check_context_parallel(const RunSettings& rs, int world_size) {
  const std::string cp = "--context-parallel " + std::to_string(rs.cp);
  if (rs.cp == 1) {
    for (const auto& [given, flag] : {std::pair{rs.cp_comm_given, "--cp-comm"}, {rs.cp_chunks_given, "--cp-chunks"}})
      if (given) throw UsageError(std::string(flag) + " needs --context-parallel > 1 (it is 1)");
    return;
  }
  if (rs.workload != WorkloadKind::transformer)
    throw UsageError(cp + " needs --workload transformer (the synthetic workload has no context-parallel traffic)");
  if (rs.backend != "mpi")
    throw UsageError(cp + " needs --backend mpi (its exchanges use host memory)");
  if (world_size % rs.cp != 0)
    throw UsageError(cp + " does not divide the job's " + std::to_string(world_size) + " ranks");
}

}  // namespace pipebench::bench
