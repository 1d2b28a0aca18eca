#pragma once
// The host's fp32 element-wise loops that spend their time in the exponent: the causal softmax row and
// GELU's forward and backward. glibc's expf is a scalar call, so those loops ran one value at a time
// (issue 25: softmax F and GELU F and I were about 8 % of the block's F+I+W at the paper size, beside
// products that reach 0.89 of sgemm). Here the exponent is a branch-free polynomial that the compiler
// vectorises: host_math.cpp is built without -ftrapping-math (GCC if-converts no float comparison under
// it, which is why an exponent in the headers stayed scalar, kernels/vector_math.hpp) and, on x86-64 with
// GCC, cloned for AVX-512 and AVX2 + FMA, picked at load time by the CPU. Plain C++, no Kokkos: the
// kernels call these per row inside their host parallel loops; device builds keep the Kokkos loops.
#include <cstddef>

namespace pipebench::kernels::host {

// y[i] = e^x[i]: relative error below 3e-7 (about 2.5 ulp) for x in [-87.3, 88.3]; 0 below -87.34
// (no denormal results), +inf above 88.73, and in between (88.3, 88.73] e^88.3; NaN stays NaN.
void exp(const float* x, float* y, std::size_t n);

// One causal softmax row: p[0, len) -> softmax, p[len, s) -> 0, len >= 1; the maximum and the sum in
// kernels/vector_math.hpp's 16 lanes, in the same order as math::max_of and math::lane_sum.
void softmax_row(float* p, int len, int s);

// g = gelu(u) over n values, as kernels/gelu.hpp's u * sigmoid(2y) form.
void gelu(const float* u, float* g, std::size_t n);

// u += b, then g = gelu(u), over one row of n values (fc1's bias joined to GELU's pass).
void bias_gelu(float* u, const float* b, float* g, std::size_t n);

// dg *= gelu'(u) over n values.
void gelu_backward(const float* u, float* dg, std::size_t n);

}  // namespace pipebench::kernels::host
