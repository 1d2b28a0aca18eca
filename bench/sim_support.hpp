#pragma once
// What `pipebench schedule` and `pipebench simulate` share: the time flags, one simulated
// configuration with its analytic figures, its SVG, file output and a fixed-width table.
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "analysis/formulas.hpp"
#include "analysis/generators.hpp"
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
SimRun run_config(analysis::Schedule s, int group, const Times& t, bool with_formula, bool with_timeline = true);

// make_schedule(), refusing sizes whose timeline would not fit in memory (p*m*v > 2^24, about 50M
// actions) with a UsageError instead of an allocation failure minutes later.
analysis::Schedule make_checked_schedule(const analysis::ScheduleParams& q);

// How the tables show times: seconds as milliseconds, time units as they are.
struct TimeDisplay {
  double factor = 1;
  std::string unit = "units";
};
TimeDisplay time_display(const Times& t);

std::string svg_of(const SimRun& r, const Times& t);

// Writes `text` to `path` (a note on stderr when it replaces a file); UsageError naming `flag` and
// the system's reason when the file cannot be written.
void write_text_file(const std::string& path, const std::string& text, const std::string& flag);

// printf-style formatting of one number.
std::string fmt(const char* format, double x);


// The per-rank figures of one configuration as a table (rank, busy, idle, span bubble, peak).
void print_rank_table(std::ostream& os, const SimRun& r, const Times& t);

}  // namespace pipebench::bench
