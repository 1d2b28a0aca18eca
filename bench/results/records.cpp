#include "bench/results/records.hpp"

namespace pipebench::bench {

const char* comm_kind_name(CommKind k) {
  switch (k) {
    case CommKind::Send: return "send";
    case CommKind::Recv: return "recv";
    case CommKind::AllReduce: return "allreduce";
    case CommKind::Barrier: return "barrier";
    case CommKind::AllGather: return "allgather";
    case CommKind::ReduceScatter: return "reduce_scatter";
  }
  return "?";
}

bool operator==(const ActionRecord& a, const ActionRecord& b) {
  return a.step == b.step && a.rank == b.rank && a.global_rank == b.global_rank && a.stage == b.stage &&
         a.chunk == b.chunk && a.mb == b.mb && a.kind == b.kind && a.b_stage == b.b_stage && a.b_mb == b.b_mb &&
         a.t_start == b.t_start && a.t_end == b.t_end && a.flops == b.flops && a.activation_bytes == b.activation_bytes;
}

bool operator==(const CommRecord& a, const CommRecord& b) {
  return a.step == b.step && a.global_rank == b.global_rank && a.peer == b.peer && a.kind == b.kind &&
         a.group == b.group && a.bytes == b.bytes && a.stage == b.stage && a.mb == b.mb && a.tag == b.tag && a.t_posted == b.t_posted &&
         a.t_wait == b.t_wait &&
         a.t_done == b.t_done;
}

bool operator==(const RankSummary& a, const RankSummary& b) {
  return a.global_rank == b.global_rank && a.tp == b.tp && a.pp == b.pp && a.dp == b.dp && a.busy == b.busy &&
         a.idle == b.idle && a.span_bubble == b.span_bubble && a.peak_inflight == b.peak_inflight &&
         a.predicted_peak_inflight == b.predicted_peak_inflight && a.peak_activation_bytes == b.peak_activation_bytes &&
         a.predicted_activation_bytes == b.predicted_activation_bytes && a.flop_rate == b.flop_rate &&
         a.clock_offset == b.clock_offset && a.clock_uncertainty == b.clock_uncertainty && a.host == b.host;
}

bool operator==(const RunSummary& a, const RunSummary& b) {
  return a.step_time == b.step_time && a.makespan == b.makespan && a.bubble_measured == b.bubble_measured &&
         a.bubble_simulated == b.bubble_simulated && a.bubble_formula == b.bubble_formula &&
         a.simulated_makespan == b.simulated_makespan && a.dp_sync_time == b.dp_sync_time && a.extra == b.extra;
}

bool operator==(const RunResult& a, const RunResult& b) {
  return a.key == b.key && a.config == b.config && a.metadata == b.metadata && a.actions == b.actions &&
         a.comms == b.comms && a.ranks == b.ranks && a.summary == b.summary;
}

}  // namespace pipebench::bench
