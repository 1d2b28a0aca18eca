// kernels/gemm.hpp against a direct host product, for every transposition and for shapes that cut C by
// rows, by columns and into uneven parts. On an OpenMP backend with several threads these products are
// large enough to be split over the threads (split_host_gemm), and the test checks through Kokkos'
// profiling regions that they were; elsewhere it checks the single BLAS call.
#include "helpers.hpp"

#include "kernels/gemm.hpp"
#include "kernels/host_tuning.hpp"

#include <string>
#include <tuple>
#include <type_traits>

namespace pipebench::kernels::test {
namespace {

std::vector<std::string>* split_regions = nullptr;

void on_push_region(const char* name) {
  if (split_regions && std::string(name).rfind("pipebench::gemm[", 0) == 0) split_regions->push_back(name);
}

bool split_expected() {
#if defined(PIPEBENCH_SPLIT_HOST_GEMM)
  return std::is_same_v<Exec, Kokkos::OpenMP> && Exec().concurrency() > 1 && blas_threads() <= 1;
#else
  return false;
#endif
}

// C = alpha op(A) op(B) + beta C in double on the host, from row-major A, B, C.
std::vector<double> reference(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, double alpha,
                              const std::vector<double>& a, const std::vector<double>& b, double beta,
                              std::vector<double> c) {
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::size_t l = 0; l < k; ++l) s += (ta ? a[l * m + i] : a[i * k + l]) * (tb ? b[j * k + l] : b[l * n + j]);
      c[i * n + j] = alpha * s + beta * c[i * n + j];
    }
  return c;
}

TEST(Gemm, EveryTranspositionAndCutMatchesTheDirectProduct) {
  std::vector<std::string> seen;
  split_regions = &seen;
  Kokkos::Tools::Experimental::set_push_region_callback(on_push_region);
  // (m, n, k), each with m n k >= split_gemm_min_madds: n > m cuts columns, n <= m rows; odd extents
  // make uneven parts; m = 1 is column_sum_accumulate's shape.
  const std::vector<std::tuple<std::size_t, std::size_t, std::size_t>> shapes = {
      {96, 160, 128}, {160, 96, 128}, {97, 131, 101}, {1, 4099, 300}};
  int calls = 0;
  std::uint64_t seed = 1;
  for (const auto& [m, n, k] : shapes)
    for (const bool ta : {false, true})
      for (const bool tb : {false, true}) {
        const VD::Mat a = random_view(ta ? VD::Mat("a", k, m) : VD::Mat("a", m, k), seed++, 1.0);
        const VD::Mat b = random_view(tb ? VD::Mat("b", n, k) : VD::Mat("b", k, n), seed++, 1.0);
        const VD::Mat c = random_view(VD::Mat("c", m, n), seed++, 1.0);
        const auto want = reference(ta, tb, m, n, k, 1.5, host(a), host(b), 0.5, host(c));
        gemm(ta ? 'T' : 'N', tb ? 'T' : 'N', 1.5, a, b, 0.5, c);
        ++calls;
        const std::string what = "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" +
                                  std::to_string(k) + " op=" + (ta ? "T" : "N") + (tb ? "T" : "N");
        expect_close(host(c), want, 1e-13, what.c_str());
      }
  Kokkos::Tools::Experimental::set_push_region_callback(nullptr);
  split_regions = nullptr;
  EXPECT_EQ(seen.size(), split_expected() ? static_cast<std::size_t>(calls) : 0u);
}

TEST(Gemm, ABlasWithThreadsOfItsOwnGetsTheProductWhole) {
  if (!set_blas_threads(2)) GTEST_SKIP() << "the BLAS has no thread control";
  std::vector<std::string> seen;
  split_regions = &seen;
  Kokkos::Tools::Experimental::set_push_region_callback(on_push_region);
  const VD::Mat a = random_view(VD::Mat("a", 128, 128), 1, 1.0), b = random_view(VD::Mat("b", 128, 128), 2, 1.0);
  const VD::Mat c("c", 128, 128);
  gemm('N', 'N', 1.0, a, b, 0.0, c);
  Kokkos::Tools::Experimental::set_push_region_callback(nullptr);
  split_regions = nullptr;
  set_blas_threads(1);  // as the test environment left it
  EXPECT_TRUE(seen.empty());
  expect_close(host(c), reference(false, false, 128, 128, 128, 1.0, host(a), host(b), 0.0, host(c)), 1e-13, "c");
}

}  // namespace
}  // namespace pipebench::kernels::test
