#pragma once
// GELU, tanh approximation (Hendrycks & Gimpel 2016, as in GPT-2):
//   gelu(u) = u/2 * (1 + tanh(c (u + k u^3))), c = sqrt(2/pi), k = 0.044715.
// F needs nothing stored of its own (its output is the next linear's input); I needs u; no weights.
// Evaluated as u * sigmoid(2y), y = c (u + k u^3), since (1 + tanh y)/2 = sigmoid(2y): one exp instead of
// a tanh, which costs about four times as much in glibc, and exact limits (exp overflowing to inf gives
// sigmoid 0, never NaN).
#include "kernels/host_math.hpp"
#include "kernels/views.hpp"

#include <type_traits>

namespace pipebench::kernels {

// fp32 on a host backend: kernels/host_math.hpp's vectorised loops, a block of rows per iteration
// (the same values up to the exponent's last bits: host::exp against math::exp).
template <class S, class E>
constexpr bool host_fp32() {
  return std::is_same_v<S, float> &&
         Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename E::memory_space>::accessible;
}

// f(begin, count) over [0, n) in blocks of kHostBlock values, the blocks spread over E's threads.
constexpr std::size_t kHostBlock = 4096;
template <class E, class F>
void host_blocks(const char* name, std::size_t n, const F& f) {
  const std::size_t blocks = (n + kHostBlock - 1) / kHostBlock;
  Kokkos::parallel_for(name, Kokkos::RangePolicy<E>(0, blocks), [=](std::size_t i) {  // host only
    const std::size_t b = i * kHostBlock;
    f(b, n - b < kHostBlock ? n - b : kHostBlock);
  });
}

template <class S>
struct GeluConstants {
  static constexpr S c = S(0.7978845608028654);  // sqrt(2/pi)
  static constexpr S k = S(0.044715);
};

// g = gelu(u), elementwise over same-shaped contiguous matrices.
template <class S, class E>
void gelu_forward(const typename Views<S, E>::ConstMat& u, const typename Views<S, E>::Mat& g) {
  typename Views<S, E>::ConstVec uf(u.data(), u.span());
  typename Views<S, E>::Vec gf(g.data(), g.span());
  if constexpr (host_fp32<S, E>()) {
    const float* up = uf.data();
    float* gp = gf.data();
    host_blocks<E>("pipebench::gelu_forward", uf.extent(0), [=](std::size_t b, std::size_t m) { host::gelu(up + b, gp + b, m); });
    return;
  }
  const S c = GeluConstants<S>::c, k = GeluConstants<S>::k;
  Kokkos::parallel_for(
      "pipebench::gelu_forward", Kokkos::RangePolicy<E>(0, uf.extent(0)), KOKKOS_LAMBDA(std::size_t i) {
        const S x = uf(i);
        gf(i) = x / (S(1) + math::exp(S(-2) * c * (x + k * x * x * x)));
      });
}

// u += b (fc1's bias, by rows), then g = gelu(u): one pass where linear_forward's bias and gelu_forward
// made two (the bias broadcast before the product, GELU after it).
template <class S, class E>
void bias_gelu_forward(const typename Views<S, E>::Mat& u, const typename Views<S, E>::ConstVec& b,
                       const typename Views<S, E>::Mat& g) {
  typename Views<S, E>::Vec uf(u.data(), u.span());
  typename Views<S, E>::Vec gf(g.data(), g.span());
  const S c = GeluConstants<S>::c, k = GeluConstants<S>::k;
  const std::size_t cols = u.extent(1);
  if constexpr (host_fp32<S, E>()) {  // one row per iteration: the bias is the row's
    float* up = uf.data();
    float* gp = gf.data();
    const float* bp = b.data();
    Kokkos::parallel_for("pipebench::bias_gelu_forward", Kokkos::RangePolicy<E>(0, u.extent(0)), [=](std::size_t r) {
      host::bias_gelu(up + r * cols, bp, gp + r * cols, cols);
    });
    return;
  }
  Kokkos::parallel_for(
      "pipebench::bias_gelu_forward", Kokkos::RangePolicy<E>(0, uf.extent(0)), KOKKOS_LAMBDA(std::size_t i) {
        const S x = uf(i) + b(i % cols);
        uf(i) = x;
        gf(i) = x / (S(1) + math::exp(S(-2) * c * (x + k * x * x * x)));
      });
}

// du = dg * gelu'(u), in place over dg.
template <class S, class E>
void gelu_backward_input(const typename Views<S, E>::ConstMat& u, const typename Views<S, E>::Mat& dg) {
  typename Views<S, E>::ConstVec uf(u.data(), u.span());
  typename Views<S, E>::Vec df(dg.data(), dg.span());
  if constexpr (host_fp32<S, E>()) {
    const float* up = uf.data();
    float* dp = df.data();
    host_blocks<E>("pipebench::gelu_backward_input", uf.extent(0),
                   [=](std::size_t b, std::size_t m) { host::gelu_backward(up + b, dp + b, m); });
    return;
  }
  const S c = GeluConstants<S>::c, k = GeluConstants<S>::k;
  Kokkos::parallel_for(
      "pipebench::gelu_backward_input", Kokkos::RangePolicy<E>(0, uf.extent(0)), KOKKOS_LAMBDA(std::size_t i) {
        // gelu' = sigma + u * 2 sigma (1 - sigma) * dy/du, sigma = sigmoid(2y).
        const S x = uf(i);
        const S sg = S(1) / (S(1) + math::exp(S(-2) * c * (x + k * x * x * x)));
        df(i) *= sg + S(2) * x * sg * (S(1) - sg) * c * (S(1) + S(3) * k * x * x);
      });
}

}  // namespace pipebench::kernels
