// ZB-V (Qi et al. 2024, "Pipeline parallelism with controllable memory", arXiv 2401.10241 section 6):
// two chunks per rank in a V, split backward, W used to fill what would be bubbles.
//
// The order is the one torch.distributed.pipelining's ScheduleZBVZeroBubble builds
// (_calculate_single_rank_operations, pytorch/pytorch torch/distributed/pipelining/schedules.py),
// re-derived here: per rank r, with chunk 0 = stage r and chunk 1 = stage 2p-1-r,
//   warm-up   2(p-r)-1 F0; r x (F1 F0); p-r x (F1 I1 W1)
//   steady    repeat (F0 while forwards remain) I0 W0 F1 I1 W1 until both chunks did every forward
//   cool-down r x (I0 I1) with their W deferred; p-r x (I0 W0), W0 taking the oldest pending I0;
//             then the deferred W1, then the remaining W0
// Like torch, the order is built for n = max(2p-1, m) micro-batches and the actions of micro-batches
// >= m are dropped (torch turns them into idle slots), so any m >= 1 works. torch also starts rank r
// with r idle slots; here the replay waits for the inputs instead, which gives the same times.
//
// Building the dropped micro-batches one by one would cost O(p^2) for m < 2p-1 (days for p = 8e6 and
// m = 1): each repetition of a pattern runs only while one of its actions can still be kept, and the
// rest only advances the counters, so the work is O(p + actions).
#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "analysis/schedules/claims.hpp"
#include "analysis/schedules/families.hpp"

namespace pipebench::analysis::schedules {

namespace {

enum Op : int { F0, F1, I0, I1, W0, W1 };

// One rank's counters. Every I of a chunk is followed, in I order, by its W (the oldest I still
// without its W), so the pending W of chunk c are the micro-batches [w(c), i(c)) and a W takes w(c).
class ZbvRank {
 public:
  ZbvRank(std::vector<Action>& out, int m, int stage0, int stage1) : out_(out), m_(m), stage_{stage0, stage1} {}

  // Runs the pattern `times` times in a row.
  void repeat(std::int64_t times, std::initializer_list<Op> ops) {
    if (times <= 0) return;
    for (; times > 0 && live(ops); --times)
      for (Op op : ops) run(op);
    for (Op op : ops) count_[op] += times;  // nothing of the rest is kept: micro-batches >= m
  }
  std::int64_t count(Op op) const { return count_[op]; }

 private:
  static constexpr Kind kKind[6] = {Kind::F, Kind::F, Kind::I, Kind::I, Kind::W, Kind::W};
  bool live(std::initializer_list<Op> ops) const {
    for (Op op : ops)
      if (count_[op] < m_) return true;
    return false;
  }
  void run(Op op) {
    const std::int64_t mb = count_[op]++;
    if (mb < m_) out_.push_back(Action::make(kKind[op], stage_[op % 2], static_cast<int>(mb)));
  }

  std::vector<Action>& out_;
  std::int64_t m_;
  int stage_[2];
  std::int64_t count_[6] = {0, 0, 0, 0, 0, 0};
};

}  // namespace

void zbv(const ScheduleParams& q, Schedule& s) {
  const std::int64_t p = q.p;
  const std::int64_t n = std::max<std::int64_t>(2 * p - 1, q.m);
  for (int r = 0; r < q.p; ++r) {
    s.actions[r].reserve(static_cast<std::size_t>(6) * q.m);  // F, I and W of m micro-batches on two stages
    ZbvRank k(s.actions[r], q.m, r, static_cast<int>(2 * p - 1 - r));
    k.repeat(2 * (p - r) - 1, {F0});
    k.repeat(r, {F1, F0});
    k.repeat(p - r, {F1, I1, W1});
    // Steady state: (F0 while forwards remain) I0 W0 F1 I1 W1, until both chunks did every forward.
    k.repeat(n - k.count(F0), {F0, I0, W0, F1, I1, W1});
    k.repeat(n - k.count(F1), {I0, W0, F1, I1, W1});
    k.repeat(r, {I0, I1});  // their W deferred
    k.repeat(p - r, {I0, W0});
    k.repeat(k.count(I1) - k.count(W1), {W1});
    k.repeat(k.count(I0) - k.count(W0), {W0});
  }
}

AnalyticFigures zbv_figures(const FormulaParams& q) {
  const Ctx c(q);
  AnalyticFigures a;
  a.source = "ZB-V (Qi et al. 2024, Pipeline Parallelism with Controllable Memory), torch ScheduleZBVZeroBubble";
  const std::string cond = std::string(kUniform) + ", m >= 2p-1, F = I = W per chunk";
  std::string why = c.time_reason;
  if (why.empty()) why = needs_m(c, 2 * c.p - 1, "m >= 2p-1");
  if (why.empty() && (!same(c.F, c.I) || !same(c.I, c.W))) why = "needs F = I = W per chunk (" + c.chunk_times() + ")";
  a.idle_measure = IdleMeasure::SpanBubble;
  a.idle = claim<double>(0.0, "0", cond, why);
  // Rank r starts after r chunk forwards and then works without a gap, so every rank idles (p-1)F.
  const double T = c.busy + (c.p - 1) * c.F;
  a.makespan = claim<double>(T, "m(tf+tb) + (p-1)F", cond, why);
  a.bubble_fraction = claim<double>((c.p - 1) * c.F / T, "(p-1)F / T", cond, why);
  // The chunk-0 forwards of the warm-up plus the chunk-1 forwards before the first W: 2p when
  // m >= 2p-1.
  a.peak_inflight = claim<std::vector<int>>(
      per_rank(c.p, [&](int r) { return std::min(c.m, 2 * c.p - 1 - r) + std::min(c.m, r + 1); }),
      "min(m, 2p-1-r) + min(m, r+1)", "always");
  return a;
}

}  // namespace pipebench::analysis::schedules
