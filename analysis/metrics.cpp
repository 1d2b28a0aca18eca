#include "analysis/metrics.hpp"

#include <algorithm>

namespace pipebench::analysis {

double Metrics::max_idle() const {
  double v = 0;
  for (const auto& r : ranks) v = std::max(v, r.idle);
  return v;
}

double Metrics::max_span_bubble() const {
  double v = 0;
  for (const auto& r : ranks) v = std::max(v, r.span_bubble);
  return v;
}

namespace {

// Does this action end the life of its (chunk, micro-batch) activations? B does, and W when the
// backward is split; I does not.
bool releases(Kind k) { return k == Kind::B || k == Kind::W || k == Kind::FB; }
bool acquires(Kind k) { return k == Kind::F || k == Kind::FB; }

}  // namespace

Metrics compute_metrics(const Schedule& s, const Timeline& ops) {
  const int p = s.p;
  // Group by rank keeping the given order (a counting sort), then make sure each rank's ops are in time
  // order: the simulator already emits them so, measured records may not be.
  std::vector<std::size_t> begin(p + 1, 0);
  for (const auto& op : ops) ++begin[op.rank + 1];
  for (int r = 0; r < p; ++r) begin[r + 1] += begin[r];
  std::vector<const TimedOp*> by_rank(ops.size());
  {
    std::vector<std::size_t> fill(begin.begin(), begin.end() - 1);
    for (const auto& op : ops) by_rank[fill[op.rank]++] = &op;
  }
  Metrics m;
  m.ranks.resize(p);
  double total_busy = 0;
  for (int r = 0; r < p; ++r) {
    const auto first = by_rank.begin() + static_cast<std::ptrdiff_t>(begin[r]);
    const auto last = by_rank.begin() + static_cast<std::ptrdiff_t>(begin[r + 1]);
    auto earlier = [](const TimedOp* a, const TimedOp* b) { return a->start < b->start; };
    if (!std::is_sorted(first, last, earlier)) std::stable_sort(first, last, earlier);
    RankMetrics& rm = m.ranks[r];
    rm.rank = r;
    int held = 0;
    double first_start = 0, last_end = 0;
    for (auto it = first; it != last; ++it) {
      const TimedOp& op = **it;
      rm.busy += op.end - op.start;
      if (it == first) first_start = op.start;
      last_end = std::max(last_end, op.end);
      // Sequential on a rank: an action's acquire follows every earlier release, so releases at the
      // same instant as a new forward never count twice.
      if (acquires(op.action.kind)) rm.peak_inflight = std::max(rm.peak_inflight, ++held);
      if (releases(op.action.kind)) --held;
    }
    rm.span_bubble = first == last ? 0 : (last_end - first_start) - rm.busy;
    m.makespan = std::max(m.makespan, last_end);
    total_busy += rm.busy;
  }
  for (auto& rm : m.ranks) rm.idle = m.makespan - rm.busy;
  m.bubble_fraction = m.makespan > 0 ? 1.0 - total_busy / (p * m.makespan) : 0.0;
  return m;
}

}  // namespace pipebench::analysis
