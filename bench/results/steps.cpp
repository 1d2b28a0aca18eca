#include "bench/results/steps.hpp"

#include <algorithm>
#include <map>
#include <numeric>

#include "analysis/error.hpp"
#include "analysis/stats.hpp"

namespace pipebench::bench {

void set_variability(RunSummary& sum, const std::vector<double>& step_times, const std::vector<double>& bubbles) {
  if (step_times.empty()) return;
  const auto [tmin, tmax] = std::minmax_element(step_times.begin(), step_times.end());
  sum.step_time_min = *tmin;
  sum.step_time_max = *tmax;
  if (!bubbles.empty()) {
    const auto [bmin, bmax] = std::minmax_element(bubbles.begin(), bubbles.end());
    sum.bubble_min = *bmin;
    sum.bubble_max = *bmax;
  }
  sum.step_time_cv = analysis::coefficient_of_variation(step_times);
  sum.step_time_p50 = analysis::percentile(step_times, 0.50);
  sum.step_time_p90 = analysis::percentile(step_times, 0.90);
  sum.step_time_p99 = analysis::percentile(step_times, 0.99);
}

std::vector<double> repeat_medians(const std::vector<StepRecord>& steps, double StepRecord::*figure) {
  std::map<int, std::vector<double>> by_repeat;
  for (const auto& s : steps) by_repeat[s.repeat].push_back(s.*figure);
  std::vector<double> out;
  for (const auto& [r, times] : by_repeat) out.push_back(analysis::percentile(times, 0.5));
  return out;
}

RunResult combine_repeats(std::vector<RunResult> repeats, const std::string& scoring, int* kept) {
  if (repeats.empty()) throw Error("combine_repeats: no repeats");
  const int n = static_cast<int>(repeats.size());
  std::vector<double> scores;
  for (const auto& r : repeats) scores.push_back(r.summary.step_time);
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&scores](int a, int b) { return scores[a] < scores[b]; });
  std::vector<StepRecord> steps;
  std::vector<double> times, bubbles;
  for (int k = 0; k < n; ++k)
    for (StepRecord s : repeats[k].steps) {
      s.repeat = k;
      steps.push_back(s);
      times.push_back(s.step_time);
      bubbles.push_back(s.bubble);
    }
  if (kept) *kept = order[(n - 1) / 2];
  RunResult out = std::move(repeats[order[(n - 1) / 2]]);
  RunSummary& sum = out.summary;
  out.steps = std::move(steps);
  set_variability(sum, times, bubbles);
  sum.repeats = n;
  sum.scoring = scoring;
  if (scoring == kScoringOlympic)
    sum.step_time = analysis::olympic_mean(scores);
  else if (scoring == kScoringMedian)
    sum.step_time = analysis::percentile(scores, 0.5);
  else
    throw Error("combine_repeats: unknown scoring '" + scoring + "'");
  // The bubble and makespan as compare's samples see them: the median of the repeats' medians.
  sum.bubble_measured = analysis::percentile(repeat_medians(out.steps, &StepRecord::bubble), 0.5);
  sum.makespan = analysis::percentile(repeat_medians(out.steps, &StepRecord::makespan), 0.5);
  sum.dp_sync_time = std::max(0.0, sum.step_time - sum.makespan);
  if (n > 1)
    out.metadata["statistic"] = scoring == kScoringOlympic
                                    ? "olympic mean of " + std::to_string(n) + " repeats' medians over timed steps"
                                    : "median of " + std::to_string(n) + " repeats' medians over timed steps";
  return out;
}

}  // namespace pipebench::bench
