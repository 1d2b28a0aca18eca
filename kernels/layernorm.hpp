#pragma once
// LayerNorm over the hidden dimension, one team per row.
//   F stores xhat = (x - mean) * rstd ([n, h]) and rstd ([n]);
//   I needs xhat, rstd and gamma; W needs xhat and the output gradient dy.
// Storing xhat instead of x costs the same and spares W the statistics, so rstd is I-only.
#include "kernels/gemm.hpp"
#include "kernels/views.hpp"

namespace pipebench::kernels {

constexpr double layernorm_eps = 1e-5;

namespace detail {

// x(r, j) += bias(j) + residual(r, j) where Add (a function: CUDA's extended lambdas may not first
// capture a variable inside an `if constexpr`).
template <bool Add, class X, class B, class R>
KOKKOS_INLINE_FUNCTION void add_bias_residual_at(const X& x, const B& bias, const R& residual, int r, int j) {
  if constexpr (Add) x(r, j) += bias(j) + residual(r, j);
}

// LayerNorm's forward over rows; with Add, x := x + (bias + residual) first, in the same sweep that sums
// the row (the row-parallel epilogue of add_bias_residual fused into the next LayerNorm: one pass over x
// less, and the same bits as the two kernels one after the other).
template <class S, class E, bool Add, class X>  // X: Mat with Add, else ConstMat
void layernorm_forward_rows(const X& x, const typename Views<S, E>::ConstVec& bias,
                            const typename Views<S, E>::ConstMat& residual, const typename Views<S, E>::ConstVec& gamma,
                            const typename Views<S, E>::ConstVec& beta, const typename Views<S, E>::Mat& y,
                            const typename Views<S, E>::Mat& xhat, const typename Views<S, E>::Vec& rstd) {
  using Team = typename Kokkos::TeamPolicy<E>::member_type;
  const int n = static_cast<int>(x.extent(0)), h = static_cast<int>(x.extent(1));
  const S inv_h = S(1) / static_cast<S>(h), eps = static_cast<S>(layernorm_eps);
  Kokkos::parallel_for(
      Add ? "pipebench::residual_layernorm_forward" : "pipebench::layernorm_forward", Kokkos::TeamPolicy<E>(n, Kokkos::AUTO),
      KOKKOS_LAMBDA(const Team& t) {
        const int r = t.league_rank();
        S sum = 0, sq = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, h),
            [&](int j, S& acc) {
              add_bias_residual_at<Add>(x, bias, residual, r, j);
              acc += x(r, j);
            },
            sum);
        if constexpr (Add) t.team_barrier();
        const S mean = sum * inv_h;
        // Two passes: the one-pass E[x^2] - mean^2 loses the variance when |mean| >> std.
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, h), [&](int j, S& acc) { acc += (x(r, j) - mean) * (x(r, j) - mean); }, sq);
        const S rs = S(1) / math::sqrt(sq * inv_h + eps);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, h), [&](int j) {
          const S xh = (x(r, j) - mean) * rs;
          xhat(r, j) = xh;
          y(r, j) = xh * gamma(j) + beta(j);
        });
        Kokkos::single(Kokkos::PerTeam(t), [&]() { rstd(r) = rs; });
      });
}

}  // namespace detail

// y = xhat * gamma + beta.
template <class S, class E>
void layernorm_forward(const typename Views<S, E>::ConstMat& x, const typename Views<S, E>::ConstVec& gamma,
                       const typename Views<S, E>::ConstVec& beta, const typename Views<S, E>::Mat& y,
                       const typename Views<S, E>::Mat& xhat, const typename Views<S, E>::Vec& rstd) {
  detail::layernorm_forward_rows<S, E, false>(x, {}, {}, gamma, beta, y, xhat, rstd);
}

// x += bias + residual (add_bias_residual), then y = LayerNorm(x) as layernorm_forward: one kernel.
template <class S, class E>
void residual_layernorm_forward(const typename Views<S, E>::Mat& x, const typename Views<S, E>::ConstVec& bias,
                                const typename Views<S, E>::ConstMat& residual,
                                const typename Views<S, E>::ConstVec& gamma, const typename Views<S, E>::ConstVec& beta,
                                const typename Views<S, E>::Mat& y, const typename Views<S, E>::Mat& xhat,
                                const typename Views<S, E>::Vec& rstd) {
  detail::layernorm_forward_rows<S, E, true>(x, bias, residual, gamma, beta, y, xhat, rstd);
}

// dx = residual + rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma. `residual` may be empty.
template <class S, class E>
void layernorm_backward_input(const typename Views<S, E>::ConstMat& dy, const typename Views<S, E>::ConstMat& xhat,
                              const typename Views<S, E>::ConstVec& rstd, const typename Views<S, E>::ConstVec& gamma,
                              const typename Views<S, E>::ConstMat& residual, const typename Views<S, E>::Mat& dx) {
  using Team = typename Kokkos::TeamPolicy<E>::member_type;
  const int n = static_cast<int>(dy.extent(0)), h = static_cast<int>(dy.extent(1));
  const S inv_h = S(1) / static_cast<S>(h);
  const bool add = residual.data() != nullptr;
  Kokkos::parallel_for(
      "pipebench::layernorm_backward_input", Kokkos::TeamPolicy<E>(n, Kokkos::AUTO), KOKKOS_LAMBDA(const Team& t) {
        const int r = t.league_rank();
        S sum_g = 0, sum_gx = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, h), [&](int j, S& acc) { acc += dy(r, j) * gamma(j); }, sum_g);
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, h), [&](int j, S& acc) { acc += dy(r, j) * gamma(j) * xhat(r, j); }, sum_gx);
        const S mg = sum_g * inv_h, mgx = sum_gx * inv_h, rs = rstd(r);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, h), [&](int j) {
          const S v = rs * (dy(r, j) * gamma(j) - mg - xhat(r, j) * mgx);
          dx(r, j) = add ? residual(r, j) + v : v;
        });
      });
}

// dgamma += sum_rows dy * xhat, dbeta += sum_rows dy.
template <class S, class E>
void layernorm_backward_weight(const typename Views<S, E>::ConstMat& dy, const typename Views<S, E>::ConstMat& xhat,
                               const typename Views<S, E>::Vec& dgamma, const typename Views<S, E>::Vec& dbeta) {
  using Mat = typename Views<S, E>::Mat;
  const int n = static_cast<int>(dy.extent(0)), h = static_cast<int>(dy.extent(1));
  Mat prod = alloc<Mat>("pipebench::ln_dy_xhat", dy.extent(0), dy.extent(1));
  Kokkos::parallel_for(
      "pipebench::layernorm_dy_xhat", Kokkos::MDRangePolicy<E, Kokkos::Rank<2>>({0, 0}, {n, h}),
      KOKKOS_LAMBDA(int r, int j) { prod(r, j) = dy(r, j) * xhat(r, j); });
  column_sum_accumulate<S, typename Views<S, E>::Device>(prod, dgamma);
  column_sum_accumulate<S, typename Views<S, E>::Device>(dy, dbeta);
}

}  // namespace pipebench::kernels
