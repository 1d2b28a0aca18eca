#pragma once
// The metrics of docs/design.md ("Metrics"), one definition each, computed from a timeline of one step.
#include <vector>

#include "analysis/timeline.hpp"

namespace pipebench::analysis {

struct RankMetrics {
  int rank = 0;
  double busy = 0;         // sum of the rank's compute-action durations
  double idle = 0;         // makespan - busy
  double span_bubble = 0;  // (last end - first start) - busy
  int peak_inflight = 0;   // peak (chunk, micro-batch) pairs held, from F start to last backward part end
};

struct Metrics {
  double makespan = 0;         // step start (t = 0) to the end of the last action on any rank
  double bubble_fraction = 0;  // 1 - sum(busy) / (p * makespan)
  std::vector<RankMetrics> ranks;
  double max_idle() const;
  double max_span_bubble() const;
};

// `ops` holds every action of one step of `s` (any order), times relative to the step's start.
Metrics compute_metrics(const Schedule& s, const Timeline& ops);

}  // namespace pipebench::analysis
