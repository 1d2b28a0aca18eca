#include "kernels/gemm_sweep.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>

#include "analysis/stats.hpp"
#include "kernels/gemm.hpp"
#include "kernels/views.hpp"

namespace pipebench::kernels {

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using clock_type = std::chrono::steady_clock;

// Median seconds of `call` over at least 3 calls and `seconds` of them, after one warm-up call; each call
// is fenced, so a device's asynchronous launch is timed whole.
template <class F>
double median_seconds(const F& call, double seconds) {
  call();
  Exec().fence();
  std::vector<double> times;
  double total = 0;
  while (times.size() < 3 || total < seconds) {
    const auto start = clock_type::now();
    call();
    Exec().fence();
    times.push_back(std::chrono::duration<double>(clock_type::now() - start).count());
    total += times.back();
  }
  return analysis::median(times);
}

template <class S>
double time_gemm_as(std::size_t m, std::size_t n, std::size_t k, double seconds) {
  using Mat = typename Views<S, Exec>::Mat;
  const Mat a("pipebench::gemm_a", m, k), b("pipebench::gemm_b", k, n), c("pipebench::gemm_c", m, n);
  Kokkos::deep_copy(Exec(), a, S(0.5));
  Kokkos::deep_copy(Exec(), b, S(0.25));
  return median_seconds([&] { gemm<S>('N', 'N', S(1), a, b, S(0), c); }, seconds);
}

template <class S>
double elementwise_as(std::size_t elements, double seconds) {
  using Vec = typename Views<S, Exec>::Vec;
  const Vec x("pipebench::stream_x", elements), y("pipebench::stream_y", elements);
  Kokkos::deep_copy(Exec(), x, S(1));
  Kokkos::deep_copy(Exec(), y, S(0));
  const double t = median_seconds(
      [&] {
        Kokkos::parallel_for(
            "pipebench::stream_axpy", Kokkos::RangePolicy<Exec>(0, elements),
            KOKKOS_LAMBDA(std::size_t i) { y(i) = S(0.5) * x(i) + y(i); });
      },
      seconds);
  return 3.0 * sizeof(S) * static_cast<double>(elements) / t;
}

}  // namespace

double time_gemm(std::size_t m, std::size_t n, std::size_t k, bool fp64, double seconds) {
  return fp64 ? time_gemm_as<double>(m, n, k, seconds) : time_gemm_as<float>(m, n, k, seconds);
}

double measure_gemm_rate(int rows, int inner, int cols, bool fp64, double seconds) {
  const auto m = static_cast<std::size_t>(rows), k = static_cast<std::size_t>(inner), n = static_cast<std::size_t>(cols);
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) / time_gemm(m, n, k, fp64, seconds);
}

double measure_elementwise_bandwidth(std::size_t elements, bool fp64, double seconds) {
  return fp64 ? elementwise_as<double>(elements, seconds) : elementwise_as<float>(elements, seconds);
}

std::vector<double> gemm_sweep(const GemmSweepSpec& spec) {
  const std::size_t N = spec.sizes.size();
  std::vector<double> seconds;
  seconds.reserve(N * N * N);
  for (std::size_t m : spec.sizes)
    for (std::size_t n : spec.sizes)
      for (std::size_t k : spec.sizes) {
        seconds.push_back(time_gemm(m, n, k, spec.fp64, spec.seconds));
        if (spec.progress) spec.progress(seconds.size(), N * N * N);
      }
  return seconds;
}

}  // namespace pipebench::kernels
