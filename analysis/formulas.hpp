#pragma once
// The analytic figures of a schedule (docs/formulas.md, "Bubble and memory per schedule"), each with the
// condition under which it holds. A figure whose condition fails carries no value but the reason, so a
// caller never prints a number the schedule does not have. Each schedule's formulas are in its file in
// analysis/schedules/, named by its catalog row (analysis/catalog.hpp); docs/metrics.md states every
// formula, its units and conditions; tests/analysis/test_formula_grid.cpp checks each one against simulate().
#include <optional>
#include <string>
#include <vector>

namespace pipebench::analysis {

// What the formulas need. Times are for one rank's whole share of layers (docs/design.md "Vocabulary"), as given to
// uniform_costs(): a chunk takes tf/v, tb/v, tw/v, and an overlapped F&B pair t_overlap/v.
struct FormulaParams {
  std::string schedule;
  int p = 1;
  int m = 1;
  int v = 1;      // chunks per rank, resolved (not 0)
  int group = 0;  // interleaved micro-batch group; 0 = the default, p
  double tf = 1;
  double tb = 2;
  double tw = 1;
  double t_overlap = -1;        // < 0: tf + tb
  bool uniform_stages = true;   // false when per-stage cost multipliers are given
  double p2p = 0;               // point-to-point time; the time formulas assume 0
};

// One analytic figure: a value where the formula holds, otherwise the reason it does not.
template <class T>
struct Claim {
  std::optional<T> value;
  std::string formula;    // the formula as printed in docs/metrics.md, e.g. "(p-1)(F+B)"
  std::string condition;  // when it holds, e.g. "uniform stages, p2p = 0"
  std::string reason;     // empty when value is set
};

// The per-rank measure the literature states for a schedule's bubble (docs/design.md "Metrics").
enum class IdleMeasure {
  Idle,           // idle_r = T - busy_r, the same on every rank
  MaxIdle,        // max over ranks of idle_r
  SpanBubble,     // span bubble of every rank, (last end - first start) - busy_r
  MaxSpanBubble,  // max over ranks of the span bubble
};
// "idle per rank", "max rank idle", "span bubble per rank", "max span bubble"
const char* idle_measure_name(IdleMeasure m);

struct AnalyticFigures {
  std::string source;  // the paper or reference implementation the formulas come from
  Claim<double> makespan;
  Claim<double> bubble_fraction;  // 1 - sum(busy) / (p * T)
  IdleMeasure idle_measure = IdleMeasure::Idle;
  Claim<double> idle;  // in the measure above
  Claim<std::vector<int>> peak_inflight;  // per rank, in chunks (one stage's activations of one micro-batch)
};

// True when the schedule's catalog row has figures.
bool has_formula(const std::string& schedule);

// Figures for a schedule; a schedule without a row (an imported one) gets figures whose reasons say so.
// Throws UsageError for p, m, v < 1 or bad times (the same rules as uniform_costs()).
AnalyticFigures analytic_figures(const FormulaParams& q);

}  // namespace pipebench::analysis
