#pragma once
// Linear layer y = x W + b with W stored [in, out] row-major, so all three passes are plain products:
//   F: y = x W (+ b);  I: dx = dy W^T  (needs W only);  W: dW += x^T dy, db += colsum(dy) (needs x, dy).
// Tensor parallelism (Megatron): a column-parallel layer holds out/t columns and adds its bias slice in
// F; a row-parallel one holds in/t rows, produces a partial sum that the caller all-reduces, and only
// then adds the (replicated) bias: see add_bias_residual.
#include "kernels/gemm.hpp"
#include "kernels/views.hpp"

namespace pipebench::kernels {

template <class S, class E>
void broadcast_rows(const typename Views<S, E>::ConstVec& v, const typename Views<S, E>::Mat& y) {
  const int n = static_cast<int>(y.extent(0)), c = static_cast<int>(y.extent(1));
  Kokkos::parallel_for(
      "pipebench::broadcast_rows", Kokkos::MDRangePolicy<E, Kokkos::Rank<2>>({0, 0}, {n, c}),
      KOKKOS_LAMBDA(int r, int j) { y(r, j) = v(j); });
}

// y = x W + b; `b` may be empty.
template <class S, class E>
void linear_forward(const typename Views<S, E>::ConstMat& x, const typename Views<S, E>::ConstMat& w,
                    const typename Views<S, E>::ConstVec& b, const typename Views<S, E>::Mat& y) {
  const bool bias = b.data() != nullptr;
  if (bias) broadcast_rows<S, E>(b, y);
  gemm('N', 'N', S(1), x, w, bias ? S(1) : S(0), y);
}

// dx = dy W^T
template <class S, class E>
void linear_backward_input(const typename Views<S, E>::ConstMat& dy, const typename Views<S, E>::ConstMat& w,
                           const typename Views<S, E>::Mat& dx) {
  gemm('N', 'T', S(1), dy, w, S(0), dx);
}

// dW += x^T dy, db += colsum(dy); `db` may be empty.
template <class S, class E>
void linear_backward_weight(const typename Views<S, E>::ConstMat& x, const typename Views<S, E>::ConstMat& dy,
                            const typename Views<S, E>::Mat& dw, const typename Views<S, E>::Vec& db) {
  gemm('T', 'N', S(1), x, dy, S(1), dw);
  if (db.data()) column_sum_accumulate<S, typename Views<S, E>::Device>(dy, db);
}

// y += b + residual: the row-parallel layer's epilogue after the all-reduce (the bias is added once, not
// once per tensor-parallel rank).
template <class S, class E>
void add_bias_residual(const typename Views<S, E>::Mat& y, const typename Views<S, E>::ConstVec& b,
                       const typename Views<S, E>::ConstMat& residual) {
  const int n = static_cast<int>(y.extent(0)), c = static_cast<int>(y.extent(1));
  Kokkos::parallel_for(
      "pipebench::add_bias_residual", Kokkos::MDRangePolicy<E, Kokkos::Rank<2>>({0, 0}, {n, c}),
      KOKKOS_LAMBDA(int r, int j) { y(r, j) += b(j) + residual(r, j); });
}

}  // namespace pipebench::kernels
