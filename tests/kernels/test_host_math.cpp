// kernels/host_math.hpp, the host's vectorised fp32 exponent, softmax row and GELU, against the same
// formulas in double (std::exp): the bounds its header promises.
#include <gtest/gtest.h>

#include "kernels/host_math.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace pipebench::kernels::test {
namespace {

double gelu_arg(double u) { return -2 * 0.7978845608028654 * (u + 0.044715 * u * u * u); }
double gelu_ref(double u) { return u / (1 + std::exp(gelu_arg(u))); }
// Relative bound: the exponent's 1.7e-7 and the quotient's rounding, plus what the float rounding of
// the argument (a few operations, each within 6e-8 of |arg|) makes of e^arg.
double gelu_tol(double u) { return 4e-7 + 3e-7 * std::abs(gelu_arg(u)); }

TEST(HostMath, ExpWithinCephesBoundAndItsLimits) {
  // Cephes' peak relative error of expf is 1.7e-7; a step of 1e-5 over the whole range hits every
  // reduction interval hundreds of times.
  std::vector<float> x;
  for (double v = -87.3; v <= 88.3; v += 1e-5) x.push_back(static_cast<float>(v));
  std::vector<float> y(x.size());
  host::exp(x.data(), y.data(), x.size());
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double t = std::exp(static_cast<double>(x[i]));
    worst = std::max(worst, std::abs(y[i] - t) / t);
  }
  EXPECT_LT(worst, 2e-7);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> special = {0.0f, -87.35f, -1000.0f, -inf, 88.74f, 1000.0f, inf, nan};
  std::vector<float> e(special.size());
  host::exp(special.data(), e.data(), special.size());
  EXPECT_EQ(e[0], 1.0f);
  for (int i : {1, 2, 3}) EXPECT_EQ(e[i], 0.0f) << special[i];
  for (int i : {4, 5, 6}) EXPECT_EQ(e[i], inf) << special[i];
  EXPECT_TRUE(std::isnan(e[7]));
}

// Rows of every length mod 16 (the lanes' tail), scores spread wide enough that some exponents underflow.
TEST(HostMath, SoftmaxRowMatchesDoubleAndZeroesTheMaskedPart) {
  const int s = 70;
  for (int len = 1; len <= s; ++len) {
    std::vector<float> p(s);
    for (int j = 0; j < s; ++j) p[j] = static_cast<float>(30.0 * std::sin(0.7 * j + len));
    // The reference takes the same float differences (their rounding is the caller's, not the exponent's).
    const float mx = *std::max_element(p.begin(), p.begin() + len);
    std::vector<double> ref(len);
    double sum = 0;
    for (int j = 0; j < len; ++j) sum += (ref[j] = std::exp(static_cast<double>(p[j] - mx)));
    host::softmax_row(p.data(), len, s);
    for (int j = 0; j < len; ++j) EXPECT_NEAR(p[j], ref[j] / sum, 1e-6 * (ref[j] / sum) + 1e-30) << len << " " << j;
    for (int j = len; j < s; ++j) EXPECT_EQ(p[j], 0.0f);
  }
}

TEST(HostMath, GeluForwardBiasAndBackwardMatchDouble) {
  std::vector<float> u, b;
  for (int i = 0; i < 4000; ++i) u.push_back(static_cast<float>(-12.0 + 24.0 * i / 4000.0));  // both tails too
  for (std::size_t i = 0; i < u.size(); ++i) b.push_back(static_cast<float>(0.01 * (static_cast<int>(i % 7) - 3)));
  std::vector<float> g(u.size()), ub = u, gb(u.size()), dg(u.size(), 0.5f);
  host::gelu(u.data(), g.data(), u.size());
  host::bias_gelu(ub.data(), b.data(), gb.data(), u.size());
  host::gelu_backward(u.data(), dg.data(), u.size());
  for (std::size_t i = 0; i < u.size(); ++i) {
    const double x = u[i], h = 1e-4;
    EXPECT_NEAR(g[i], gelu_ref(x), gelu_tol(x) * std::abs(gelu_ref(x)) + 1e-37) << x;
    EXPECT_EQ(ub[i], u[i] + b[i]);
    EXPECT_NEAR(gb[i], gelu_ref(ub[i]), gelu_tol(ub[i]) * std::abs(gelu_ref(ub[i])) + 1e-37) << x;
    const double d = 0.5 * (gelu_ref(x + h) - gelu_ref(x - h)) / (2 * h);  // central difference in double
    EXPECT_NEAR(dg[i], d, 1e-6 + (1e-5 + gelu_tol(x)) * std::abs(d)) << x;
  }
}

}  // namespace
}  // namespace pipebench::kernels::test
