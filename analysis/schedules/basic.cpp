// GPipe and 1F1B: one stage per rank, full backwards.
#include <algorithm>

#include "analysis/schedules/claims.hpp"
#include "analysis/schedules/families.hpp"

namespace pipebench::analysis::schedules {

// All forwards, then all backwards in micro-batch order (torch ScheduleGPipe).
void gpipe(const ScheduleParams& q, Schedule& s) {
  for (int r = 0; r < q.p; ++r) {
    auto& list = s.actions[r];
    list.reserve(static_cast<std::size_t>(2) * q.m);  // exact: grown by doubling it held up to twice that
    for (int k = 0; k < q.m; ++k) list.push_back(Action::make(Kind::F, r, k));
    for (int k = 0; k < q.m; ++k) list.push_back(Action::make(Kind::B, r, k));
  }
}

// Rank r runs min(p-r, m) forwards, then alternates one backward and one forward, then drains the
// backwards (Megatron's warm-up of p-r-1 forwards followed by 1F1B starting with F is the same list;
// torch Schedule1F1B too). Peak in-flight on rank r: min(p-r, m).
void one_f_one_b(const ScheduleParams& q, Schedule& s) {
  for (int r = 0; r < q.p; ++r) {
    auto& list = s.actions[r];
    list.reserve(static_cast<std::size_t>(2) * q.m);
    const int warm = std::min(q.p - r, q.m);
    int f = 0, b = 0;
    while (f < warm) list.push_back(Action::make(Kind::F, r, f++));
    while (b < q.m) {
      list.push_back(Action::make(Kind::B, r, b++));
      if (f < q.m) list.push_back(Action::make(Kind::F, r, f++));
    }
  }
}

AnalyticFigures gpipe_figures(const FormulaParams& q) {
  const Ctx c(q);
  AnalyticFigures a;
  a.source = "GPipe (Huang et al. 2019)";
  from_rank_idle(a, c, (c.p - 1) * (c.F + c.B), "(p-1)(F+B)", kUniform, "");
  a.peak_inflight = claim<std::vector<int>>(per_rank(c.p, [&](int) { return c.m; }), "m", "always");
  return a;
}

AnalyticFigures one_f_one_b_figures(const FormulaParams& q) {
  const Ctx c(q);
  AnalyticFigures a;
  a.source = "1F1B / PipeDream-Flush (Narayanan et al. 2021)";
  from_rank_idle(a, c, (c.p - 1) * (c.F + c.B), "(p-1)(F+B)", kUniform, "");
  a.peak_inflight =
      claim<std::vector<int>>(per_rank(c.p, [&](int r) { return std::min(c.p - r, c.m); }), "min(p-r, m)", "always");
  return a;
}

double fill_drain_idle(int p, double F, double B, double /*W*/) { return (p - 1) * (F + B); }

}  // namespace pipebench::analysis::schedules
