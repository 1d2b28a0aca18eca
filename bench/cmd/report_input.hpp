#pragma once
// What `pipebench report --html` needs beyond the stored figures, computed from a results file: each
// run's step time breakdown and the measured and simulated timelines of chosen runs
// (bench/render/html.hpp renders them).
#include <string>
#include <vector>

#include "bench/render/html.hpp"

namespace pipebench::bench {

// The schedule a stored run ran, rebuilt from its configuration (schedule, p, m, v, group); Error when
// the configuration does not name one pipebench generates.
analysis::Schedule schedule_of(const RunResult& run);

// The measured producer's parts of analysis/breakdown.hpp (compute, overhead, bubble, pp as the waiting
// for inputs, dp as step time - makespan), averaged over ranks; none without a schedule or stages.
std::optional<analysis::Breakdown> breakdown_of(const RunResult& run);

// The timelines of a run read with its records: the first timed step of pipeline 0 as measured, and
// the simulator fed the run's measured op times, p2p time and executor overhead. Records that do not
// fit the schedule (a damaged or foreign file) are left out.
TimelineView timeline_of(int id, const RunResult& run);

// The /comm results of `path` for report and compare: when one group is damaged, one warning on
// stderr and none are kept (the runs are still reported); UsageError as read_comms.
std::vector<StoredComm> readable_comms(const std::string& path);

// Everything for the report of `path`: the listing, breakdowns, and the timelines of `timeline_ids`
// (empty: the first run of each schedule). UsageError for a file without complete runs or an id that
// is not a complete run.
ReportInput report_input(const std::string& path, const std::vector<int>& timeline_ids);

}  // namespace pipebench::bench
