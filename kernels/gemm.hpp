#pragma once
// Matrix products through KokkosBlas::gemm. The signature only accepts contiguous LayoutRight views,
// which is the layout KokkosKernels hands to the vendor BLAS (OpenBLAS, MKL, cuBLAS): a strided subview
// either fails to convert here or, if it were passed straight to KokkosBlas, would run the slow native
// kernel without a word. tests/kernels checks through Kokkos' profiling regions that every product of a
// block takes the TPL path.
#include <KokkosBlas3_gemm.hpp>

#include "analysis/error.hpp"
#include "kernels/gemm16.hpp"
#include "kernels/views.hpp"

#include <string>
#include <type_traits>
#include <vector>

#if defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
#include <KokkosBlas_Host_tpl.hpp>
#endif

#if defined(KOKKOS_ENABLE_OPENMP) && defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
#include <omp.h>

#include "kernels/host_tuning.hpp"

#include <algorithm>
#define PIPEBENCH_SPLIT_HOST_GEMM 1
#endif

namespace pipebench::kernels {

template <class T>
struct same_type {
  using type = T;
};
// Non-deduced: S and D come from C alone, so A and B may be passed as non-const views.
template <class T>
using nodeduce = typename same_type<T>::type;

#if defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
// One call of the host BLAS on row-major operands: C [m, n] (row stride ldc) = alpha op(A) op(B) + beta C
// is the column-major C^T = op(B)^T op(A)^T, so the BLAS gets B first.
template <class S>
void host_blas_gemm(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, S alpha, const S* a, std::size_t lda,
                    const S* b, std::size_t ldb, S beta, S* c, std::size_t ldc) {
  const auto i = [](std::size_t x) { return static_cast<int>(x); };
  KokkosBlas::Impl::HostBlas<S>::gemm(tb ? 'T' : 'N', ta ? 'T' : 'N', i(n), i(m), i(k), alpha, b, i(ldb), a, i(lda), beta,
                                      c, i(ldc));
}
#endif

#if defined(PIPEBENCH_SPLIT_HOST_GEMM)
// Products at least this large (multiply-adds, some 20 us on one core) are split over the OpenMP threads;
// smaller ones stay one call, where a fork and join (microseconds) would be a visible share. A round
// figure, not tuned: the block's products are all far above it.
constexpr double split_gemm_min_madds = 1 << 20;

// One product on an OpenMP backend, split over its threads, each calling the BLAS with one thread.
// Why: the host BLAS (OpenBLAS's pthreads build, Debian's default) keeps a thread pool of its own whose
// threads keep polling for about 0.1 s after each call (2^28 cycles: THREAD_TIMEOUT in OpenBLAS's
// driver/others/blas_server.c), while GNU OpenMP's threads spin a while after each Kokkos kernel
// unless OMP_WAIT_POLICY=passive. A block alternates products and element-wise kernels every
// millisecond or so (per attention head), so the two pools took turns starving each other on the same
// cores: the block's F+I+W ran 1.1x faster on 2 threads where its products alone ran 1.9x faster
// (docs/gpu.md, "Threads on the OpenMP backend"). One pool (OpenMP's) now runs everything.
// C is cut into one block of rows or columns per thread, whichever duplicates less packing (each thread
// packs all of the operand it does not cut). No reduction crosses threads: every element is summed over
// the whole inner dimension by one single-threaded BLAS call, so the results are deterministic for a
// given number of threads.
// Returns false (nothing done) where the product should go to KokkosBlas as one call: one OpenMP
// thread, already inside a parallel region, a BLAS that runs several threads itself, or a small product.
template <class S>
bool split_host_gemm(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, S alpha, const S* a,
                     std::size_t lda, const S* b, std::size_t ldb, S beta, S* c, std::size_t ldc) {
  const int threads = Kokkos::OpenMP().concurrency();
  if (threads < 2 || omp_in_parallel() || blas_threads() > 1) return false;
  if (static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) < split_gemm_min_madds) return false;
  // Cutting rows of C re-packs op(B) [k, n] in every thread, cutting columns re-packs op(A) [m, k].
  const bool rows = n <= m;
  const std::size_t extent = rows ? m : n;
  const std::size_t parts = std::min<std::size_t>(static_cast<std::size_t>(threads), extent);
  Kokkos::Profiling::pushRegion("pipebench::gemm[TPL_BLAS, split over " + std::to_string(parts) + " threads]");
  const auto blas = [=](std::size_t mm, std::size_t nn, const S* ap, const S* bp, S* cp) {
    host_blas_gemm<S>(ta, tb, mm, nn, k, alpha, ap, lda, bp, ldb, beta, cp, ldc);
  };
  Kokkos::parallel_for(
      "pipebench::gemm_split",
      Kokkos::RangePolicy<Kokkos::OpenMP, Kokkos::Schedule<Kokkos::Static>>(0, static_cast<int>(parts)),
      [=](int p) {  // host-only: this space is OpenMP
        const std::size_t lo = extent * static_cast<std::size_t>(p) / parts;
        const std::size_t hi = extent * static_cast<std::size_t>(p + 1) / parts;
        if (rows)  // rows lo..hi of op(A): rows of A, or columns of A when transposed
          blas(hi - lo, n, a + lo * (ta ? 1 : lda), b, c + lo * ldc);
        else       // columns lo..hi of op(B): columns of B, or rows of B when transposed
          blas(m, hi - lo, a, b + lo * (tb ? ldb : 1), c + lo);
      });
  Kokkos::Profiling::popRegion();
  return true;
}
#endif

// What the products through gemm() perform, for a test to hold against the cost model
// (tests/kernels/test_model_figures.cpp): while a GemmTally is installed on this thread (CountGemms),
// gemm() records each product's m x n x k and column_sum_accumulate() (bias and LayerNorm gradients,
// element-wise work the model does not count) its FLOPs apart. Otherwise one pointer test per product.
struct GemmTally {
  struct Product {
    std::size_t m, n, k;  // C [m, n] += op(A) [m, k] op(B) [k, n]
    double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k); }
  };
  std::vector<Product> products;
  double reductions = 0;
};
inline GemmTally*& gemm_tally() {
  static thread_local GemmTally* tally = nullptr;
  return tally;
}
class CountGemms {
 public:
  explicit CountGemms(GemmTally& t) : previous_(gemm_tally()) { gemm_tally() = &t; }
  ~CountGemms() { gemm_tally() = previous_; }
  CountGemms(const CountGemms&) = delete;
  CountGemms& operator=(const CountGemms&) = delete;

 private:
  GemmTally* previous_;
};

namespace detail {

template <class S, class D>
void gemm_uncounted(char trans_a, char trans_b, S alpha, const Kokkos::View<const S**, Kokkos::LayoutRight, D>& a,
                    const Kokkos::View<const S**, Kokkos::LayoutRight, D>& b, S beta,
                    const Kokkos::View<S**, Kokkos::LayoutRight, D>& c) {
  const bool ta = trans_a == 'T', tb = trans_b == 'T';
  const std::size_t m = ta ? a.extent(1) : a.extent(0), ka = ta ? a.extent(0) : a.extent(1);
  const std::size_t kb = tb ? b.extent(1) : b.extent(0), n = tb ? b.extent(0) : b.extent(1);
  // KokkosBlas only checks shapes in debug builds of KokkosKernels: a mismatch would corrupt memory.
  if (ka != kb || m != c.extent(0) || n != c.extent(1))
    throw Error("internal error: gemm shapes do not match (op(A) " + std::to_string(m) + "x" +
                std::to_string(ka) + ", op(B) " + std::to_string(kb) + "x" + std::to_string(n) + ", C " +
                std::to_string(c.extent(0)) + "x" + std::to_string(c.extent(1)) + ")");
#if defined(PIPEBENCH_SPLIT_HOST_GEMM)
  if constexpr (std::is_same_v<typename D::execution_space, Kokkos::OpenMP>) {
    const auto ld = [](const auto& v) { return std::max<std::size_t>(v.stride(0), 1); };  // row stride
    if (m && n && ka &&
        split_host_gemm<S>(ta, tb, m, n, ka, alpha, a.data(), ld(a), b.data(), ld(b), beta, c.data(), ld(c)))
      return;
  }
#endif
  const char ops[2][2] = {{'N', '\0'}, {'T', '\0'}};
  KokkosBlas::gemm(ops[ta], ops[tb], alpha, a, b, beta, c);
}

// 16-bit products (kernels/gemm16.hpp): C fp32 = alpha op(A) op(B) + beta C, A and B 16-bit bit patterns.
template <class D>
void gemm_16_uncounted(char trans_a, char trans_b, float alpha, const Kokkos::View<const std::uint16_t**, Kokkos::LayoutRight, D>& a,
                       const Kokkos::View<const std::uint16_t**, Kokkos::LayoutRight, D>& b, float beta,
                       const Kokkos::View<float**, Kokkos::LayoutRight, D>& c, Half h) {
  using Mat = Kokkos::View<float**, Kokkos::LayoutRight, D>;
  const bool ta = trans_a == 'T', tb = trans_b == 'T';
  const std::size_t m = ta ? a.extent(1) : a.extent(0), k = ta ? a.extent(0) : a.extent(1);
  if ((tb ? b.extent(1) : b.extent(0)) != k || m != c.extent(0) || (tb ? b.extent(0) : b.extent(1)) != c.extent(1))
    throw Error("internal error: 16-bit gemm shapes do not match (op(A) " + std::to_string(m) + "x" + std::to_string(k) +
                ", C " + std::to_string(c.extent(0)) + "x" + std::to_string(c.extent(1)) + ")");
#if defined(PIPEBENCH_CUBLAS_16)
  if constexpr (std::is_same_v<typename D::execution_space, Kokkos::Cuda>) {
    if (m && c.extent(1))  // k = 0: cuBLAS scales C by beta
      cublas_gemm_16(ta, tb, 1, static_cast<int>(m), static_cast<int>(c.extent(1)), static_cast<int>(k), alpha,
                     a.data(), static_cast<int>(a.extent(1)), 0, b.data(), static_cast<int>(b.extent(1)), 0, beta,
                     c.data(), 0, h, Kokkos::Cuda());
    return;
  }
#endif
  // The emulation: the 16-bit values as floats, one fp32 product.
  const Mat af = alloc<Mat>("pipebench::gemm16_a", a.extent(0), a.extent(1));
  const Mat bf = alloc<Mat>("pipebench::gemm16_b", b.extent(0), b.extent(1));
  cast_from_16<D>(a, af, h);
  cast_from_16<D>(b, bf, h);
  gemm_uncounted<float, D>(trans_a, trans_b, alpha, af, bf, beta, c);
}

// gemm()'s fp32 product inside a Products16 scope: A and B rounded to 16 bits on the way in (PyTorch's
// autocast does the same to matmul's operands), then the 16-bit product.
template <class D>
void gemm_autocast_16(char trans_a, char trans_b, float alpha, const Kokkos::View<const float**, Kokkos::LayoutRight, D>& a,
                      const Kokkos::View<const float**, Kokkos::LayoutRight, D>& b, float beta,
                      const Kokkos::View<float**, Kokkos::LayoutRight, D>& c, Half h) {
  using M16 = Mat16<D>;
  const M16 a16 = alloc<M16>("pipebench::autocast16_a", a.extent(0), a.extent(1));
  const M16 b16 = alloc<M16>("pipebench::autocast16_b", b.extent(0), b.extent(1));
  cast_to_16<D>(a, a16, h);
  cast_to_16<D>(b, b16, h);
  gemm_16_uncounted<D>(trans_a, trans_b, alpha, a16, b16, beta, c, h);
}

}  // namespace detail

// Inside this scope (one thread's), the fp32 products of gemm() and gemm_batched() run as 16-bit
// products with fp32 accumulation: the block's matrix products on tensor cores on a CUDA build
// (bench_kernels' block/FIW_vs_gemm16), everything else (element-wise kernels, softmax, the fused
// attention, the column sums of the bias gradients) stays fp32.
inline Half& products_16() {
  static thread_local Half h = Half::none;
  return h;
}
class Products16 {
 public:
  explicit Products16(Half h) : previous_(products_16()) { products_16() = h; }
  ~Products16() { products_16() = previous_; }
  Products16(const Products16&) = delete;
  Products16& operator=(const Products16&) = delete;

 private:
  Half previous_;
};

// C fp32 = alpha op(A) op(B) + beta C with 16-bit A and B (kernels/gemm16.hpp).
template <class D>
void gemm_16(char trans_a, char trans_b, float alpha, const nodeduce<Kokkos::View<const std::uint16_t**, Kokkos::LayoutRight, D>>& a,
             const nodeduce<Kokkos::View<const std::uint16_t**, Kokkos::LayoutRight, D>>& b, float beta,
             const Kokkos::View<float**, Kokkos::LayoutRight, D>& c, Half h) {
  if (GemmTally* tally = gemm_tally())
    tally->products.push_back({c.extent(0), c.extent(1), trans_a == 'T' ? a.extent(0) : a.extent(1)});
  detail::gemm_16_uncounted<D>(trans_a, trans_b, alpha, a, b, beta, c, h);
}

// C = alpha * op(A) op(B) + beta * C, op = 'N' or 'T'.
template <class S, class D>
void gemm(char trans_a, char trans_b, nodeduce<S> alpha,
          const nodeduce<Kokkos::View<const S**, Kokkos::LayoutRight, D>>& a,
          const nodeduce<Kokkos::View<const S**, Kokkos::LayoutRight, D>>& b, nodeduce<S> beta,
          const Kokkos::View<S**, Kokkos::LayoutRight, D>& c) {
  if (GemmTally* tally = gemm_tally())
    tally->products.push_back({c.extent(0), c.extent(1), trans_a == 'T' ? a.extent(0) : a.extent(1)});
  if constexpr (std::is_same_v<S, float>)
    if (const Half h = products_16(); h != Half::none) return detail::gemm_autocast_16<D>(trans_a, trans_b, alpha, a, b, beta, c, h);
  detail::gemm_uncounted<S, D>(trans_a, trans_b, alpha, a, b, beta, c);
}

// db[j] += sum_i dy(i, j): bias and LayerNorm gradients. A product with a row of ones keeps the column
// reduction in the BLAS (fast and deterministic on every backend) instead of a strided loop.
template <class S, class D>
void column_sum_accumulate(const nodeduce<Kokkos::View<const S**, Kokkos::LayoutRight, D>>& dy,
                           const Kokkos::View<S*, Kokkos::LayoutRight, D>& db) {
  using Mat = Kokkos::View<S**, Kokkos::LayoutRight, D>;
  const Mat ones = alloc<Mat>("pipebench::ones", 1, dy.extent(0));
  Kokkos::deep_copy(typename D::execution_space(), ones, S(1));
  if (GemmTally* tally = gemm_tally()) tally->reductions += 2.0 * static_cast<double>(dy.extent(0) * dy.extent(1));
  detail::gemm_uncounted<S, D>('N', 'N', S(1), ones, dy, S(1), Mat(db.data(), 1, db.extent(0)));
}

}  // namespace pipebench::kernels
