// The handcrafted zero-bubble schedules ZB-H1 and ZB-H2 (Qi et al., "Zero Bubble Pipeline
// Parallelism", ICLR 2024, section 3.1 and Figure 3): one stage per rank, the backward split into I
// (input gradient, on the critical path) and W (weight gradient, free to move into bubbles).
#include <algorithm>

#include "analysis/schedules/claims.hpp"
#include "analysis/schedules/families.hpp"

namespace pipebench::analysis::schedules {

namespace {

// In the steady state of Figure 3, rank r repeats the triple (F x, I x-k(p-1-r), W x-k(p-1)): k = 1
// for ZB-H1, k = 2 for ZB-H2 (twice the warm-up forwards). Warm-up and cool-down are the same triples
// with the out-of-range micro-batches left out, which gives Figure 3's lists exactly (p = 4, m = 8):
// ZB-H1 rank 0 runs F0..F3 then (I0 W0 F4) ..., the last rank (F0 I0) ... (F3 I3 W0) (F4 I4 W1) ...;
// ZB-H2 rank 0 runs F0..F6 then I0 W0 F7 I1 W1 .... For ZB-H1 this is also what torch's
// ScheduleInterleavedZeroBubble generates with one stage per rank (warm-up p-r-1, then F, I and,
// from the (r+1)-th I on, the oldest W).
// An activation is held from F to W, so the peak in flight is min(m, k(p-1)+1) on every rank.
void handcrafted_zero_bubble(const ScheduleParams& q, Schedule& s, int k) {
  const int p = q.p, m = q.m;
  for (int r = 0; r < p; ++r) {
    auto& list = s.actions[r];
    list.reserve(static_cast<std::size_t>(3) * m);
    const int i_lag = k * (p - 1 - r), w_lag = k * (p - 1);
    for (int x = 0; x < m + w_lag; ++x) {
      if (x < m) list.push_back(Action::make(Kind::F, r, x));
      if (x >= i_lag && x - i_lag < m) list.push_back(Action::make(Kind::I, r, x - i_lag));
      if (x >= w_lag) list.push_back(Action::make(Kind::W, r, x - w_lag));
    }
  }
}

}  // namespace

void zb_h1(const ScheduleParams& q, Schedule& s) { handcrafted_zero_bubble(q, s, 1); }
void zb_h2(const ScheduleParams& q, Schedule& s) { handcrafted_zero_bubble(q, s, 2); }

AnalyticFigures zb_h1_figures(const FormulaParams& q) {
  const Ctx c(q);
  AnalyticFigures a;
  a.source = "ZB-H1 (Qi et al. 2023, Zero Bubble Pipeline Parallelism)";
  // With W > F the last rank still starts (p-1)F late; with W > I the deferred W cannot all fit the
  // cool-down (docs/schedules.md, checked by simulation).
  std::string why = needs_m(c, c.p, "m >= p");
  if (why.empty() && !(le(c.W, c.F) && le(c.W, c.I))) why = "needs W <= F and W <= I (" + c.chunk_times() + ")";
  from_rank_idle(a, c, (c.p - 1) * (c.F + c.B - 2 * c.W), "(p-1)(F+B-2W)",
                 std::string(kUniform) + ", m >= p, W <= F, W <= I", why);
  a.peak_inflight = claim<std::vector<int>>(per_rank(c.p, [&](int) { return std::min(c.p, c.m); }), "min(p, m)",
                                            "always");
  return a;
}

AnalyticFigures zb_h2_figures(const FormulaParams& q) {
  const Ctx c(q);
  AnalyticFigures a;
  a.source = "ZB-H2 (Qi et al. 2023, Zero Bubble Pipeline Parallelism)";
  const std::string cond = std::string(kUniform) + ", m >= 2p-1, W <= F, 2W <= F+I";
  std::string why = c.time_reason;
  if (why.empty()) why = needs_m(c, 2 * c.p - 1, "m >= 2p-1");
  if (why.empty() && !(le(c.W, c.F) && le(2 * c.W, c.F + c.I)))
    why = "needs W <= F and 2W <= F+I (" + c.chunk_times() + ")";
  // The paper's (p-1)(F+B-3W) is rank 0's span bubble (rank r: (p-1-r)(F+B-3W)): its parallelogram has
  // no gap once started. Counted from the common start, the last rank still waits p-1 forwards.
  a.idle_measure = IdleMeasure::MaxSpanBubble;
  a.idle = claim<double>((c.p - 1) * (c.F + c.B - 3 * c.W), "(p-1)(F+B-3W)", cond, why);
  const double idle = (c.p - 1) * std::max(c.F, c.F + c.B - 3 * c.W);
  const double T = c.busy + idle;
  a.makespan = claim<double>(T, "m(tf+tb) + (p-1)max(F, F+B-3W)", cond, why);
  a.bubble_fraction = claim<double>(idle / T, "(p-1)max(F, F+B-3W) / T", cond, why);
  a.peak_inflight = claim<std::vector<int>>(per_rank(c.p, [&](int) { return std::min(2 * c.p - 1, c.m); }),
                                            "min(2p-1, m)", "always");
  return a;
}

// 1F1B's fill and drain less the two W per step that fill it.
double w_filled_idle(int p, double F, double B, double W) { return (p - 1) * (F + B - 2 * W); }

// Only the fill of p-1 forwards remains: ZB-H2's and ZB-V's deeper warm-up hides the drain.
double forward_fill_idle(int p, double F, double /*B*/, double /*W*/) { return (p - 1) * F; }

}  // namespace pipebench::analysis::schedules
