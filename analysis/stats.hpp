#pragma once
// The statistics a benchmark comparison rests on: percentiles, the coefficient of variation, MLPerf's
// olympic score, and a bootstrap confidence interval of the ratio of two medians. Pure and
// deterministic: the bootstrap draws from a fixed seed, so the same samples give the same interval on
// every machine (std::mt19937_64 is specified bit for bit; the index is drawn by rejection, not by
// std::uniform_int_distribution, whose algorithm is the library's choice).
#include <cstdint>
#include <optional>
#include <vector>

namespace pipebench::analysis {

// The q-th quantile (0 <= q <= 1) by linear interpolation between closest ranks (Hyndman and Fan's
// definition 7, numpy's and R's default): x[(n-1)q] interpolated. 0 for an empty list.
double percentile(std::vector<double> v, double q);

// The median of a list: the middle value, or the mean of the two middle values for an even count; 0 for
// an empty list. O(n) (selection, not a sort). Every median pipebench figures use (a run's per-step
// figures, the simulator's measured costs, a GEMM's timed calls) is this one; percentile(v, 0.5) gives
// the same value up to the last bit of an even count's interpolation.
double median(std::vector<double> v);

// Sample standard deviation / mean (n - 1 in the denominator); 0 for fewer than two values or mean 0.
double coefficient_of_variation(const std::vector<double>& v);

// MLPerf Training's olympic score: the mean of the values without the fastest and the slowest one
// (one of each; MLPerf Training rules, "Benchmark results": drop the fastest and slowest of the runs,
// average the rest). Error for fewer than 3 values.
double olympic_mean(std::vector<double> v);

// nccl-tests' per-iteration summary (-I, nccl-tests 2.19 src/util.cu computeIterStats): over the timed
// iterations' times, min, max, mean, p50 (the sorted list's element n/2), p95 and p99 by nearest rank
// (element min(n-1, ceil(n p / 100) - 1), so p99 equals max below 100 samples), the population standard
// deviation (n in the denominator) and cv = stdev / mean. pipebench comm's i_min, i_max, i_p99 and
// i_cv% columns and its JSON per_iter object are these figures. All 0 for an empty list.
struct IterationStats {
  double min = 0, max = 0, mean = 0, p50 = 0, p95 = 0, p99 = 0, stdev = 0, cv = 0;
};
IterationStats iteration_stats(std::vector<double> times);

struct RatioInterval {
  double ratio = 0;  // median(b) / median(a)
  double low = 0;    // the 2.5th and 97.5th percentiles of the bootstrap distribution of the ratio
  double high = 0;
  int resamples = 0;
};

// The smallest sample per side a bootstrap verdict is given for; fewer: no interval ("not enough samples").
inline constexpr int kMinBootstrapSamples = 5;
inline constexpr int kBootstrapResamples = 10000;
inline constexpr std::uint64_t kBootstrapSeed = 20261201;

// Percentile bootstrap (Efron and Tibshirani, An Introduction to the Bootstrap, 1993, ch. 13) of
// median(b) / median(a): a and b are resampled with replacement, independently, `resamples` times;
// the interval holds the central `level` of the ratios. Nothing when either side has fewer than
// kMinBootstrapSamples values or a median is not positive.
std::optional<RatioInterval> bootstrap_median_ratio(const std::vector<double>& a, const std::vector<double>& b,
                                                    double level = 0.95, int resamples = kBootstrapResamples,
                                                    std::uint64_t seed = kBootstrapSeed);

}  // namespace pipebench::analysis
