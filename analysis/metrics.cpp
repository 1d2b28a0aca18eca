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

MetricsBuilder::MetricsBuilder(int p) : acc_(p) {}

Metrics MetricsBuilder::finish() const {
  const int p = static_cast<int>(acc_.size());
  Metrics m;
  m.ranks.resize(p);
  double total_busy = 0;
  for (int r = 0; r < p; ++r) {
    const RankAcc& a = acc_[r];
    RankMetrics& rm = m.ranks[r];
    rm.rank = r;
    rm.busy = a.busy;
    rm.peak_inflight = a.peak;
    rm.span_bubble = a.any ? (a.last_end - a.first_start) - rm.busy : 0;
    m.makespan = std::max(m.makespan, a.last_end);
    total_busy += rm.busy;
  }
  for (auto& rm : m.ranks) rm.idle = m.makespan - rm.busy;
  m.bubble_fraction = m.makespan > 0 ? 1.0 - total_busy / (p * m.makespan) : 0.0;
  return m;
}

Metrics compute_metrics(const Schedule& s, const Timeline& ops) {
  const int p = s.p;
  // Fast path, one pass: the simulator emits each rank's ops in time order, and so do most recorders.
  MetricsBuilder builder(p);
  auto& acc = builder.acc_;
  bool in_order = true;
  for (const auto& op : ops) {
    auto& a = acc[op.rank];
    if (a.any && op.start < a.last_start) {
      in_order = false;
      break;
    }
    a.add(op.action.kind, op.start, op.end);
  }
  if (in_order) return builder.finish();

  // Otherwise group by rank keeping the given order (a counting sort) and sort each rank by start.
  std::vector<std::size_t> begin(p + 1, 0);
  for (const auto& op : ops) ++begin[op.rank + 1];
  for (int r = 0; r < p; ++r) begin[r + 1] += begin[r];
  std::vector<const TimedOp*> by_rank(ops.size());
  {
    std::vector<std::size_t> fill(begin.begin(), begin.end() - 1);
    for (const auto& op : ops) by_rank[fill[op.rank]++] = &op;
  }
  acc.assign(p, MetricsBuilder::RankAcc{});
  for (int r = 0; r < p; ++r) {
    const auto first = by_rank.begin() + static_cast<std::ptrdiff_t>(begin[r]);
    const auto last = by_rank.begin() + static_cast<std::ptrdiff_t>(begin[r + 1]);
    std::stable_sort(first, last, [](const TimedOp* a, const TimedOp* b) { return a->start < b->start; });
    for (auto it = first; it != last; ++it) acc[r].add((*it)->action.kind, (*it)->start, (*it)->end);
  }
  return builder.finish();
}

}  // namespace pipebench::analysis
