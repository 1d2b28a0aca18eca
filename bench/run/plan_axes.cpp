// The checks of the flags of the context- and expert-parallel axes in `run` (bench/run/plan.hpp): the
// MoE layer's flags and the context-parallel exchange's, before MPI starts.
#include "analysis/error.hpp"
#include "analysis/text.hpp"
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
  // --zero N runs with experts: the routed experts' buckets shard over the expert-data-parallel group
  // (bench/run/executor_zero.cpp), so nothing is refused here.
  analysis::transformer::check_expert_parallel(moe, rs.ep);
}

// --expert-parallel in run: the synthetic stage's expert traffic (docs/run.md "Expert traffic"), or the
// transformer's MoE layers (which need experts). Its flags only with bytes to send, over MPI.
void check_expert_traffic(const RunSettings& rs) {
  const SyntheticSettings& y = rs.synthetic;
  const std::string ep = "--expert-parallel " + std::to_string(rs.ep);
  if (rs.ep > 1 && rs.workload == WorkloadKind::transformer && rs.model.moe.experts == 0)
    throw UsageError(ep + " needs --experts E >= 1 with --workload transformer: without experts there is nothing to split");
  if (rs.ep > 1 && rs.workload == WorkloadKind::transformer && rs.backend != "mpi")
    throw UsageError(ep + " with --workload transformer needs --backend mpi (the experts' all-to-all runs over MPI only yet)");
  if (y.ep_flags.empty()) return;
  if (rs.workload != WorkloadKind::synthetic) {  // --ep-overlap is the MoE layers' too (kernels/interleave.hpp)
    for (const std::string& flag : y.ep_flags)
      if (flag != "--ep-overlap")
        throw UsageError(flag + " needs --workload synthetic (it is the synthetic stage's expert traffic)");
    if (rs.ep == 1)
      throw UsageError("--ep-overlap needs --expert-parallel > 1 (it is 1): without it the MoE layers exchange nothing");
    return;
  }
  if (y.ep_alltoall_bytes == 0) {
    for (const std::string& flag : y.ep_flags)
      if (flag != "--ep-alltoall-bytes")
        throw UsageError(flag + " needs --ep-alltoall-bytes B > 0: without it there is no expert traffic");
    return;
  }
  const std::string bytes = "--ep-alltoall-bytes " + std::to_string(y.ep_alltoall_bytes);
  if (rs.ep == 1) throw UsageError(bytes + " needs --expert-parallel > 1 (it is 1): the exchanges run over the ep group");
  if (y.ep_alltoall_bytes % static_cast<std::uint64_t>(rs.ep))
    throw UsageError(bytes + " is not allowed with " + ep + ": expected a multiple of ep (one block per member)");
  // The busiest member's receive buffer is one MPI call's count, an int (comm/mpi_communicator.cpp).
  if (y.ep_alltoall_bytes * static_cast<std::uint64_t>(rs.ep) > 2147483647ull)
    throw UsageError(bytes + " is not allowed with " + ep + ": ep x B must be at most 2147483647 (MPI's message size limit)");
  if (!(y.routing_imbalance >= 1) || y.routing_imbalance > rs.ep)
    throw UsageError("--routing-imbalance " + num(y.routing_imbalance, 9) + " is not allowed with " + ep +
                     ": expected 1 to ep (the busiest rank receives X times the mean, at most every block)");
  if (rs.backend != "mpi") throw UsageError(bytes + " needs --backend mpi (the expert exchanges are not run over NCCL yet)");
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
