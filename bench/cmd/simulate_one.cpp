#include "bench/cmd/simulate_one.hpp"
#include "bench/render/table.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "analysis/error.hpp"
#include "analysis/limits.hpp"
#include "bench/render/svg.hpp"
#include "analysis/validate.hpp"

namespace pipebench::bench {

SimRun simulate_one(analysis::Schedule s, int group, const Times& t, bool with_formula, bool with_timeline) {
  // validate() is its shape and completeness checks, then a replay for the dependencies: the
  // simulation below is that replay (a deadlock fails it with validate()'s message), so it runs once.
  analysis::validate_without_replay(s);
  analysis::SimCosts costs;
  try {
    costs = analysis::uniform_costs(s, t.tf, t.tb, t.tw, t.t_overlap, t.stage_cost, t.p2p);
  } catch (const UsageError&) {
    analysis::validate(s);  // a broken schedule is reported before a bad time flag, as always
    throw;
  }
  SimRun r;
  r.group = group;
  // The timeline comes listed per rank in time order, which reads better than the order the simulator
  // resolved the actions in.
  r.sim = analysis::simulate(s, costs, analysis::SimOptions{with_timeline});
  if (with_formula) {
    analysis::FormulaParams q;
    q.schedule = s.name;
    q.p = s.p;
    q.m = s.m;
    q.v = s.v();
    q.group = group;
    q.tf = t.tf;
    q.tb = t.tb;
    q.tw = t.tw;
    q.t_overlap = t.t_overlap;
    q.uniform_stages = std::all_of(t.stage_cost.begin(), t.stage_cost.end(), [](double k) { return k == 1.0; });
    q.p2p = t.p2p;
    r.analytic = analysis::analytic_figures(q);
  }
  r.schedule = std::move(s);
  return r;
}

TimeDisplay time_display(const Times& t) { return t.seconds ? TimeDisplay{1e3, "ms"} : TimeDisplay{}; }

void write_svg_of(std::ostream& os, const SimRun& r, const Times& t) {
  SvgOptions opt;
  opt.time_unit = t.seconds ? "s" : "units";
  write_svg(os, r.schedule, r.sim.timeline, opt);
}

void check_listed_actions(const analysis::Schedule& s, const std::string& output) {
  analysis::check_listed_items(static_cast<std::int64_t>(s.num_actions()),
                               output + " of " + s.name + " p=" + std::to_string(s.p) + " m=" + std::to_string(s.m),
                               "the table, grid and CSV have no such limit");
}

void check_listed_actions(const analysis::ScheduleParams& q, const std::string& output) {
  const int v = q.v > 0 ? q.v : analysis::schedule_row(q.name).default_v;
  analysis::check_listed_items(static_cast<std::int64_t>(q.p) * v * q.m,
                               output + " of " + q.name + " p=" + std::to_string(q.p) + " m=" + std::to_string(q.m) +
                                   " (at least p*v*m actions)",
                               "the table, grid and CSV have no such limit");
}

void print_rank_table(std::ostream& os, const SimRun& r, const Times& t) {
  const TimeDisplay d = time_display(t);
  const auto& peak = r.analytic ? r.analytic->peak_inflight.value : std::nullopt;
  std::vector<std::vector<std::string>> rows;
  for (const auto& rm : r.sim.metrics.ranks)
    rows.push_back({std::to_string(rm.rank), fmt("%.6g", rm.busy * d.factor), fmt("%.6g", rm.idle * d.factor),
                    fmt("%.6g", rm.span_bubble * d.factor), std::to_string(rm.peak_inflight),
                    peak ? std::to_string((*peak)[rm.rank]) : "n/a"});
  os << Table({{"rank", ""}, {"busy", d.unit}, {"idle", d.unit}, {"span_bubble", d.unit}, {"peak", "chunks"},
               {"peak_formula", "chunks"}}).render(rows);
}

}  // namespace pipebench::bench
