// The closed-form screen of one layout (docs/plan.md "How the search is fast"): lower bounds of its
// step time and memory from the stage plan, and the busiest rank's work that evaluate() shares.
#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/catalog.hpp"
#include "analysis/formulas.hpp"
#include "analysis/plan/model.hpp"
#include "analysis/plan/stage_work.hpp"

namespace pipebench::analysis::plan {

RankWork busiest(const Layout& l, const StagePlan& sp) {
  const ScheduleRow& row = schedule_row(l.schedule);
  thread_local std::vector<RankWork> w;  // kept per thread: the screen's hot loop
  w.assign(l.p, RankWork{});
  const double mb = double(sp.m) / sp.pipes;
  const int S = sp.stages_per_pipe;
  StageRanks ranks(row, l.p);
  for (int c = 0; c < sp.pipes; ++c)
    for (int k = 0; k < S; ++k) {
      RankWork& x = w[ranks.next()];
      x.busy += mb * (sp.f[k] + sp.b[k]);
      x.compute += mb * (sp.fc[k] + sp.bc[k]);
      x.backward += sp.b[k];
    }
  return *std::max_element(w.begin(), w.end(), [](const RankWork& a, const RankWork& b) { return a.busy < b.busy; });
}

// With bucketed overlap the reduction hides behind the last micro-batch's backward (ZeRO-3's gathers,
// spread over every micro-batch, behind all the rank's work); without it, it all follows the backward.
double dp_exposed(const MachineSpec& mc, const Layout& l, const StagePlan& sp, const RankWork& w) {
  if (!l.dp_overlap) return sp.dp_time;
  return std::max(0.0, sp.dp_time - mc.dp_overlap * (l.zero >= 3 ? w.busy : w.backward));
}

namespace {

// The formula's peak in-flight chunks of rank 0, cached: many configurations share (schedule, p, m, v).
// Keyed by the catalog's row, which lives as long as the program.
int formula_peak(const ScheduleRow& row, int p, int m, int v) {
  static std::mutex mu;
  static std::map<std::tuple<const ScheduleRow*, int, int, int>, int> cache;
  const auto key = std::make_tuple(&row, p, m, v);
  const std::string& schedule = row.name;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  int peak = 1;
  if (has_formula(schedule)) {
    FormulaParams q;
    q.schedule = schedule, q.p = p, q.m = m, q.v = v;
    const AnalyticFigures a = analytic_figures(q);
    if (a.peak_inflight.value)
      for (int x : *a.peak_inflight.value) peak = std::max(peak, x);
  }
  std::lock_guard<std::mutex> lock(mu);
  if (cache.size() > 100000) cache.clear();
  cache.emplace(key, peak);
  return peak;
}

}  // namespace

Screen screen(const Problem& pr, const Layout& l, const StagePlan& sp) {
  Screen sc;
  const RankWork w = busiest(l, sp);
  const int S = sp.stages_per_pipe;
  double fmin = sp.f[0], fsum = 0, bsum = 0, wsum = 0;
  for (int k = 0; k < S; ++k) fmin = std::min(fmin, sp.f[k]), fsum += sp.f[k], bsum += sp.b[k], wsum += sp.w[k];
  const double F = fsum / S, B = bsum / S, W = wsum / S;
  const double tail = dp_exposed(pr.machine, l, sp, w) + sp.optimizer;
  const ScheduleRow& row = schedule_row(l.schedule);
  const double fill = row.waits_for_fill ? (l.p - 1) * (fmin + sp.p2p) : 0.0;
  sc.step_lower_bound = w.busy + fill + tail;
  const double idle = row.screen_idle(l.p, F, B, W);
  sc.step_estimate = std::max(sc.step_lower_bound, w.busy + idle + 2 * (l.p - 1) * sp.p2p + tail);
  // A chunk in flight holds its forward stash or, after I, its weight stash: at least the smaller.
  double smin = sp.stash[0];
  for (double x : sp.stash) smin = std::min(smin, x);
  for (double x : sp.wstash) smin = std::min(smin, x);
  sc.memory_lower_bound = sp.static_bytes + formula_peak(row, l.p, sp.m, sp.v) * smin;
  return sc;
}

}  // namespace pipebench::analysis::plan
