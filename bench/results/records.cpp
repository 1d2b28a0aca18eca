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

const char* comm_group_name(CommGroup g) {
  switch (g) {
    case CommGroup::pp: return "pp";
    case CommGroup::tp: return "tp";
    case CommGroup::dp: return "dp";
  }
  return "?";
}

bool operator==(const RunResult& a, const RunResult& b) {
  return a.key == b.key && a.config == b.config && a.metadata == b.metadata && a.summary == b.summary &&
         a.ranks == b.ranks && a.stages == b.stages && a.actions == b.actions && a.comms == b.comms;
}

}  // namespace pipebench::bench
