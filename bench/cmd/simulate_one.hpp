#pragma once
// What `pipebench schedule` and `pipebench simulate` share: the time flags, one simulated
// configuration with its analytic figures, its SVG, file output and a fixed-width table.
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/catalog.hpp"
#include "analysis/formulas.hpp"
#include "analysis/schedule.hpp"
#include "analysis/simulate.hpp"
#include "bench/parse.hpp"

namespace pipebench::bench {

// One configuration: the validated schedule, its simulation (timeline sorted by rank, then start;
// empty unless with_timeline) and (for generated schedules) its analytic figures.
struct SimRun {
  analysis::Schedule schedule;
  int group = 0;  // as given (0 = the schedule's default)
  analysis::SimResult sim;
  std::optional<analysis::AnalyticFigures> analytic;
};
SimRun simulate_one(analysis::Schedule s, int group, const Times& t, bool with_formula, bool with_timeline = true);

// How the tables show times: seconds as milliseconds, time units as they are.
struct TimeDisplay {
  double factor = 1;
  std::string unit = "units";
};
TimeDisplay time_display(const Times& t);

// The timeline picture of `r`, written to `os` as it goes.
void write_svg_of(std::ostream& os, const SimRun& r, const Times& t);

// UsageError unless an output that lists every action of `s` (a timeline, a picture, the JSON action
// lists) stays within kMaxListedItems (analysis/limits.hpp); `output` names it ("--format json").
void check_listed_actions(const analysis::Schedule& s, const std::string& output);
// The same before generating: a schedule has at least one action per (stage, micro-batch) pair, so
// p*v*m over the limit is refused without building anything.
void check_listed_actions(const analysis::ScheduleParams& q, const std::string& output);



// The per-rank figures of one configuration as a table (rank, busy, idle, span bubble, peak).
void print_rank_table(std::ostream& os, const SimRun& r, const Times& t);

}  // namespace pipebench::bench
