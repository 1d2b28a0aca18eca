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

// The same figures fed one action at a time, each rank's actions in time order (as the simulator
// produces them), so that no timeline has to be kept: compute_metrics() on those actions gives the
// same bits.
class MetricsBuilder {
 public:
  explicit MetricsBuilder(int p);
  void add(int rank, Kind kind, double start, double end) { acc_[rank].add(kind, start, end); }
  Metrics finish() const;

 private:
  struct RankAcc {
    double busy = 0, first_start = 0, last_end = 0, last_start = 0;
    int held = 0, peak = 0;
    bool any = false;
    void add(Kind kind, double start, double end);
  };
  friend Metrics compute_metrics(const Schedule& s, const Timeline& ops);
  std::vector<RankAcc> acc_;
};

inline void MetricsBuilder::RankAcc::add(Kind kind, double start, double end) {
  busy += end - start;
  if (!any) first_start = start;
  any = true;
  last_start = start;
  last_end = last_end < end ? end : last_end;
  // An action's activations live from its F to the part of its backward that ends them: B, or W when
  // the backward is split (I does not). Sequential on a rank: an action's acquire follows every
  // earlier release, so releases at the same instant as a new forward never count twice.
  if (kind == Kind::F || kind == Kind::FB) {
    ++held;
    peak = peak < held ? held : peak;
  }
  if (kind == Kind::B || kind == Kind::W || kind == Kind::FB) --held;
}

}  // namespace pipebench::analysis
