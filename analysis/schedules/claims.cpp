#include "analysis/schedules/claims.hpp"

#include <algorithm>
#include <cmath>

#include "analysis/catalog.hpp"
#include "analysis/text.hpp"

namespace pipebench::analysis::schedules {

bool same(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); }

bool le(double a, double b) { return a <= b || same(a, b); }

Ctx::Ctx(const FormulaParams& params)
    : q(params), p(params.p), m(params.m), v(params.v), g(params.group > 0 ? params.group : default_group(params.p)) {
  F = q.tf / v;
  B = q.tb / v;
  W = q.tw / v;
  I = B - W;
  FB = (q.t_overlap < 0 ? q.tf + q.tb : q.t_overlap) / v;
  busy = m * (q.tf + q.tb);
  if (!q.uniform_stages)
    time_reason = "stages are not uniform (stage cost multipliers given)";
  else if (q.p2p > 0)
    time_reason = "p2p time = " + num(q.p2p) + " > 0 (the formula assumes free transfers)";
}

std::string Ctx::chunk_times() const { return "F=" + num(F) + ", I=" + num(I) + ", W=" + num(W) + " per chunk"; }

void from_rank_idle(AnalyticFigures& a, const Ctx& c, double idle, const std::string& idle_formula,
                    std::string condition, std::string why_not) {
  if (!c.time_reason.empty()) why_not = c.time_reason;
  const double T = c.busy + idle;
  a.idle_measure = IdleMeasure::Idle;
  a.idle = claim<double>(idle, idle_formula, condition, why_not);
  a.makespan = claim<double>(T, "m(tf+tb) + " + idle_formula, condition, why_not);
  a.bubble_fraction = claim<double>(T > 0 ? idle / T : 0.0, idle_formula + " / T", std::move(condition),
                                    std::move(why_not));
}

std::vector<int> per_rank(int p, const std::function<int(int)>& f) {
  std::vector<int> v(p);
  for (int r = 0; r < p; ++r) v[r] = f(r);
  return v;
}

std::string needs_m(const Ctx& c, int min_m, const char* rule) {
  if (c.m >= min_m) return "";
  return std::string("needs ") + rule + " (m=" + std::to_string(c.m) + ", p=" + std::to_string(c.p) + ")";
}

}  // namespace pipebench::analysis::schedules
