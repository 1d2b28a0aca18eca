#include "bench/records.hpp"

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

}  // namespace pipebench::bench
