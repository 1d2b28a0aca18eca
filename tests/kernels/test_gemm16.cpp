// 16-bit products with fp32 accumulation (kernels/gemm16.hpp, gemm.hpp's gemm_16 and Products16): on a
// host build the emulation (16-bit values decoded, host sgemm), on a CUDA build cuBLAS's cublasGemmEx on
// the tensor cores (jobs/gpu-check.sh runs these tests on the device; the Device test skips without one).
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include "comm/float16.hpp"
#include "kernels/device.hpp"
#include "kernels/gemm_batched.hpp"
#include "helpers.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

namespace pipebench::kernels::test {
namespace {

using D = VF::Device;
using M16 = Mat16<D>;

float decoded(std::uint16_t x, Half h) { return h == Half::bf16 ? comm::from_bf16(x) : comm::from_half(x); }

struct Case {
  std::size_t m, n, k;
  char ta, tb;
};

// op(X)(i, p) of a row-major [r, c] matrix stored in x.
double at(const std::vector<double>& x, std::size_t cols, bool t, std::size_t i, std::size_t p) {
  return t ? x[p * cols + i] : x[i * cols + p];
}

// The bound of a sum of k products each exact (16-bit values multiply exactly in fp32's 24 bits) summed
// in fp32 in any order: |error| <= gamma_(k) sum |a||b|, gamma_k = k u / (1 - k u), u = 2^-24 (Higham,
// "Accuracy and Stability of Numerical Algorithms", 2nd ed., eq. 3.5), plus fp32's rounding of C itself.
double fp32_sum_bound(std::size_t k, double abs_sum) {
  const double ku = static_cast<double>(k + 1) * std::ldexp(1.0, -24);
  return ku / (1 - ku) * abs_sum + 1e-30;
}

TEST(Gemm16, SumsTheSixteenBitValuesInFp32) {
  for (Half h : {Half::bf16, Half::fp16})
    for (const Case cs : {Case{33, 17, 65, 'N', 'N'}, Case{16, 40, 24, 'T', 'N'}, Case{20, 12, 48, 'N', 'T'}}) {
      const std::size_t ar = cs.ta == 'T' ? cs.k : cs.m, ac = cs.ta == 'T' ? cs.m : cs.k;
      const std::size_t br = cs.tb == 'T' ? cs.n : cs.k, bc = cs.tb == 'T' ? cs.k : cs.n;
      const auto a = random_view(VF::Mat("a", ar, ac), 1, 1.0);
      const auto b = random_view(VF::Mat("b", br, bc), 2, 1.0);
      const auto c = random_view(VF::Mat("c", cs.m, cs.n), 3, 1.0);
      const std::vector<double> c0 = host(c);
      const M16 a16("a16", ar, ac), b16("b16", br, bc);
      cast_to_16<D>(a, a16, h);
      cast_to_16<D>(b, b16, h);
      gemm_16<D>(cs.ta, cs.tb, 0.5f, a16, b16, 2.0f, c, h);
      const auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a16);
      const auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b16);
      std::vector<double> av(ha.span()), bv(hb.span());
      for (std::size_t i = 0; i < av.size(); ++i) av[i] = decoded(ha.data()[i], h);
      for (std::size_t i = 0; i < bv.size(); ++i) bv[i] = decoded(hb.data()[i], h);
      const std::vector<double> got = host(c), a_full = host(a);
      double rounding = 0;  // the 16-bit values are not the fp32 ones: the rounding is there
      for (std::size_t i = 0; i < av.size(); ++i) {
        rounding = std::max(rounding, std::abs(av[i] - a_full[i]));
        const float x = static_cast<float>(a_full[i]);  // the nearest 16-bit value (comm/float16.hpp's)
        ASSERT_EQ(ha.data()[i], h == Half::bf16 ? comm::to_bf16(x) : comm::to_half(x)) << "element " << i;
      }
      EXPECT_GT(rounding, std::ldexp(1.0, -13));
      for (std::size_t i = 0; i < cs.m; ++i)
        for (std::size_t j = 0; j < cs.n; ++j) {
          double ref = 0, abs_sum = 0;
          for (std::size_t p = 0; p < cs.k; ++p) {
            const double x = at(av, ac, cs.ta == 'T', i, p) * at(bv, bc, cs.tb == 'T', p, j);
            ref += x;
            abs_sum += std::abs(x);
          }
          ref = 0.5 * ref + 2.0 * c0[i * cs.n + j];
          ASSERT_NEAR(got[i * cs.n + j], ref, fp32_sum_bound(cs.k, 0.5 * abs_sum + 2 * std::abs(c0[i * cs.n + j])))
              << (h == Half::bf16 ? "bf16 " : "fp16 ") << cs.ta << cs.tb << " at " << i << "," << j;
        }
    }
}

// gemm() inside Products16: its operands rounded to 16 bits, then gemm_16 (the same call: bitwise).
TEST(Gemm16, ProductsScopeSendsFp32ProductsThroughTheSixteenBitPath) {
  const Half h = Half::bf16;
  const auto a = random_view(VF::Mat("a", 24, 40), 4, 1.0);
  const auto b = random_view(VF::Mat("b", 40, 16), 5, 1.0);
  const VF::Mat c("c", 24, 16), c16("c16", 24, 16), c32("c32", 24, 16);
  {
    Products16 scope(h);
    gemm('N', 'N', 1.0f, a, b, 0.0f, c);
  }
  EXPECT_EQ(products_16(), Half::none);  // the scope restores
  const M16 a16("a16", 24, 40), b16("b16", 40, 16);
  cast_to_16<D>(a, a16, h);
  cast_to_16<D>(b, b16, h);
  gemm_16<D>('N', 'N', 1.0f, a16, b16, 0.0f, c16, h);
  gemm('N', 'N', 1.0f, a, b, 0.0f, c32);
  const std::vector<double> got = host(c), want = host(c16), full = host(c32);
  EXPECT_EQ(got, want);
  EXPECT_NE(got, full) << "the scope changed nothing";
  // fp64 products stay fp64 inside the scope.
  const auto ad = random_view(VD::Mat("ad", 8, 8), 6, 1.0);
  const VD::Mat cd("cd", 8, 8), cd_ref("cd_ref", 8, 8);
  {
    Products16 scope(h);
    gemm('N', 'N', 1.0, ad, ad, 0.0, cd);
  }
  gemm('N', 'N', 1.0, ad, ad, 0.0, cd_ref);
  EXPECT_EQ(host(cd), host(cd_ref));
}

// The attention's strided-batched products inside the scope: each matrix as its own 16-bit product.
TEST(Gemm16, BatchedProductsInTheScopeMatchOneProductPerMatrix) {
  const Half h = Half::fp16;
  constexpr std::size_t z = 3, m = 12, n = 10, k = 20;
  using St = Stack<float, D>;
  const auto a = random_view(St("a", z, m, k), 7, 1.0);
  const auto b = random_view(St("b", z, n, k), 8, 1.0);  // used transposed, as Q K^T
  const St c("c", z, m, n);
  {
    Products16 scope(h);
    gemm_batched('N', 'T', 1.0f, a, b, 0.0f, c);
  }
  const std::vector<double> got = host(c);
  for (std::size_t i = 0; i < z; ++i) {
    const VF::Mat ai(a.data() + i * m * k, m, k), bi(b.data() + i * n * k, n, k), ci("ci", m, n);
    {
      Products16 scope(h);
      gemm('N', 'T', 1.0f, ai, bi, 0.0f, ci);
    }
    const std::vector<double> want = host(ci);
    for (std::size_t e = 0; e < m * n; ++e)  // one cuBLAS batch may sum in another order than one product
      ASSERT_NEAR(got[i * m * n + e], want[e], fp32_sum_bound(k, 2.0 * k)) << "matrix " << i << " element " << e;
  }
}

// What `info` names, and on a GPU the tensor-core path at a size where it matters.
TEST(Gemm16, PathMatchesTheBuild) {
  const std::string path = gemm16_path();
  if (!device_build()) {
    EXPECT_NE(path.find("host emulation"), std::string::npos) << path;
    return;
  }
  EXPECT_NE(path.find("cuBLAS"), std::string::npos) << path;
  const DeviceInfo d = device_info();
  if (d.count < 1) GTEST_SKIP() << "no usable device (" << d.space << ": " << d.error << ")";
  constexpr std::size_t n = 1024;
  const auto a = random_view(VF::Mat("a", n, n), 9, 1.0);
  const VF::Mat c("c", n, n), c32("c32", n, n);
  {
    Products16 scope(Half::bf16);
    gemm('N', 'T', 1.0f, a, a, 0.0f, c);
  }
  gemm('N', 'T', 1.0f, a, a, 0.0f, c32);
  const std::vector<double> got = host(c), full = host(c32);
  double worst = 0;  // bf16's 8 bits: relative error about 2^-8 per operand on the diagonal's n/3
  for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(got[i * n + i] - full[i * n + i]) / full[i * n + i]);
  EXPECT_GT(worst, 0.0);
  EXPECT_LT(worst, std::ldexp(1.0, -6));
}

}  // namespace
}  // namespace pipebench::kernels::test
