// Built with -fno-trapping-math (kernels/CMakeLists.txt): the clamps and selects below are float
// comparisons, which GCC vectorises only then. No other flag changes the arithmetic: no reassociation,
// so each function sums in the order its comment gives.
#include "kernels/host_math.hpp"

#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__CUDACC__) && defined(__linux__)
// One copy per instruction set, chosen once by the dynamic loader (GCC's function multiversioning).
#define PIPEBENCH_HOST_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define PIPEBENCH_HOST_CLONES
#endif

namespace pipebench::kernels::host {
namespace {

constexpr int kLanes = 16;  // kernels/vector_math.hpp's math::kLanes

inline float bits_to_float(std::int32_t i) {
  float f;
  std::memcpy(&f, &i, sizeof f);
  return f;
}

// e^x after Cephes' expf (Stephen L. Moshier, Cephes Math Library 2.2, expf.c): x = n ln2 + r with
// |r| <= ln2/2, ln2 in two parts (C1 exact in few bits, C2 the rest), e^r by its degree-7 polynomial
// with Cephes' coefficients, 2^n built in the exponent bits. n comes from rounding with the 1.5 * 2^23
// constant (round to nearest, |x log2 e| < 2^22), so there is no branch and no library call.
inline float exp_one(float x) {
  const float lo = -87.3f, hi = 88.3f;  // 2^n stays a normal number: n in [-126, 127]
  // NaN takes lo, so that n is a number (converting NaN to int is undefined); the last select returns it.
  const float xc = x > hi ? hi : (x >= lo ? x : lo);
  const float magic = 12582912.0f;  // 1.5 * 2^23
  const float fn = (xc * 1.44269504088896341f + magic) - magic;
  const float r = (xc - fn * 0.693359375f) - fn * -2.12194440e-4f;
  const float z = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * z + r + 1.0f;
  const float e = p * bits_to_float((static_cast<std::int32_t>(fn) + 127) << 23);
  const float inf = std::numeric_limits<float>::infinity();
  return x < -87.34f ? 0.0f : (x > 88.73f ? inf : (x != x ? x : e));
}

// 1 + e^(-2y), y = c (u + k u^3): kernels/gelu.hpp's GeluConstants and its order of operations.
inline float gelu_denominator(float u) {
  const float c = 0.7978845608028654f, k = 0.044715f;
  return 1.0f + exp_one(-2.0f * c * (u + k * u * u * u));
}

}  // namespace

PIPEBENCH_HOST_CLONES void exp(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = exp_one(x[i]);
}

// Three sweeps over a row that stays in the first-level cache: the maximum; the exponent and the sum;
// the scale and the zeros past len. Maximum and sum as math::max_of and math::lane_sum: kLanes partial
// results (lane l takes j = l mod kLanes up to the last whole group), then the tail in order, then the
// lanes in order.
PIPEBENCH_HOST_CLONES void softmax_row(float* p, int len, int s) {
  float lane[kLanes];
  for (int l = 0; l < kLanes; ++l) lane[l] = p[0];
  int j = 0;
  for (; j + kLanes <= len; j += kLanes)
    for (int l = 0; l < kLanes; ++l) lane[l] = p[j + l] > lane[l] ? p[j + l] : lane[l];
  float mx = p[0];
  for (; j < len; ++j) mx = p[j] > mx ? p[j] : mx;
  for (int l = 0; l < kLanes; ++l) mx = lane[l] > mx ? lane[l] : mx;

  for (int l = 0; l < kLanes; ++l) lane[l] = 0.0f;
  for (j = 0; j + kLanes <= len; j += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      const float e = exp_one(p[j + l] - mx);
      p[j + l] = e;
      lane[l] += e;
    }
  float sum = 0.0f;
  for (; j < len; ++j) {
    const float e = exp_one(p[j] - mx);
    p[j] = e;
    sum += e;
  }
  for (int l = 0; l < kLanes; ++l) sum += lane[l];

  const float inv = 1.0f / sum;
  for (j = 0; j < len; ++j) p[j] *= inv;
  for (j = len; j < s; ++j) p[j] = 0.0f;
}

PIPEBENCH_HOST_CLONES void gelu(const float* u, float* g, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) g[i] = u[i] / gelu_denominator(u[i]);
}

PIPEBENCH_HOST_CLONES void bias_gelu(float* u, const float* b, float* g, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const float x = u[i] + b[i];
    u[i] = x;
    g[i] = x / gelu_denominator(x);
  }
}

// gelu' = sigma + u * 2 sigma (1 - sigma) * dy/du, sigma = sigmoid(2y), as kernels/gelu.hpp.
PIPEBENCH_HOST_CLONES void gelu_backward(const float* u, float* dg, std::size_t n) {
  const float c = 0.7978845608028654f, k = 0.044715f;
  for (std::size_t i = 0; i < n; ++i) {
    const float x = u[i], sg = 1.0f / gelu_denominator(x);
    dg[i] *= sg + 2.0f * x * sg * (1.0f - sg) * c * (1.0f + 3.0f * k * x * x);
  }
}

}  // namespace pipebench::kernels::host
