#pragma once
// Element-wise helpers written so that a host compiler vectorises the loops they sit in: glibc's expf
// is a function call per element, and a plain floating-point sum or maximum is a chain that the
// compiler may not reorder (no -ffast-math here), so neither vectorises on its own.
#include "kernels/views.hpp"

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace pipebench::kernels::math {

// e^x in fp32 without a call: Cody-Waite range reduction x = n ln2 + r, |r| <= ln2/2, and the degree-6
// polynomial of Cephes' expf (S. L. Moshier, Cephes Math Library 2.2, expf.c: coefficients and the split
// of ln2 into 0.693359375 - 2.12194440e-4 are his; relative error about 1 ulp over the range). n is
// rounded with the 1.5 * 2^23 trick (round to nearest in the default rounding mode) and 2^n is built in
// the exponent bits. Inputs below -87 return about 1.6e-38 instead of an underflow to 0 and inputs
// above 88 saturate at e^88: harmless where it is used (softmax, GELU's sigmoid). fp64 uses exp().
KOKKOS_INLINE_FUNCTION float exp_vec(float x) {
  const float xc = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  const float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = (xc - n * 0.693359375f) + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const std::int32_t bits = (static_cast<std::int32_t>(n) + 127) << 23;
#if KOKKOS_VERSION >= 40000
  return p * Kokkos::bit_cast<float>(bits);
#else  // Kokkos 3 builds here are host-only
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
#endif
}
KOKKOS_INLINE_FUNCTION double exp_vec(double x) { return exp(x); }

// Lanes of the partial sums and maxima below: 16 floats, one AVX-512 register or four SSE ones.
constexpr int kLanes = 16;

// max over x[0, n), n >= 1.
template <class S>
KOKKOS_INLINE_FUNCTION S max_of(const S* x, int n) {
  S lane[kLanes];
  for (int l = 0; l < kLanes; ++l) lane[l] = x[0];
  int j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) lane[l] = x[j + l] > lane[l] ? x[j + l] : lane[l];
  S m = x[0];
  for (; j < n; ++j) m = x[j] > m ? x[j] : m;
  for (int l = 0; l < kLanes; ++l) m = lane[l] > m ? lane[l] : m;
  return m;
}

// sum over j < n of f(j), summed in kLanes interleaved partial sums (a fixed order: deterministic).
template <class S, class F>
KOKKOS_INLINE_FUNCTION S lane_sum(int n, const F& f) {
  S lane[kLanes];
  for (int l = 0; l < kLanes; ++l) lane[l] = S(0);
  int j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) lane[l] += f(j + l);
  S sum = S(0);
  for (; j < n; ++j) sum += f(j);
  for (int l = 0; l < kLanes; ++l) sum += lane[l];
  return sum;
}

}  // namespace pipebench::kernels::math
