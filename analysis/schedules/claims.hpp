#pragma once
// Internal to the schedules' figures: the per-chunk times the formulas are written in and the helpers
// that turn a formula and its condition into a Claim (docs/formulas.md, "Bubble and memory per schedule").
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/formulas.hpp"

namespace pipebench::analysis::schedules {

bool same(double a, double b);  // equal up to rounding
bool le(double a, double b);    // a <= b up to rounding

// The parameters with per-chunk times (docs/formulas.md's F, B, W, I, F&B are per chunk).
struct Ctx {
  const FormulaParams& q;
  int p, m, v, g;
  double F, B, W, I, FB;
  double busy;              // every rank's busy time when its F&B pairs (if any) cost F + B
  std::string time_reason;  // why no time formula can hold (non-uniform stages, p2p), or empty

  explicit Ctx(const FormulaParams& params);
  std::string chunk_times() const;  // "F=1, I=1, W=1 per chunk"
};

template <class T>
Claim<T> claim(std::optional<T> value, std::string formula, std::string condition, std::string reason = {}) {
  Claim<T> c;
  c.formula = std::move(formula);
  c.condition = std::move(condition);
  if (value && reason.empty())
    c.value = std::move(value);
  else
    c.reason = reason.empty() ? "formula does not apply" : std::move(reason);
  return c;
}

// Sets idle, makespan and bubble fraction from an idle time that every rank has (T = busy + idle).
// `why_not` is the first unmet schedule-specific condition, or empty.
void from_rank_idle(AnalyticFigures& a, const Ctx& c, double idle, const std::string& idle_formula,
                    std::string condition, std::string why_not);

std::vector<int> per_rank(int p, const std::function<int(int)>& f);

// "needs m >= 2p-1 (m=3, p=4)" when m < min_m, else empty.
std::string needs_m(const Ctx& c, int min_m, const char* rule);

inline const char* const kUniform = "uniform stages, p2p = 0";

}  // namespace pipebench::analysis::schedules
