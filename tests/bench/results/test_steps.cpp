// Issue 26: every timed step kept (schema version 4), repeats combined and scored, and version 3
// files still read.
#include <gtest/gtest.h>

#include "bench/results/h5.hpp"
#include "bench/results/steps.hpp"
#include "bench/results/store.hpp"
#include "sample_run.hpp"
#include "scratch.hpp"

namespace pipebench::bench {
namespace {

class Steps : public testing::ScratchDir {};

double analysis_median(const std::vector<double>& v) { return repeat_medians([&v] {
  std::vector<StepRecord> s;
  for (double x : v) s.push_back({0, 0, x, 0, 0});
  return s;
}())[0]; }

RunResult repeat_of(std::vector<double> times) {
  RunResult r = testing::sample_run();
  r.steps.clear();
  for (int i = 0; i < static_cast<int>(times.size()); ++i) r.steps.push_back({0, i, times[i], times[i], 0.2});
  r.summary.step_time = analysis_median(times);
  r.summary.scoring = kScoringMedian;
  return r;
}

}  // namespace

// Five repeats with median step times 1, 2, 3, 7, 100 (ms): median 3, olympic (2 + 3 + 7) / 3 = 4;
// the records kept are those of the median repeat (the third), the steps are all fifteen.
TEST(Repeats, OlympicAndMedianScoring) {
  const std::vector<std::vector<double>> times = {
      {0.007, 0.0069, 0.0071}, {0.001, 0.0009, 0.0011}, {0.003, 0.0031, 0.0029}, {0.100, 0.101, 0.099}, {0.002, 0.002, 0.002}};
  std::vector<RunResult> runs;
  for (const auto& t : times) runs.push_back(repeat_of(t));
  runs[2].key = "the median repeat";
  int kept = -1;
  const RunResult olympic = combine_repeats(runs, kScoringOlympic, &kept);
  EXPECT_EQ(kept, 2);
  EXPECT_EQ(olympic.key, "the median repeat");
  EXPECT_NEAR(olympic.summary.step_time, 0.004, 1e-15);
  EXPECT_EQ(olympic.summary.repeats, 5);
  EXPECT_EQ(olympic.summary.scoring, "olympic");
  ASSERT_EQ(olympic.steps.size(), 15u);
  EXPECT_EQ(olympic.steps[14].repeat, 4);
  EXPECT_EQ(olympic.steps[14].step, 2);
  EXPECT_DOUBLE_EQ(*olympic.summary.step_time_min, 0.0009);
  EXPECT_DOUBLE_EQ(*olympic.summary.step_time_max, 0.101);
  EXPECT_DOUBLE_EQ(*olympic.summary.step_time_p50, 0.003);  // the 8th of 15 sorted
  EXPECT_EQ(olympic.metadata.at("statistic"), "olympic mean of 5 repeats' medians over timed steps");
  EXPECT_EQ(repeat_medians(olympic.steps), (std::vector<double>{0.007, 0.001, 0.003, 0.100, 0.002}));
  const RunResult median = combine_repeats(runs, kScoringMedian);
  EXPECT_DOUBLE_EQ(median.summary.step_time, 0.003);
  EXPECT_THROW(combine_repeats({runs[0], runs[1]}, kScoringOlympic), Error);
}

// Percentiles and variability over the steps (analysis/stats.hpp's interpolation).
TEST(Repeats, VariabilityHasPercentiles) {
  RunSummary s;
  set_variability(s, {5, 1, 4, 2, 3, 10, 7}, {0.1, 0.2});
  EXPECT_DOUBLE_EQ(*s.step_time_p50, 4.0);
  EXPECT_DOUBLE_EQ(*s.step_time_p90, 8.2);
  EXPECT_DOUBLE_EQ(*s.step_time_p99, 9.82);
  EXPECT_DOUBLE_EQ(*s.bubble_max, 0.2);
}

// The steps table round-trips; a version 3 file (no steps, no percentiles) is read with them empty.
TEST_F(Steps, StoredAndVersionThreeStillRead) {
  const std::string file = path("s.h5");
  RunResult run = combine_repeats({repeat_of({0.01, 0.011}), repeat_of({0.012, 0.013}), repeat_of({0.02, 0.021})},
                                  kScoringOlympic);
  append_run(file, run);
  EXPECT_EQ(read_run(file, 1), run);
  EXPECT_EQ(list_runs(file).runs[0].run.steps.size(), 6u);
  {
    h5::Id f = h5::open_file(file, true);
    ASSERT_GE(H5Adelete(f.get(), "pipebench_schema_version"), 0);
    h5::write_attr(f.get(), "pipebench_schema_version", std::int64_t{3});
    h5::Id g = h5::open_group(f.get(), "runs/000001");
    ASSERT_GE(H5Ldelete(g.get(), "steps", H5P_DEFAULT), 0);
    for (const char* a : {"step_time_p50", "step_time_p90", "step_time_p99", "repeats", "scoring"})
      ASSERT_GE(H5Adelete(g.get(), a), 0) << a;
    h5::close_file(f);
  }
  const RunResult back = read_run(file, 1);
  EXPECT_TRUE(back.steps.empty());
  EXPECT_FALSE(back.summary.step_time_p50);
  EXPECT_EQ(back.summary.repeats, 1);
  EXPECT_EQ(back.summary.scoring, "");
  EXPECT_EQ(back.summary.step_time_min, run.summary.step_time_min);
  EXPECT_THROW(append_run(file, run), UsageError);  // never appended to
}

}  // namespace pipebench::bench
