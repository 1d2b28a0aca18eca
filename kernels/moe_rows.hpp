#pragma once
// The row movements and per-expert reductions of the MoE layer (kernels/moe.hpp): gathers of token rows
// by an index, the gated combine, the gates' gradients, and the bias adds and column sums of a stack of
// expert matrices. Every output element is written by one thread, summing in a fixed order, so the
// results do not depend on the backend's scheduling.
#include "kernels/gemm_batched.hpp"
#include "kernels/views.hpp"

namespace pipebench::kernels::moe {

template <class S, class E>
using Index = Kokkos::View<int*, Kokkos::LayoutRight, typename Views<S, E>::Device>;
template <class S, class E>
using Stk = Stack<S, typename Views<S, E>::Device>;

// dst[row] = scale[row] * src[index[row]] (scale empty: 1), 0 where index is -1.
template <class S, class E>
void gather_rows(const typename Views<S, E>::ConstMat& src, const Index<S, E>& index,
                 const typename Views<S, E>::Vec& scale, const typename Views<S, E>::Mat& dst) {
  const bool scaled = scale.data() != nullptr;
  Kokkos::parallel_for(
      "pipebench::moe_gather_rows",
      Kokkos::MDRangePolicy<E, Kokkos::Rank<2>>({0, 0}, {int(dst.extent(0)), int(dst.extent(1))}),
      KOKKOS_LAMBDA(int row, int c) {
        const int from = index(row);
        dst(row, c) = from < 0 ? S(0) : (scaled ? scale(row) : S(1)) * src(from, c);
      });
}

// y[t] = sum over t's k routes j, in rank order, of gate[t k + j] * rows[perm[t k + j]] (gate empty: 1),
// routes with perm -1 (dropped) left out: the combine, and unweighted the transpose of the dispatch.
template <class S, class E>
void combine(const typename Views<S, E>::ConstMat& rows, const Index<S, E>& perm, int k,
             const typename Views<S, E>::Vec& gate, const typename Views<S, E>::Mat& y) {
  const bool weighted = gate.data() != nullptr;
  Kokkos::parallel_for(
      "pipebench::moe_combine", Kokkos::MDRangePolicy<E, Kokkos::Rank<2>>({0, 0}, {int(y.extent(0)), int(y.extent(1))}),
      KOKKOS_LAMBDA(int t, int c) {
        S sum = 0;
        for (int j = 0; j < k; ++j) {
          const int row = perm(t * k + j);
          if (row >= 0) sum += (weighted ? gate(t * k + j) : S(1)) * rows(row, c);
        }
        y(t, c) = sum;
      });
}

// dgate[route] = dy[t] . rows[perm[route]], 0 when dropped.
template <class S, class E>
void gate_gradients(const typename Views<S, E>::ConstMat& dy, const typename Views<S, E>::ConstMat& rows,
                    const Index<S, E>& perm, int k, const typename Views<S, E>::Vec& dgate) {
  const int h = static_cast<int>(dy.extent(1));
  Kokkos::parallel_for(
      "pipebench::moe_gate_gradients", Kokkos::RangePolicy<E>(0, int(dgate.extent(0))), KOKKOS_LAMBDA(int route) {
        const int row = perm(route), t = route / k;
        S sum = 0;
        if (row >= 0)
          for (int c = 0; c < h; ++c) sum += dy(t, c) * rows(row, c);
        dgate(route) = sum;
      });
}

// Each of the Z slices of `s` = x.
template <class S, class E>
void replicate(const typename Views<S, E>::ConstMat& x, const Stk<S, E>& s) {
  Kokkos::parallel_for(
      "pipebench::moe_replicate",
      Kokkos::MDRangePolicy<E, Kokkos::Rank<3>>({0, 0, 0}, {int(s.extent(0)), int(x.extent(0)), int(x.extent(1))}),
      KOKKOS_LAMBDA(int z, int t, int c) { s(z, t, c) = x(t, c); });
}

// y += the sum over z of s[z], in z order.
template <class S, class E>
void add_stack_sum(const Stk<S, E>& s, const typename Views<S, E>::Mat& y) {
  const int z = static_cast<int>(s.extent(0));
  Kokkos::parallel_for(
      "pipebench::moe_stack_sum", Kokkos::MDRangePolicy<E, Kokkos::Rank<2>>({0, 0}, {int(y.extent(0)), int(y.extent(1))}),
      KOKKOS_LAMBDA(int t, int c) {
        S sum = 0;
        for (int i = 0; i < z; ++i) sum += s(i, t, c);
        y(t, c) += sum;
      });
}

// y += x, element by element.
template <class S, class E>
void add(const typename Views<S, E>::ConstMat& x, const typename Views<S, E>::Mat& y) {
  Kokkos::parallel_for(
      "pipebench::moe_add", Kokkos::MDRangePolicy<E, Kokkos::Rank<2>>({0, 0}, {int(y.extent(0)), int(y.extent(1))}),
      KOKKOS_LAMBDA(int r, int c) { y(r, c) += x(r, c); });
}

// u[z] += b[z], every row.
template <class S, class E>
void add_bias(const Stk<S, E>& u, const typename Views<S, E>::Mat& b) {
  Kokkos::parallel_for(
      "pipebench::moe_bias",
      Kokkos::MDRangePolicy<E, Kokkos::Rank<3>>({0, 0, 0}, {int(u.extent(0)), int(u.extent(1)), int(u.extent(2))}),
      KOKKOS_LAMBDA(int z, int i, int c) { u(z, i, c) += b(z, c); });
}

// db[z] += the column sums of d[z], in row order.
template <class S, class E>
void add_column_sums(const Stk<S, E>& d, const typename Views<S, E>::Mat& db) {
  const int rows = static_cast<int>(d.extent(1));
  Kokkos::parallel_for(
      "pipebench::moe_column_sums",
      Kokkos::MDRangePolicy<E, Kokkos::Rank<2>>({0, 0}, {int(d.extent(0)), int(d.extent(2))}),
      KOKKOS_LAMBDA(int z, int c) {
        S sum = 0;
        for (int i = 0; i < rows; ++i) sum += d(z, i, c);
        db(z, c) += sum;
      });
}

}  // namespace pipebench::kernels::moe
