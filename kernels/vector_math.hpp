#pragma once
// Row reductions in independent lanes: a plain floating-point sum or maximum is one dependent chain that
// the compiler may not reorder (no -ffast-math here); kLanes partial results in a fixed order keep the
// adds in flight and the result deterministic. (A polynomial expf here stayed scalar: with the default
// -ftrapping-math GCC if-converts no float comparison. The host's fp32 exponent loops live in
// kernels/host_math.cpp instead, built without it.)
#include "kernels/views.hpp"


namespace pipebench::kernels::math {

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
