// Issue 26: the statistics compare and report rest on (analysis/stats.hpp) and time and cost to train
// (analysis/train_cost.hpp), against hand-computed figures.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "analysis/error.hpp"
#include "analysis/stats.hpp"
#include "analysis/train_cost.hpp"

using namespace pipebench::analysis;

// numpy.percentile's default (linear, Hyndman-Fan 7): sorted 1 2 3 4 5 7 10, (n-1)q = 3, 5.4, 5.94.
TEST(Stats, PercentileInterpolatesBetweenClosestRanks) {
  const std::vector<double> v{5, 1, 4, 2, 3, 10, 7};
  EXPECT_DOUBLE_EQ(percentile(v, 0.5), 4.0);
  EXPECT_DOUBLE_EQ(percentile(v, 0.9), 8.2);
  EXPECT_DOUBLE_EQ(percentile(v, 0.99), 9.82);
  EXPECT_DOUBLE_EQ(percentile(v, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(percentile(v, 1.0), 10.0);
  EXPECT_DOUBLE_EQ(percentile({2, 4}, 0.5), 3.0);
  EXPECT_DOUBLE_EQ(percentile({}, 0.5), 0.0);
  EXPECT_THROW(percentile(v, 1.5), pipebench::Error);
}

// The one median: the middle value, the mean of the two middle ones for an even count, whatever the order.
TEST(Stats, MedianIsTheMiddleOrTheMeanOfTheTwoMiddle) {
  EXPECT_DOUBLE_EQ(median({5, 1, 4, 2, 3, 10, 7}), 4.0);
  EXPECT_DOUBLE_EQ(median({10, 1, 4, 2}), 3.0);
  EXPECT_DOUBLE_EQ(median({2.5}), 2.5);
  EXPECT_DOUBLE_EQ(median({}), 0.0);
}

TEST(Stats, CoefficientOfVariationUsesTheSampleDeviation) {
  EXPECT_NEAR(coefficient_of_variation({1, 2, 3, 4}), 0.5163977794943222, 1e-15);  // sqrt(5/3) / 2.5
  EXPECT_DOUBLE_EQ(coefficient_of_variation({3}), 0.0);
}

// nccl-tests 2.19's -I figures (src/util.cu computeIterStats): nearest-rank p95/p99, p50 = sorted[n/2],
// population deviation. Ten values 1..9 and 20: p99 and p95 are element min(9, ceil(n p/100) - 1) = 9
// (20), p50 element 5 (6), mean 6.5, stdev sqrt(mean of squares - 6.5^2) = sqrt(68.5 - 42.25).
TEST(Stats, IterationStatsAreNcclTests) {
  const std::vector<double> v{20, 9, 8, 7, 6, 5, 4, 3, 2, 1};
  const IterationStats s = iteration_stats(v);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 20);
  EXPECT_DOUBLE_EQ(s.p50, 6);
  EXPECT_DOUBLE_EQ(s.p95, 20);
  EXPECT_DOUBLE_EQ(s.p99, 20);
  EXPECT_DOUBLE_EQ(s.mean, 6.5);
  EXPECT_DOUBLE_EQ(s.stdev, std::sqrt(68.5 - 42.25));
  EXPECT_DOUBLE_EQ(s.cv, std::sqrt(68.5 - 42.25) / 6.5);
  // 200 values 1..200: p99 is element ceil(198) - 1 = 197 (198), p95 element 189 (190), p50 element 100.
  std::vector<double> w;
  for (int i = 200; i >= 1; --i) w.push_back(i);
  const IterationStats t = iteration_stats(w);
  EXPECT_DOUBLE_EQ(t.p99, 198);
  EXPECT_DOUBLE_EQ(t.p95, 190);
  EXPECT_DOUBLE_EQ(t.p50, 101);
  EXPECT_DOUBLE_EQ(iteration_stats({}).max, 0);
}

// MLPerf: drop the fastest and the slowest, average the rest.
TEST(Stats, OlympicMeanDropsOneFastestAndOneSlowest) {
  EXPECT_DOUBLE_EQ(olympic_mean({10, 1, 2, 3, 100}), 5.0);
  EXPECT_DOUBLE_EQ(olympic_mean({1, 1, 4}), 1.0);
  EXPECT_THROW(olympic_mean({1, 2}), pipebench::Error);
}

TEST(Stats, BootstrapIsReproducibleAndBracketsTheRatio) {
  const std::vector<double> a{1.00, 1.01, 0.99, 1.02, 0.98, 1.00};
  std::vector<double> b;
  for (double x : a) b.push_back(x * 1.10);
  const auto r = bootstrap_median_ratio(a, b);
  ASSERT_TRUE(r);
  EXPECT_NEAR(r->ratio, 1.10, 1e-12);
  EXPECT_LE(r->low, r->ratio);
  EXPECT_GE(r->high, r->ratio);
  EXPECT_GT(r->low, 1.0);  // 10 % slower with 2 % noise: significant
  const auto again = bootstrap_median_ratio(a, b);
  EXPECT_EQ(again->low, r->low);
  EXPECT_EQ(again->high, r->high);
  // The same samples on both sides: the interval holds 1.
  const auto same = bootstrap_median_ratio(a, a);
  EXPECT_LE(same->low, 1.0);
  EXPECT_GE(same->high, 1.0);
}

TEST(Stats, BootstrapNeedsEnoughSamples) {
  EXPECT_FALSE(bootstrap_median_ratio({1, 2, 3, 4}, {1, 2, 3, 4, 5}));
  EXPECT_TRUE(bootstrap_median_ratio({1, 2, 3, 4, 5}, {1, 2, 3, 4, 5}));
  EXPECT_FALSE(bootstrap_median_ratio({0, 0, 0, 0, 0}, {1, 2, 3, 4, 5}));
}

// 1e9 tokens at 1e5 tokens/s on 8 accelerators: 1e4 s = 0.11574 days, 22.222 GPU-hours, at 2.5/h 55.56.
TEST(TrainCost, DaysGpuHoursAndCost) {
  const TrainCost c = train_cost(1e5, 8, 1e9, 2.5);
  EXPECT_DOUBLE_EQ(c.seconds, 1e4);
  EXPECT_DOUBLE_EQ(c.days, 1e4 / 86400.0);
  EXPECT_DOUBLE_EQ(c.gpu_hours, 8e4 / 3600.0);
  ASSERT_TRUE(c.cost);
  EXPECT_DOUBLE_EQ(*c.cost, 2.5 * 8e4 / 3600.0);
  EXPECT_FALSE(train_cost(1e5, 8, 1e9, std::nullopt).cost);
  EXPECT_THROW(train_cost(1e5, 8, -1, std::nullopt), pipebench::Error);
  EXPECT_THROW(train_cost(1e5, 8, 1e9, -1.0), pipebench::Error);
  EXPECT_THROW(train_cost(0, 8, 1e9, 1.0), pipebench::Error);
}
