#pragma once
// Strided-batched products: C_z = alpha op(A_z) op(B_z) + beta C_z for every matrix z of three stacks of
// contiguous row-major matrices ([batch, rows, cols]): the attention's per-head products over
// micro-batch x heads. One cuBLAS call (cublas<T>gemmStridedBatched) on a CUDA build with cuBLAS; on an
// OpenMP build with several threads the batch is dealt out over the threads, one single-threaded BLAS
// call per matrix (one fork and join for the whole batch, where splitting each product over the
// threads costs one per matrix and re-packs its uncut operand in every thread); elsewhere one gemm()
// per matrix. Every element is still summed by one BLAS call over the whole inner dimension, so the
// results do not depend on the path (bitwise on the host, where the same BLAS kernel runs).
#include "kernels/gemm.hpp"

#if defined(KOKKOS_ENABLE_CUDA) && defined(KOKKOSKERNELS_ENABLE_TPL_CUBLAS)
#include <KokkosBlas_tpl_spec.hpp>
#define PIPEBENCH_CUBLAS_BATCHED 1
#endif

namespace pipebench::kernels {

template <class S, class D>
using Stack = Kokkos::View<S***, Kokkos::LayoutRight, D>;

namespace detail {

#if defined(PIPEBENCH_SPLIT_HOST_GEMM)
// The batch over the OpenMP threads; false (nothing done) where gemm() per matrix is the better path.
template <class S>
bool batch_over_host_threads(bool ta, bool tb, std::size_t batch, std::size_t m, std::size_t n, std::size_t k,
                             S alpha, const S* a, std::size_t lda, const S* b, std::size_t ldb, S beta, S* c) {
  const int threads = Kokkos::OpenMP().concurrency();
  if (threads < 2 || omp_in_parallel() || blas_threads() > 1 || batch < static_cast<std::size_t>(threads)) return false;
  const double madds = static_cast<double>(batch) * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (madds < split_gemm_min_madds) return false;
  const std::size_t sa = m * k, sb = k * n, sc = m * n;
  Kokkos::Profiling::pushRegion("pipebench::gemm_batched[TPL_BLAS, over " + std::to_string(threads) + " threads]");
  Kokkos::parallel_for(
      "pipebench::gemm_batched",
      Kokkos::RangePolicy<Kokkos::OpenMP, Kokkos::Schedule<Kokkos::Static>>(0, static_cast<int>(batch)),
      [=](int z) {  // host-only: this space is OpenMP
        host_blas_gemm<S>(ta, tb, m, n, k, alpha, a + z * sa, lda, b + z * sb, ldb, beta, c + z * sc, n);
      });
  Kokkos::Profiling::popRegion();
  return true;
}
#endif

#if defined(PIPEBENCH_CUBLAS_BATCHED)
template <class S>
void cublas_strided_batched(bool ta, bool tb, int batch, int m, int n, int k, S alpha, const S* a, int lda,
                            const S* b, int ldb, S beta, S* c, const Kokkos::Cuda& space) {
  cublasHandle_t h = KokkosBlas::Impl::CudaBlasSingleton::singleton().handle;
  KOKKOSBLAS_IMPL_CUBLAS_SAFE_CALL(cublasSetStream(h, space.cuda_stream()));
  const cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const long long sa = static_cast<long long>(m) * k, sb = static_cast<long long>(k) * n,
                  sc = static_cast<long long>(m) * n;
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
  if constexpr (std::is_same_v<S, float>)
    KOKKOSBLAS_IMPL_CUBLAS_SAFE_CALL(cublasSgemmStridedBatched(h, ob, oa, n, m, k, &alpha, b, ldb, sb, a, lda, sa, &beta,
                                                           c, n, sc, batch));
  else
    KOKKOSBLAS_IMPL_CUBLAS_SAFE_CALL(cublasDgemmStridedBatched(h, ob, oa, n, m, k, &alpha, b, ldb, sb, a, lda, sa, &beta,
                                                           c, n, sc, batch));
  KOKKOSBLAS_IMPL_CUBLAS_SAFE_CALL(cublasSetStream(h, nullptr));
}
#endif

// The 16-bit batch (kernels/gemm16.hpp): one cublasGemmStridedBatchedEx on a CUDA build, else each
// matrix decoded to fp32 and multiplied by the host BLAS (the emulation).
template <class D>
void gemm_batched_16_uncounted(bool ta, bool tb, std::size_t m, std::size_t n, [[maybe_unused]] std::size_t k, float alpha,
                               const Stack16<D>& a, const Stack16<D>& b, float beta, const Stack<float, D>& c, Half h) {
  const std::size_t batch = c.extent(0);
#if defined(PIPEBENCH_CUBLAS_16)
  if constexpr (std::is_same_v<typename D::execution_space, Kokkos::Cuda>) {
    cublas_gemm_16(ta, tb, static_cast<int>(batch), static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha,
                   a.data(), static_cast<int>(a.extent(2)), static_cast<long long>(m * k), b.data(),
                   static_cast<int>(b.extent(2)), static_cast<long long>(k * n), beta, c.data(),
                   static_cast<long long>(m * n), h, Kokkos::Cuda());
    return;
  }
#endif
  using Mat = Kokkos::View<float**, Kokkos::LayoutRight, D>;
  const Stack<float, D> af = alloc<Stack<float, D>>("pipebench::gemm16_a", a.extent(0), a.extent(1), a.extent(2));
  const Stack<float, D> bf = alloc<Stack<float, D>>("pipebench::gemm16_b", b.extent(0), b.extent(1), b.extent(2));
  cast_from_16<D>(a, af, h);
  cast_from_16<D>(b, bf, h);
  const std::size_t ar = a.extent(1), ac = a.extent(2), br = b.extent(1), bc = b.extent(2);
  for (std::size_t z = 0; z < batch; ++z)
    gemm_uncounted<float, D>(ta ? 'T' : 'N', tb ? 'T' : 'N', alpha, Mat(af.data() + z * ar * ac, ar, ac),
                             Mat(bf.data() + z * br * bc, br, bc), beta, Mat(c.data() + z * m * n, m, n));
}

}  // namespace detail

// C_z = alpha op(A_z) op(B_z) + beta C_z, z over the first extent of all three stacks.
template <class S, class D>
void gemm_batched(char trans_a, char trans_b, nodeduce<S> alpha, const nodeduce<Stack<const S, D>>& a,
                  const nodeduce<Stack<const S, D>>& b, nodeduce<S> beta, const Stack<S, D>& c) {
  using Mat = Kokkos::View<S**, Kokkos::LayoutRight, D>;
  using ConstMat = Kokkos::View<const S**, Kokkos::LayoutRight, D>;
  const bool ta = trans_a == 'T', tb = trans_b == 'T';
  const std::size_t batch = c.extent(0), m = c.extent(1), n = c.extent(2), k = ta ? a.extent(1) : a.extent(2);
  if (a.extent(0) != batch || b.extent(0) != batch || (ta ? a.extent(2) : a.extent(1)) != m ||
      (tb ? b.extent(2) : b.extent(1)) != k || (tb ? b.extent(1) : b.extent(2)) != n)
    throw Error("internal error: batched gemm shapes do not match (batch " + std::to_string(batch) + ", C " +
                std::to_string(m) + "x" + std::to_string(n) + ", inner " + std::to_string(k) + ")");
  if (batch == 0 || m == 0 || n == 0) return;
  if (GemmTally* tally = gemm_tally())
    for (std::size_t z = 0; z < batch; ++z) tally->products.push_back({m, n, k});
  if constexpr (std::is_same_v<S, float>) {
    if (const Half h = products_16(); h != Half::none) {  // autocast, as gemm() does
      const Stack16<D> a16 = alloc<Stack16<D>>("pipebench::autocast16_a", a.extent(0), a.extent(1), a.extent(2));
      const Stack16<D> b16 = alloc<Stack16<D>>("pipebench::autocast16_b", b.extent(0), b.extent(1), b.extent(2));
      cast_to_16<D>(a, a16, h);
      cast_to_16<D>(b, b16, h);
      return detail::gemm_batched_16_uncounted<D>(ta, tb, m, n, k, alpha, a16, b16, beta, c, h);
    }
  }
  [[maybe_unused]] const std::size_t lda = a.extent(2), ldb = b.extent(2);
#if defined(PIPEBENCH_SPLIT_HOST_GEMM)
  if constexpr (std::is_same_v<typename D::execution_space, Kokkos::OpenMP>)
    if (k && detail::batch_over_host_threads<S>(ta, tb, batch, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta,
                                               c.data()))
      return;
#endif
#if defined(PIPEBENCH_CUBLAS_BATCHED)
  if constexpr (std::is_same_v<typename D::execution_space, Kokkos::Cuda> &&
                (std::is_same_v<S, float> || std::is_same_v<S, double>)) {
    if (k) {
      detail::cublas_strided_batched<S>(ta, tb, static_cast<int>(batch), static_cast<int>(m), static_cast<int>(n),
                                        static_cast<int>(k), alpha, a.data(), static_cast<int>(lda), b.data(),
                                        static_cast<int>(ldb), beta, c.data(), typename D::execution_space());
      return;
    }
  }
#endif
  const std::size_t ar = a.extent(1), ac = a.extent(2), br = b.extent(1), bc = b.extent(2);
  for (std::size_t z = 0; z < batch; ++z)
    detail::gemm_uncounted<S, D>(trans_a, trans_b, alpha, ConstMat(a.data() + z * ar * ac, ar, ac),
                                 ConstMat(b.data() + z * br * bc, br, bc), beta, Mat(c.data() + z * m * n, m, n));
}

}  // namespace pipebench::kernels
