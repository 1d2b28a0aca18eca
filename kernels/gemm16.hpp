#pragma once
// 16-bit products with fp32 accumulation (issue 25: tensor-core GEMMs): bfloat16 or IEEE half operands,
// fp32 C, every product summed in fp32. On a CUDA build with cuBLAS one cublasGemmEx (or
// cublasGemmStridedBatchedEx) with CUDA_R_16BF / CUDA_R_16F inputs, a CUDA_R_32F output and
// CUBLAS_COMPUTE_32F, which cuBLAS runs on the tensor cores (cuBLAS documentation, "cublasGemmEx": with
// CUBLAS_COMPUTE_32F and 16-bit A and B, CUBLAS_GEMM_DEFAULT may use tensor-core kernels since CUDA 11,
// no math-mode opt-in needed). Elsewhere (host builds) the emulation: the 16-bit values decoded to fp32
// and multiplied by the host BLAS's sgemm, which sums in fp32 as well (no tensor cores: a reference, not
// a speed). The values are uint16_t bit patterns (comm/float16.hpp's), so the same views serve every
// backend and Kokkos version. gemm.hpp holds the products themselves (gemm_16, gemm_batched_16 in
// gemm_batched.hpp) and the Products16 scope that sends fp32 gemm() calls through them.
#include <Kokkos_Core.hpp>
#include <KokkosKernels_config.h>

#include <cstdint>
#include <string>

#include "comm/float16.hpp"
#include "kernels/precision.hpp"

#if defined(KOKKOS_ENABLE_CUDA) && defined(KOKKOSKERNELS_ENABLE_TPL_CUBLAS)
#include <KokkosBlas_tpl_spec.hpp>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define PIPEBENCH_CUBLAS_16 1
#endif

namespace pipebench::kernels {

template <class D>
using Mat16 = Kokkos::View<std::uint16_t**, Kokkos::LayoutRight, D>;
template <class D>
using Stack16 = Kokkos::View<std::uint16_t***, Kokkos::LayoutRight, D>;

// Where the 16-bit products of this build run, for `pipebench info` and bench_kernels' context.
inline std::string gemm16_path() {
#if defined(PIPEBENCH_CUBLAS_16)
  return "cuBLAS cublasGemmEx / cublasGemmStridedBatchedEx, bf16|fp16 in, fp32 out, CUBLAS_COMPUTE_32F (tensor cores)";
#else
  return "host emulation: 16-bit values decoded to fp32, host BLAS sgemm (fp32 sums, no tensor cores)";
#endif
}

namespace detail {

// Round to nearest even, overflow to infinity. On a CUDA build the vendor's conversions (host and
// device functions, the same rounding on finite values); on the host the one home of the rounding,
// comm/float16.hpp.
KOKKOS_INLINE_FUNCTION std::uint16_t encode16(float x, bool bf16) {
#if defined(PIPEBENCH_CUBLAS_16)
  return bf16 ? __bfloat16_as_ushort(__float2bfloat16_rn(x)) : __half_as_ushort(__float2half_rn(x));
#else
  return bf16 ? comm::to_bf16(x) : comm::to_half(x);
#endif
}
KOKKOS_INLINE_FUNCTION float decode16(std::uint16_t x, bool bf16) {
#if defined(PIPEBENCH_CUBLAS_16)
  return bf16 ? __bfloat162float(__ushort_as_bfloat16(x)) : __half2float(__ushort_as_half(x));
#else
  return bf16 ? comm::from_bf16(x) : comm::from_half(x);
#endif
}

#if defined(PIPEBENCH_CUBLAS_16)
// Row-major C [m, n] = alpha op(A) op(B) + beta C for `batch` matrices `s*` elements apart (0 for one
// product): column-major C^T = op(B)^T op(A)^T, so cuBLAS gets B first (as gemm_batched.hpp's fp32 path).
inline void cublas_gemm_16(bool ta, bool tb, int batch, int m, int n, int k, float alpha, const std::uint16_t* a,
                           int lda, long long sa, const std::uint16_t* b, int ldb, long long sb, float beta, float* c,
                           long long sc, Half h, const Kokkos::Cuda& space) {
  cublasHandle_t handle = KokkosBlas::Impl::CudaBlasSingleton::singleton().handle;
  KOKKOSBLAS_IMPL_CUBLAS_SAFE_CALL(cublasSetStream(handle, space.cuda_stream()));
  const cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cudaDataType_t t = h == Half::bf16 ? CUDA_R_16BF : CUDA_R_16F;
  if (batch == 1)
    KOKKOSBLAS_IMPL_CUBLAS_SAFE_CALL(cublasGemmEx(handle, ob, oa, n, m, k, &alpha, b, t, ldb, a, t, lda, &beta, c,
                                                  CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  else
    KOKKOSBLAS_IMPL_CUBLAS_SAFE_CALL(cublasGemmStridedBatchedEx(handle, ob, oa, n, m, k, &alpha, b, t, ldb, sb, a, t,
                                                                lda, sa, &beta, c, CUDA_R_32F, n, sc, batch,
                                                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  KOKKOSBLAS_IMPL_CUBLAS_SAFE_CALL(cublasSetStream(handle, nullptr));
}
#endif

}  // namespace detail

// out[i] = 16-bit x[i], over the whole span of two views of the same size (any rank, contiguous).
template <class D, class X, class O>
void cast_to_16(const X& x, const O& out, Half h) {
  using E = typename D::execution_space;
  const float* xp = x.data();
  std::uint16_t* op = out.data();
  const bool bf = h == Half::bf16;
  Kokkos::parallel_for(
      "pipebench::cast_to_16", Kokkos::RangePolicy<E>(0, x.span()),
      KOKKOS_LAMBDA(std::size_t i) { op[i] = detail::encode16(xp[i], bf); });
}

// out[i] = float x[i] (exact: every 16-bit value is a float).
template <class D, class X, class O>
void cast_from_16(const X& x, const O& out, Half h) {
  using E = typename D::execution_space;
  const std::uint16_t* xp = x.data();
  float* op = out.data();
  const bool bf = h == Half::bf16;
  Kokkos::parallel_for(
      "pipebench::cast_from_16", Kokkos::RangePolicy<E>(0, x.span()),
      KOKKOS_LAMBDA(std::size_t i) { op[i] = detail::decode16(xp[i], bf); });
}

}  // namespace pipebench::kernels
