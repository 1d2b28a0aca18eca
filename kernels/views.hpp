#pragma once
// View types and device-callable math shared by every kernel. Everything is templated on the scalar S
// and the execution space E; memory lives in E's default memory space.
#include <Kokkos_Core.hpp>

#include "kernels/view_cache.hpp"

#include <cstddef>
#include <string>

namespace pipebench::kernels {

template <class S, class E>
struct Views {
  using Device = Kokkos::Device<E, typename E::memory_space>;
  // Matrices are row-major and contiguous so that KokkosBlas::gemm reaches the vendor BLAS (a strided
  // view would silently fall back to KokkosKernels' native kernel).
  using Mat = Kokkos::View<S**, Kokkos::LayoutRight, Device>;
  using ConstMat = Kokkos::View<const S**, Kokkos::LayoutRight, Device>;
  using Vec = Kokkos::View<S*, Kokkos::LayoutRight, Device>;
  using ConstVec = Kokkos::View<const S*, Kokkos::LayoutRight, Device>;
  // Activations crossing a stage boundary: [b, s, h], contiguous.
  using Act = Kokkos::View<S***, Kokkos::LayoutRight, Device>;
  // Attention heads: [b * heads, s, d], so each (sequence, head) matrix is one contiguous [s, d] block.
  using Heads = Kokkos::View<S***, Kokkos::LayoutRight, Device>;
};

// Uninitialised allocation: every buffer below is fully written before it is read, and zero-filling
// large activations would cost a memory pass per tensor. From a cache of released views of the same
// type and extents (kernels/view_cache.hpp), so that a steady training step allocates nothing.
template <class V, class... Extents>
V alloc(const char* label, Extents... extents) {
  return detail::ViewCache<V>::get().take(label, extents...);
}

// A rank-2 alias of contiguous memory (not reference-counted: the owner must outlive it).
template <class Mat, class V>
Mat as_matrix(const V& v, std::size_t rows, std::size_t cols) {
  return Mat(v.data(), rows, cols);
}

// Bytes a view holds (0 when empty).
template <class V>
std::size_t bytes_of(const V& v) {
  return v.data() ? v.span() * sizeof(typename V::value_type) : 0;
}

namespace math {
#if KOKKOS_VERSION >= 30600
using Kokkos::exp;
using Kokkos::log;
using Kokkos::sqrt;
#else
using Kokkos::Experimental::exp;
using Kokkos::Experimental::log;
using Kokkos::Experimental::sqrt;
#endif
}  // namespace math

}  // namespace pipebench::kernels
