#pragma once
// The communicators of a measured run as the traces others' tools read name them (Kineto's
// distributedInfo.pg_config, HTA's "Process Group" arguments, Chakra's pg_name): every tensor-,
// pipeline- and data-parallel group, from the ranks' recorded grid coordinates (RankSummary tp, pp,
// dp: a group of one kind holds the ranks that agree on the other two), and the pairs of a pipeline's
// first and last rank that all-reduce tied weights (collective records with a peer).
#include <string>
#include <vector>

#include "bench/results/records.hpp"

namespace pipebench::bench {

struct ProcessGroup {
  std::string name;  // "<kind>:<lowest rank>", e.g. "pp:0", "tp:2"; a tied pair "pp:0-3"
  std::string desc;  // "pipeline parallel", "tensor parallel", "data parallel", "tied weights"
  std::vector<int> ranks;  // world ranks, ascending
};

class ProcessGroups {
 public:
  explicit ProcessGroups(const RunResult& run);
  const std::vector<ProcessGroup>& all() const { return groups_; }
  // The group communication `c` ran in (on its rank); Error when the run's ranks do not hold it.
  const ProcessGroup& of(const CommRecord& c) const;
  int world_size() const { return world_; }

 private:
  const ProcessGroup& find(const std::string& name) const;
  std::vector<ProcessGroup> groups_;
  std::vector<RankSummary> ranks_;  // by global rank
  int world_ = 0;
  int ep_ = 1;  // the run's expert-parallel size (config expert_parallel)
};

// A communication's element type and count as PyTorch's traces give them: the run's precision for
// the transformer (fp32 "Float", fp64 "Double"), else bytes ("Byte").
struct Elements {
  std::string dtype;
  std::int64_t size = 1;  // bytes per element
};
Elements elements_of(const RunResult& run);

}  // namespace pipebench::bench
