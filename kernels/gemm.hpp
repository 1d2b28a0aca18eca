#pragma once
// Matrix products through KokkosBlas::gemm. The signature only accepts contiguous LayoutRight views,
// which is the layout KokkosKernels hands to the vendor BLAS (OpenBLAS, MKL, cuBLAS): a strided subview
// either fails to convert here or, if it were passed straight to KokkosBlas, would run the slow native
// kernel without a word. tests/kernels checks through Kokkos' profiling regions that every product of a
// block takes the TPL path.
#include <KokkosBlas3_gemm.hpp>

#include "analysis/error.hpp"
#include "kernels/views.hpp"

#include <string>

namespace pipebench::kernels {

template <class T>
struct same_type {
  using type = T;
};
// Non-deduced: S and D come from C alone, so A and B may be passed as non-const views.
template <class T>
using nodeduce = typename same_type<T>::type;

// C = alpha * op(A) op(B) + beta * C, op = 'N' or 'T'.
template <class S, class D>
void gemm(char trans_a, char trans_b, nodeduce<S> alpha,
          const nodeduce<Kokkos::View<const S**, Kokkos::LayoutRight, D>>& a,
          const nodeduce<Kokkos::View<const S**, Kokkos::LayoutRight, D>>& b, nodeduce<S> beta,
          const Kokkos::View<S**, Kokkos::LayoutRight, D>& c) {
  const bool ta = trans_a == 'T', tb = trans_b == 'T';
  const std::size_t m = ta ? a.extent(1) : a.extent(0), ka = ta ? a.extent(0) : a.extent(1);
  const std::size_t kb = tb ? b.extent(1) : b.extent(0), n = tb ? b.extent(0) : b.extent(1);
  // KokkosBlas only checks shapes in debug builds of KokkosKernels: a mismatch would corrupt memory.
  if (ka != kb || m != c.extent(0) || n != c.extent(1))
    throw Error("internal error: gemm shapes do not match (op(A) " + std::to_string(m) + "x" +
                std::to_string(ka) + ", op(B) " + std::to_string(kb) + "x" + std::to_string(n) + ", C " +
                std::to_string(c.extent(0)) + "x" + std::to_string(c.extent(1)) + ")");
  const char ops[2][2] = {{'N', '\0'}, {'T', '\0'}};
  KokkosBlas::gemm(ops[ta], ops[tb], alpha, a, b, beta, c);
}

// db[j] += sum_i dy(i, j): bias and LayerNorm gradients. A product with a row of ones keeps the column
// reduction in the BLAS (fast and deterministic on every backend) instead of a strided loop.
template <class S, class D>
void column_sum_accumulate(const nodeduce<Kokkos::View<const S**, Kokkos::LayoutRight, D>>& dy,
                           const Kokkos::View<S*, Kokkos::LayoutRight, D>& db) {
  using Mat = Kokkos::View<S**, Kokkos::LayoutRight, D>;
  const Mat ones = alloc<Mat>("pipebench::ones", 1, dy.extent(0));
  Kokkos::deep_copy(typename D::execution_space(), ones, S(1));
  gemm('N', 'N', S(1), ones, dy, S(1), Mat(db.data(), 1, db.extent(0)));
}

}  // namespace pipebench::kernels
