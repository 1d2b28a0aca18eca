// The matrix-product efficiency table of a machine (analysis/plan/gemm.hpp, docs/model.md).
#include "analysis/plan/gemm.hpp"

#include <algorithm>
#include <cmath>

#include "analysis/error.hpp"
#include "analysis/text.hpp"

namespace pipebench::analysis::plan {

namespace {

// The grid cell of x and its weight along one axis, in log2 of the sizes.
struct Axis {
  std::size_t lo = 0, hi = 0;
  double w = 0;  // of hi
};

Axis locate(const std::vector<double>& sizes, double x) {
  const std::size_t n = sizes.size();
  if (n == 1 || x <= sizes.front()) return {0, 0, 0};
  if (x >= sizes.back()) return {n - 1, n - 1, 0};
  const std::size_t hi = static_cast<std::size_t>(std::upper_bound(sizes.begin(), sizes.end(), x) - sizes.begin());
  const std::size_t lo = hi - 1;
  const double a = std::log2(sizes[lo]), b = std::log2(sizes[hi]);
  return {lo, hi, (std::log2(x) - a) / (b - a)};
}

double interpolate(const GemmTable& table, const Axis& am, const Axis& an, const Axis& ak) {
  const std::size_t N = table.sizes.size();
  double sum = 0;
  for (int cm = 0; cm < 2; ++cm)
    for (int cn = 0; cn < 2; ++cn)
      for (int ck = 0; ck < 2; ++ck) {
        const double w = (cm ? am.w : 1 - am.w) * (cn ? an.w : 1 - an.w) * (ck ? ak.w : 1 - ak.w);
        if (w == 0) continue;
        const std::size_t i = ((cm ? am.hi : am.lo) * N + (cn ? an.hi : an.lo)) * N + (ck ? ak.hi : ak.lo);
        sum += w * table.efficiency[i];
      }
  return sum;
}

}  // namespace

double gemm_efficiency(const GemmTable& table, double m, double n, double k) {
  if (table.empty()) return 1.0;
  return interpolate(table, locate(table.sizes, m), locate(table.sizes, n), locate(table.sizes, k));
}

PassEfficiency pass_efficiency(const GemmTable& table, double m, double n, double k) {
  if (table.empty()) return {};
  const Axis am = locate(table.sizes, m), an = locate(table.sizes, n), ak = locate(table.sizes, k);
  return {interpolate(table, am, an, ak), interpolate(table, am, ak, an), interpolate(table, ak, an, am)};
}

GemmTable saturating_table(double e_max, double half, const std::string& source) {
  GemmTable t;
  t.source = source;
  for (double x = 64; x <= 65536; x *= 2) t.sizes.push_back(x);
  const auto g = [half](double x) { return x / (x + half); };
  for (double m : t.sizes)
    for (double n : t.sizes)
      for (double k : t.sizes) t.efficiency.push_back(e_max * g(m) * g(n) * g(k));
  return t;
}

MeasuredGemm measured_gemm_table(const std::vector<double>& sizes, const std::vector<double>& seconds,
                                 const std::string& source) {
  const std::size_t N = sizes.size();
  if (N == 0 || seconds.size() != N * N * N)
    throw UsageError(source + ": the GEMM sweep has " + std::to_string(seconds.size()) + " products, not " +
                     std::to_string(N * N * N) + " (every m, n, k of its " + std::to_string(N) + " sizes)");
  MeasuredGemm out;
  out.table.sizes = sizes;
  out.table.source = source;
  std::vector<double>& rates = out.table.efficiency;
  for (std::size_t im = 0; im < N; ++im)
    for (std::size_t in = 0; in < N; ++in)
      for (std::size_t ik = 0; ik < N; ++ik) {
        const double t = seconds[(im * N + in) * N + ik];
        if (!(t > 0) || !std::isfinite(t))
          throw UsageError(source + ": GEMM time " + num(t) + " s is not allowed: must be > 0");
        rates.push_back(2 * sizes[im] * sizes[in] * sizes[ik] / t);
        out.peak_flops = std::max(out.peak_flops, rates.back());
      }
  for (double& e : rates) e /= out.peak_flops;
  check_gemm_table(out.table, source);
  return out;
}

void check_gemm_table(const GemmTable& table, const std::string& where) {
  const std::size_t N = table.sizes.size();
  if (N == 0) {  // no table: every product at the peak
    if (!table.efficiency.empty()) throw UsageError(where + ": the GEMM table has efficiencies but no sizes");
    return;
  }
  for (std::size_t i = 0; i < N; ++i)
    if (!(table.sizes[i] > 0) || (i > 0 && !(table.sizes[i] > table.sizes[i - 1])))
      throw UsageError(where + ": GEMM size " + num(table.sizes[i]) + " is not allowed: sizes must be > 0 and ascending");
  if (table.efficiency.size() != N * N * N)
    throw UsageError(where + ": the GEMM table has " + std::to_string(table.efficiency.size()) + " efficiencies, not " +
                     std::to_string(N * N * N) + " (every m, n, k of the grid)");
  for (double e : table.efficiency)
    if (!(e > 0 && e <= 1)) throw UsageError(where + ": GEMM efficiency " + num(e) + " is not allowed: must be in (0, 1]");
}

}  // namespace pipebench::analysis::plan
