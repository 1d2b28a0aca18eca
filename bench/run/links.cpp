#include "bench/run/links.hpp"

#include <algorithm>
#include <set>
#include <string>

#include "topology/mpi_grid.hpp"

namespace pipebench::bench {

using analysis::Action;
using analysis::Kind;

std::vector<SentMessage> sent_messages(const analysis::Schedule& s, int rank) {
  std::vector<SentMessage> out;
  for (const Action& a : s.actions[static_cast<std::size_t>(rank)]) {
    const bool fwd = a.kind == Kind::F || a.kind == Kind::FB;
    const bool bwd = a.kind == Kind::B || a.kind == Kind::I || a.kind == Kind::FB;
    const int b = a.kind == Kind::FB ? a.b_stage : a.stage;
    const int bm = a.kind == Kind::FB ? a.b_mb : a.mb;
    if (fwd && !s.is_last_stage(a.stage)) out.push_back({a.stage, a.stage + 1, a.mb, false, s.stage_rank[a.stage + 1]});
    if (bwd && !s.is_first_stage(b)) out.push_back({b, b - 1, bm, true, s.stage_rank[b - 1]});
  }
  out.erase(std::remove_if(out.begin(), out.end(), [rank](const SentMessage& m) { return m.dest_rank == rank; }),
            out.end());
  return out;
}

std::vector<std::pair<int, int>> link_pairs(const analysis::Schedule& s) {
  std::set<std::pair<int, int>> pairs;
  for (int r = 0; r < s.p; ++r)
    for (const SentMessage& m : sent_messages(s, r)) pairs.insert({r, m.dest_rank});
  return {pairs.begin(), pairs.end()};
}

Links::Links(std::string_view backend, MPI_Comm pp, const std::vector<std::pair<int, int>>& pairs,
             const comm::CommOptions& options) {
  int me = 0;
  MPI_Comm_rank(pp, &me);
  for (const auto& [src, dst] : pairs) {
    const bool member = me == src || me == dst;
    MPI_Comm split = MPI_COMM_NULL;
    MPI_Comm_split(pp, member ? 0 : MPI_UNDEFINED, me == src ? kSrc : kDst, &split);
    if (!member) continue;
    const topology::MpiComm own(split);  // the communicator keeps a duplicate
    links_[{src, dst}] = comm::make_communicator(backend, split, "pp " + std::to_string(src) + ">" + std::to_string(dst),
                                                 options);
  }
}

comm::Communicator* Links::link(int src, int dst) const {
  const auto it = links_.find({src, dst});
  return it == links_.end() ? nullptr : it->second.get();
}

}  // namespace pipebench::bench
