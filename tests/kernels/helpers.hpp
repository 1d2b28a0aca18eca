#pragma once
// Host-side helpers for the kernel tests: copy views to and from std::vector<double> (through mirrors,
// so the tests also run on a device backend), deterministic random data, central finite differences.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include "kernels/random.hpp"
#include "kernels/views.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace pipebench::kernels::test {

using Exec = Kokkos::DefaultExecutionSpace;
using VD = Views<double, Exec>;
using VF = Views<float, Exec>;

template <class V>
std::vector<double> host(const V& v) {
  auto m = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  std::vector<double> out(m.span());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(m.data()[i]);
  return out;
}

template <class V>
void set(const V& v, const std::vector<double>& x) {
  auto m = Kokkos::create_mirror_view(v);
  for (std::size_t i = 0; i < x.size(); ++i) m.data()[i] = static_cast<typename V::non_const_value_type>(x[i]);
  Kokkos::deep_copy(v, m);
}

inline std::vector<double> random_vec(std::size_t n, std::uint64_t seed, double scale, double offset = 0) {
  std::vector<double> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = offset + scale * uniform_pm1(hash3(seed, i, 99));
  return x;
}

template <class V>
V random_view(V v, std::uint64_t seed, double scale, double offset = 0) {
  set(v, random_vec(v.span(), seed, scale, offset));
  return v;
}

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Central differences of f at x (x is restored on return).
template <class F>
std::vector<double> numeric_gradient(std::vector<double>& x, F&& f, double eps = 1e-6) {
  std::vector<double> g(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double x0 = x[i];
    x[i] = x0 + eps;
    const double fp = f(x);
    x[i] = x0 - eps;
    const double fm = f(x);
    x[i] = x0;
    g[i] = (fp - fm) / (2 * eps);
  }
  f(x);
  return g;
}

// Every element within rtol of the largest magnitude of the reference, and the reference not trivial.
inline void expect_close(const std::vector<double>& got, const std::vector<double>& want, double rtol,
                         const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  EXPECT_GT(scale, 1e-8) << what << ": reference is all zeros, the comparison would prove nothing";
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= rtol * scale) && bad++ == 0) first = i;
  EXPECT_EQ(bad, 0u) << what << ": first mismatch at " << first << ": " << got[first] << " vs " << want[first]
                     << " (scale " << scale << ")";
}

}  // namespace pipebench::kernels::test
