#pragma once
// The machine's own matrix-product and memory rates, as `pipebench gemm` measures them for the planner
// (docs/model.md "Calibration"): every product of a grid of m, n and k through the kernels' gemm() (the
// path the transformer's products take, kernels/gemm.hpp), and the bandwidth of an element-wise pass.
// Needs Kokkos initialised (KokkosSession).
#include <cstddef>
#include <functional>
#include <vector>

namespace pipebench::kernels {

// Median seconds of one [m, k] x [k, n] product (C = A B, row-major) over at least 3 calls and at least
// `seconds` of them, after one warm-up call. fp32 or fp64.
double time_gemm(std::size_t m, std::size_t n, std::size_t k, bool fp64, double seconds);

// 2 m n k / time_gemm: the FLOP rate of one shape (the reference rate of a run's model FLOP utilisation).
double measure_gemm_rate(int rows, int inner, int cols, bool fp64, double seconds);

// Bytes per second of the element-wise pass y = a x + y over `elements` values (2 read and 1 written per
// element, as STREAM counts its triad), the median of at least 3 passes and `seconds` of them.
double measure_elementwise_bandwidth(std::size_t elements, bool fp64, double seconds);

struct GemmSweepSpec {
  std::vector<std::size_t> sizes;  // the grid of each of m, n and k, ascending
  bool fp64 = false;
  double seconds = 0.02;           // per product shape, at least (time_gemm)
  // Called after each shape with (done, total); may throw to stop the sweep.
  std::function<void(std::size_t, std::size_t)> progress;
};

// Median seconds of every product of the grid, index (i_m * N + i_n) * N + i_k (analysis/plan/gemm.hpp's
// order).
std::vector<double> gemm_sweep(const GemmSweepSpec& spec);

}  // namespace pipebench::kernels
