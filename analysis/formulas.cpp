#include "analysis/formulas.hpp"

#include "analysis/catalog.hpp"
#include "analysis/error.hpp"
#include "analysis/schedules/claims.hpp"
#include "analysis/text.hpp"

namespace pipebench::analysis {

const char* idle_measure_name(IdleMeasure m) {
  switch (m) {
    case IdleMeasure::Idle: return "idle per rank";
    case IdleMeasure::MaxIdle: return "max rank idle";
    case IdleMeasure::SpanBubble: return "span bubble per rank";
    case IdleMeasure::MaxSpanBubble: return "max span bubble";
  }
  return "?";
}

namespace {

void check(const FormulaParams& q) {
  auto at_least_one = [](int x, const char* what) {
    if (x < 1)
      throw UsageError(std::string(what) + " = " + std::to_string(x) + " is not allowed: need " + what + " >= 1");
  };
  at_least_one(q.p, "p");
  at_least_one(q.m, "m");
  at_least_one(q.v, "v");
  if (!(q.tf > 0) || !(q.tb > 0))
    throw UsageError("tf = " + num(q.tf) + ", tb = " + num(q.tb) + " are not allowed: times must be > 0");
  if (!(q.tw >= 0 && q.tw < q.tb))
    throw UsageError("tw = " + num(q.tw) + " is not allowed: must be in [0, tb = " + num(q.tb) + ")");
}

}  // namespace

bool has_formula(const std::string& schedule) {
  const ScheduleRow* row = find_schedule(schedule);
  return row && row->figures;
}

AnalyticFigures analytic_figures(const FormulaParams& q) {
  check(q);
  const ScheduleRow* row = find_schedule(q.schedule);
  if (row && row->figures) return row->figures(q);
  AnalyticFigures a;
  const std::string why = "no analytic formula for schedule '" + q.schedule + "'";
  a.makespan = schedules::claim<double>(std::nullopt, "", "", why);
  a.bubble_fraction = a.makespan;
  a.idle = a.makespan;
  a.peak_inflight = schedules::claim<std::vector<int>>(std::nullopt, "", "", why);
  return a;
}

}  // namespace pipebench::analysis
