#include "analysis/stats.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "analysis/error.hpp"

namespace pipebench::analysis {

namespace {

double sorted_percentile(const std::vector<double>& s, double q) {
  if (s.empty()) return 0;
  const double at = q * static_cast<double>(s.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(at));
  const std::size_t hi = std::min(lo + 1, s.size() - 1);
  return s[lo] + (at - static_cast<double>(lo)) * (s[hi] - s[lo]);
}

// An index in [0, n) from the generator, uniform by rejection of the top partial range.
std::size_t draw(std::mt19937_64& g, std::size_t n) {
  const std::uint64_t range = static_cast<std::uint64_t>(n);
  const std::uint64_t limit = std::mt19937_64::max() - std::mt19937_64::max() % range;
  std::uint64_t x = g();
  while (x >= limit) x = g();
  return static_cast<std::size_t>(x % range);
}

double resampled_median(const std::vector<double>& v, std::mt19937_64& g, std::vector<double>& scratch) {
  scratch.resize(v.size());
  for (auto& x : scratch) x = v[draw(g, v.size())];
  std::sort(scratch.begin(), scratch.end());
  return sorted_percentile(scratch, 0.5);
}

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const std::size_t n = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n), v.end());
  if (v.size() % 2) return v[n];
  const double hi = v[n];
  return 0.5 * (hi + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n)));
}

double percentile(std::vector<double> v, double q) {
  if (q < 0 || q > 1) throw Error("percentile: q = " + std::to_string(q) + " is not in [0, 1]");
  std::sort(v.begin(), v.end());
  return sorted_percentile(v, q);
}

double coefficient_of_variation(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double n = static_cast<double>(v.size());
  double mean = 0, ss = 0;
  for (double x : v) mean += x / n;
  for (double x : v) ss += (x - mean) * (x - mean);
  return mean > 0 ? std::sqrt(ss / (n - 1)) / mean : 0.0;
}

IterationStats iteration_stats(std::vector<double> v) {
  IterationStats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  const auto nearest_rank = [&v, n](std::size_t pct) { return v[std::min(n - 1, (n * pct + 99) / 100 - 1)]; };
  s.min = v.front();
  s.max = v.back();
  s.p50 = v[n / 2];
  s.p95 = nearest_rank(95);
  s.p99 = nearest_rank(99);
  for (double x : v) s.mean += x / static_cast<double>(n);
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  s.stdev = std::sqrt(ss / static_cast<double>(n));
  s.cv = s.mean > 0 ? s.stdev / s.mean : 0;
  return s;
}

double olympic_mean(std::vector<double> v) {
  if (v.size() < 3) throw Error("olympic scoring needs at least 3 values, got " + std::to_string(v.size()));
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (std::size_t i = 1; i + 1 < v.size(); ++i) sum += v[i];
  return sum / static_cast<double>(v.size() - 2);
}

std::optional<RatioInterval> bootstrap_median_ratio(const std::vector<double>& a, const std::vector<double>& b,
                                                    double level, int resamples, std::uint64_t seed) {
  if (static_cast<int>(a.size()) < kMinBootstrapSamples || static_cast<int>(b.size()) < kMinBootstrapSamples)
    return std::nullopt;
  const double ma = percentile(a, 0.5), mb = percentile(b, 0.5);
  if (!(ma > 0) || !(mb > 0) || resamples < 1) return std::nullopt;
  std::mt19937_64 g(seed);
  std::vector<double> ratios, scratch;
  ratios.reserve(static_cast<std::size_t>(resamples));
  for (int k = 0; k < resamples; ++k) {
    const double ra = resampled_median(a, g, scratch);
    const double rb = resampled_median(b, g, scratch);
    if (ra > 0) ratios.push_back(rb / ra);
  }
  if (ratios.empty()) return std::nullopt;
  std::sort(ratios.begin(), ratios.end());
  RatioInterval out;
  out.ratio = mb / ma;
  out.low = sorted_percentile(ratios, (1 - level) / 2);
  out.high = sorted_percentile(ratios, 1 - (1 - level) / 2);
  out.resamples = static_cast<int>(ratios.size());
  return out;
}

}  // namespace pipebench::analysis
