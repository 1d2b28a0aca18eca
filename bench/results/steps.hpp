#pragma once
// A configuration's step times as statistics: min, max, cv and percentiles over its timed steps, and
// the repeats of one configuration (`run --repeats N`) combined into the one run that is stored,
// scored as MLPerf scores repeated runs (docs/run.md "Repeats").
#include <string>
#include <vector>

#include "bench/results/records.hpp"

namespace pipebench::bench {

// The variability fields of `sum` ([v3], [v4]: docs/results-schema.md) from the figures of each timed
// step: min and max of step time and bubble, the step time's coefficient of variation (sample standard
// deviation over mean, 0 for a single step) and its 50th, 90th and 99th percentiles. Nothing for no steps.
void set_variability(RunSummary& sum, const std::vector<double>& step_times, const std::vector<double>& bubbles);

// The median of `figure` (the step time, or another field of the steps) of each repeat in `steps`, in
// repeat order (repeats without steps left out).
std::vector<double> repeat_medians(const std::vector<StepRecord>& steps, double StepRecord::*figure = &StepRecord::step_time);

inline constexpr const char* kScoringMedian = "median";
inline constexpr const char* kScoringOlympic = "olympic";

// The repeats of one configuration, in the order they ran (each with repeat 0 in its steps), as one
// run: the records, ranks, stages and the simulated figures are those of the repeat whose median step
// time is the median of the repeats' (the lower middle one for an even count); `steps` holds every
// repeat's steps; the variability is over all of them; the measured bubble and makespan are the
// medians of the repeats' medians (DP sync the score minus that makespan); `step_time` is the score: the
// median of the repeats' medians ("median") or their mean without the fastest and the slowest
// ("olympic", at least 3 repeats). One repeat is returned as it is.
// `kept`, when given, is set to the index of the repeat whose records are kept.
RunResult combine_repeats(std::vector<RunResult> repeats, const std::string& scoring, int* kept = nullptr);

}  // namespace pipebench::bench
