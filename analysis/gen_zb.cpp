// The handcrafted zero-bubble schedules ZB-H1 and ZB-H2 (Qi et al., "Zero Bubble Pipeline
// Parallelism", ICLR 2024, section 3.1 and Figure 3): one stage per rank, the backward split into I
// (input gradient, on the critical path) and W (weight gradient, free to move into bubbles).
#include "analysis/generators_impl.hpp"

namespace pipebench::analysis::detail {

namespace {

// In the steady state of Figure 3, rank r repeats the triple (F x, I x-k(p-1-r), W x-k(p-1)): k = 1
// for ZB-H1, k = 2 for ZB-H2 (twice the warm-up forwards). Warm-up and cool-down are the same triples
// with the out-of-range micro-batches left out, which gives Figure 3's lists exactly (p = 4, m = 8):
// ZB-H1 rank 0 runs F0..F3 then (I0 W0 F4) ..., the last rank (F0 I0) ... (F3 I3 W0) (F4 I4 W1) ...;
// ZB-H2 rank 0 runs F0..F6 then I0 W0 F7 I1 W1 .... For ZB-H1 this is also what torch's
// ScheduleInterleavedZeroBubble generates with one stage per rank (warm-up p-r-1, then F, I and,
// from the (r+1)-th I on, the oldest W).
// An activation is held from F to W, so the peak in flight is min(m, k(p-1)+1) on every rank.
Schedule handcrafted_zero_bubble(const char* name, const ScheduleParams& q, int k) {
  const int p = q.p, m = q.m;
  Schedule s = looped_layout(name, p, m, 1);
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
  return s;
}

}  // namespace

Schedule zb_h1(const ScheduleParams& q) { return handcrafted_zero_bubble("zb-h1", q, 1); }
Schedule zb_h2(const ScheduleParams& q) { return handcrafted_zero_bubble("zb-h2", q, 2); }

}  // namespace pipebench::analysis::detail
