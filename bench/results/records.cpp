#include "bench/results/records.hpp"

#include "analysis/text.hpp"

namespace pipebench::bench {

const char* comm_kind_name(CommKind k) {
  switch (k) {
    case CommKind::Send: return "send";
    case CommKind::Recv: return "recv";
    case CommKind::AllReduce: return "allreduce";
    case CommKind::Barrier: return "barrier";
    case CommKind::AllGather: return "allgather";
    case CommKind::ReduceScatter: return "reduce_scatter";
    case CommKind::AllToAll: return "alltoall";
  }
  return "?";
}

std::optional<double> step_time_spread(const RunSummary& s) {
  if (!s.step_time_min || !s.step_time_max || !(s.step_time > 0)) return std::nullopt;
  return (*s.step_time_max - *s.step_time_min) / s.step_time;
}

const char* comm_group_name(CommGroup g) {
  switch (g) {
    case CommGroup::pp: return "pp";
    case CommGroup::tp: return "tp";
    case CommGroup::dp: return "dp";
    case CommGroup::ep: return "ep";
  }
  return "?";
}


std::string utf8_escaped(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_length(s, i);
    if (n > 0) {
      out.append(s, i, n);
      i += n;
      continue;
    }
    static const char hex[] = "0123456789ABCDEF";
    const auto c = static_cast<unsigned char>(s[i++]);
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 15];
  }
  return out;
}

bool operator==(const RunResult& a, const RunResult& b) {
  return a.key == b.key && a.config == b.config && a.metadata == b.metadata && a.summary == b.summary &&
         a.ranks == b.ranks && a.stages == b.stages && a.actions == b.actions && a.comms == b.comms && a.steps == b.steps;
}

}  // namespace pipebench::bench
