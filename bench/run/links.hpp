#pragma once
// Pipeline links for a backend that matches point-to-point messages by order (NCCL ignores tags and
// runs each communicator's operations one after the other on its stream). On one communicator per
// pipeline group, a receive posted ahead sits on the stream before this rank's next send, and the
// same on the peer: both wait for each other. So such a backend gets one two-rank communicator per
// direction of each pipeline link (src -> dst): on it src only sends and dst only receives, and dst
// posts its receives in the order src sends (sent_messages(), known to both from the schedule).
// The executor uses them when ExecutorConfig::links is set (docs/gpu.md "NCCL").
#include <mpi.h>

#include <map>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/schedule.hpp"
#include "comm/communicator.hpp"
#include "comm/factory.hpp"

namespace pipebench::bench {

// One message of a step, from the sending rank's point of view.
struct SentMessage {
  int src_stage = 0, dest_stage = 0, mb = 0;
  bool grad = false;
  int dest_rank = 0;  // pipeline rank of dest_stage; never the sender (same-rank hand-offs are left out)
};

// What `rank` sends in one step, in the order the executor sends it: per action, the forward output,
// then the input gradient.
std::vector<SentMessage> sent_messages(const analysis::Schedule& s, int rank);

// Directed links (src, dst) some rank of `s` sends over, sorted.
std::vector<std::pair<int, int>> link_pairs(const analysis::Schedule& s);

class Links {
 public:
  // Collective over `pp` (the pipeline group): one communicator named "pp a>b" per pair, in the
  // pairs' order, src as its rank 0 and dst as its rank 1.
  Links(std::string_view backend, MPI_Comm pp, const std::vector<std::pair<int, int>>& pairs,
        const comm::CommOptions& options);
  // The link from src to dst (pipeline ranks) where this rank is one end; null if there is none.
  comm::Communicator* link(int src, int dst) const;
  static constexpr int kSrc = 0, kDst = 1;  // the two ends' ranks inside a link

 private:
  std::map<std::pair<int, int>, std::unique_ptr<comm::Communicator>> links_;
};

}  // namespace pipebench::bench
