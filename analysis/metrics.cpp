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

// One rank's running figures, fed its ops in time order.
struct RankAcc {
  double busy = 0, first_start = 0, last_end = 0, last_start = 0;
  int held = 0, peak = 0;
  bool any = false;

  void add(const TimedOp& op) {
    busy += op.end - op.start;
    if (!any) first_start = op.start;
    any = true;
    last_start = op.start;
    last_end = std::max(last_end, op.end);
    // Sequential on a rank: an action's acquire follows every earlier release, so releases at the
    // same instant as a new forward never count twice.
    if (acquires(op.action.kind)) peak = std::max(peak, ++held);
    if (releases(op.action.kind)) --held;
  }
};

Metrics finish(const std::vector<RankAcc>& acc) {
  const int p = static_cast<int>(acc.size());
  Metrics m;
  m.ranks.resize(p);
  double total_busy = 0;
  for (int r = 0; r < p; ++r) {
    RankMetrics& rm = m.ranks[r];
    rm.rank = r;
    rm.busy = acc[r].busy;
    rm.peak_inflight = acc[r].peak;
    rm.span_bubble = acc[r].any ? (acc[r].last_end - acc[r].first_start) - rm.busy : 0;
    m.makespan = std::max(m.makespan, acc[r].last_end);
    total_busy += rm.busy;
  }
  for (auto& rm : m.ranks) rm.idle = m.makespan - rm.busy;
  m.bubble_fraction = m.makespan > 0 ? 1.0 - total_busy / (p * m.makespan) : 0.0;
  return m;
}

}  // namespace

Metrics compute_metrics(const Schedule& s, const Timeline& ops) {
  const int p = s.p;
  // Fast path, one pass: the simulator emits each rank's ops in time order, and so do most recorders.
  std::vector<RankAcc> acc(p);
  bool in_order = true;
  for (const auto& op : ops) {
    RankAcc& a = acc[op.rank];
    if (a.any && op.start < a.last_start) {
      in_order = false;
      break;
    }
    a.add(op);
  }
  if (in_order) return finish(acc);

  // Otherwise group by rank keeping the given order (a counting sort) and sort each rank by start.
  std::vector<std::size_t> begin(p + 1, 0);
  for (const auto& op : ops) ++begin[op.rank + 1];
  for (int r = 0; r < p; ++r) begin[r + 1] += begin[r];
  std::vector<const TimedOp*> by_rank(ops.size());
  {
    std::vector<std::size_t> fill(begin.begin(), begin.end() - 1);
    for (const auto& op : ops) by_rank[fill[op.rank]++] = &op;
  }
  acc.assign(p, RankAcc{});
  for (int r = 0; r < p; ++r) {
    const auto first = by_rank.begin() + static_cast<std::ptrdiff_t>(begin[r]);
    const auto last = by_rank.begin() + static_cast<std::ptrdiff_t>(begin[r + 1]);
    std::stable_sort(first, last, [](const TimedOp* a, const TimedOp* b) { return a->start < b->start; });
    for (auto it = first; it != last; ++it) acc[r].add(**it);
  }
  return finish(acc);
}

}  // namespace pipebench::analysis
