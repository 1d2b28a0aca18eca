#pragma once
// Causal multi-head attention core, heads laid out [b * heads, s, d] so each (sequence, head) matrix is a
// contiguous [s, d] block and every product is one BLAS call:
//   S = Qs K^T (Qs = Q / sqrt(d), scaled once when the heads are split), P = causal softmax(S), O = P V.
// F stores Qs, K, V (and P unless it is recomputed, "selective" recomputation); I needs all of them;
// attention has no weights, so W has nothing to do here.
// All s x s products are computed in full (the upper triangle is masked afterwards): the FLOP counts of
// this code count them in full too, which is also the convention of Narayanan et al. 2021.
#include "kernels/gemm.hpp"
#include "kernels/views.hpp"

namespace pipebench::kernels {

// The [rows, cols] matrix at `index` of a contiguous stack of matrices.
template <class S, class E, class V>
typename Views<S, E>::Mat stacked(const V& v, std::size_t index, std::size_t rows, std::size_t cols) {
  return typename Views<S, E>::Mat(v.data() + index * rows * cols, rows, cols);
}

// qkv [b*s, 3*hl*d], columns (which, head, j) -> q, k, v [b*hl, s, d]; q is multiplied by `scale`.
template <class S, class E>
void split_heads(const typename Views<S, E>::ConstMat& qkv, int b, int s, int heads, int d, S scale,
                 const typename Views<S, E>::Heads& q, const typename Views<S, E>::Heads& k,
                 const typename Views<S, E>::Heads& v) {
  const int hd = heads * d;
  Kokkos::parallel_for(
      "pipebench::split_heads", Kokkos::MDRangePolicy<E, Kokkos::Rank<2>>({0, 0}, {b * s, hd}),
      KOKKOS_LAMBDA(int r, int c) {
        const int z = (r / s) * heads + c / d, i = r % s, j = c % d;
        q(z, i, j) = qkv(r, c) * scale;
        k(z, i, j) = qkv(r, hd + c);
        v(z, i, j) = qkv(r, 2 * hd + c);
      });
}

// o [b*hl, s, d] -> out [b*s, hl*d], columns (head, j).
template <class S, class E>
void merge_heads(const typename Views<S, E>::Heads& o, int b, int s, int heads, int d,
                 const typename Views<S, E>::Mat& out) {
  Kokkos::parallel_for(
      "pipebench::merge_heads", Kokkos::MDRangePolicy<E, Kokkos::Rank<2>>({0, 0}, {b * s, heads * d}),
      KOKKOS_LAMBDA(int r, int c) { out(r, c) = o((r / s) * heads + c / d, r % s, c % d); });
}

// out [b*s, hl*d] -> o [b*hl, s, d]: the inverse of merge_heads.
template <class S, class E>
void unmerge_heads(const typename Views<S, E>::ConstMat& in, int b, int s, int heads, int d,
               const typename Views<S, E>::Heads& o) {
  Kokkos::parallel_for(
      "pipebench::unmerge_heads", Kokkos::MDRangePolicy<E, Kokkos::Rank<2>>({0, 0}, {b * s, heads * d}),
      KOKKOS_LAMBDA(int r, int c) { o((r / s) * heads + c / d, r % s, c % d) = in(r, c); });
}

// The inverse of split_heads for the gradients: dqkv = [dq * scale | dk | dv].
template <class S, class E>
void merge_heads_qkv(const typename Views<S, E>::Heads& dq, const typename Views<S, E>::Heads& dk,
                     const typename Views<S, E>::Heads& dv, int b, int s, int heads, int d, S scale,
                     const typename Views<S, E>::Mat& dqkv) {
  const int hd = heads * d;
  Kokkos::parallel_for(
      "pipebench::merge_heads_qkv", Kokkos::MDRangePolicy<E, Kokkos::Rank<2>>({0, 0}, {b * s, hd}),
      KOKKOS_LAMBDA(int r, int c) {
        const int z = (r / s) * heads + c / d, i = r % s, j = c % d;
        dqkv(r, c) = dq(z, i, j) * scale;
        dqkv(r, hd + c) = dk(z, i, j);
        dqkv(r, 2 * hd + c) = dv(z, i, j);
      });
}

// Row i of a causal score matrix costs i + 1 in its reductions. OpenMP's static schedule gives each
// thread one contiguous range of a kernel's rows: in row order the last of 2 threads got 3 times the
// first one's work, and 2 threads ran the softmax only 1.3x faster than one. So on a host backend with
// several threads league index l handles the rows of its s-row block in the order 0, s-1, 1, s-2, ...,
// and every range holds light and heavy rows alike (a permutation of independent rows: the results are
// unchanged). One thread keeps row order, which its prefetcher prefers (the permuted order ran the
// softmax 10 % slower on one core); a GPU schedules its blocks itself.
template <class E>
bool interleave_causal_rows() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename E::memory_space>::accessible &&
         E().concurrency() > 1;
}

KOKKOS_INLINE_FUNCTION int causal_row(int l, int rows, int s, bool interleave) {
  const int j = l % s, base = l - j;
  if (!interleave || base + s > rows) return l;  // row order; an incomplete block stays in order too
  return base + ((j & 1) ? s - 1 - j / 2 : j / 2);
}

// In place over rows of [rows, s] score matrices (row r is query position r % s): p_j = softmax over
// keys j <= i, 0 above the diagonal.
template <class S, class E>
void softmax_causal_forward(const typename Views<S, E>::Mat& p) {
  using Team = typename Kokkos::TeamPolicy<E>::member_type;
  const int rows = static_cast<int>(p.extent(0)), s = static_cast<int>(p.extent(1));
  const bool interleave = interleave_causal_rows<E>();
  Kokkos::parallel_for(
      "pipebench::softmax_causal_forward", Kokkos::TeamPolicy<E>(rows, Kokkos::AUTO), KOKKOS_LAMBDA(const Team& t) {
        const int r = causal_row(t.league_rank(), rows, s, interleave), i = r % s;
        S mx = 0, sum = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, i + 1), [&](int j, S& m) { m = p(r, j) > m ? p(r, j) : m; },
            Kokkos::Max<S>(mx));
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, i + 1),
            [&](int j, S& acc) {
              const S e = math::exp(p(r, j) - mx);
              p(r, j) = e;
              acc += e;
            },
            sum);
        const S inv = S(1) / sum;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, s), [&](int j) { p(r, j) = j <= i ? p(r, j) * inv : S(0); });
      });
}

// dp := p * (dp - sum_j p_j dp_j), in place over dp (0 above the diagonal, where p is 0).
template <class S, class E>
void softmax_causal_backward(const typename Views<S, E>::ConstMat& p, const typename Views<S, E>::Mat& dp) {
  using Team = typename Kokkos::TeamPolicy<E>::member_type;
  const int rows = static_cast<int>(p.extent(0)), s = static_cast<int>(p.extent(1));
  const bool interleave = interleave_causal_rows<E>();
  Kokkos::parallel_for(
      "pipebench::softmax_causal_backward", Kokkos::TeamPolicy<E>(rows, Kokkos::AUTO), KOKKOS_LAMBDA(const Team& t) {
        const int r = causal_row(t.league_rank(), rows, s, interleave), i = r % s;
        S dot = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, i + 1), [&](int j, S& acc) { acc += p(r, j) * dp(r, j); }, dot);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, s),
                             [&](int j) { dp(r, j) = j <= i ? p(r, j) * (dp(r, j) - dot) : S(0); });
      });
}

// Scores and probabilities of head z into p [s, s].
template <class S, class E>
void attention_probs(const typename Views<S, E>::Heads& q, const typename Views<S, E>::Heads& k, std::size_t z,
                     const typename Views<S, E>::Mat& p) {
  const std::size_t s = q.extent(1), d = q.extent(2);
  gemm('N', 'T', S(1), stacked<S, E>(q, z, s, d), stacked<S, E>(k, z, s, d), S(0), p);
  softmax_causal_forward<S, E>(p);
}

// o = softmax(q k^T) v per head. With `probs` non-empty ([b*hl, s, s]) the probabilities are kept there
// for I; otherwise each head's scores live in one [s, s] workspace (selective recomputation).
template <class S, class E>
void attention_forward(const typename Views<S, E>::Heads& q, const typename Views<S, E>::Heads& k,
                       const typename Views<S, E>::Heads& v, const typename Views<S, E>::Heads& probs,
                       const typename Views<S, E>::Heads& o) {
  using Mat = typename Views<S, E>::Mat;
  const std::size_t z = q.extent(0), s = q.extent(1), d = q.extent(2);
  Mat work = probs.data() ? Mat() : alloc<Mat>("pipebench::attention_scores", s, s);
  for (std::size_t zi = 0; zi < z; ++zi) {
    Mat p = probs.data() ? stacked<S, E>(probs, zi, s, s) : work;
    attention_probs<S, E>(q, k, zi, p);
    gemm('N', 'N', S(1), p, stacked<S, E>(v, zi, s, d), S(0), stacked<S, E>(o, zi, s, d));
  }
}

// Gradients of q (scaled), k, v from do. Probabilities come from `probs` or are recomputed from q, k.
template <class S, class E>
void attention_backward_input(const typename Views<S, E>::Heads& q, const typename Views<S, E>::Heads& k,
                              const typename Views<S, E>::Heads& v, const typename Views<S, E>::Heads& probs,
                              const typename Views<S, E>::Heads& dout, const typename Views<S, E>::Heads& dq,
                              const typename Views<S, E>::Heads& dk, const typename Views<S, E>::Heads& dv) {
  using Mat = typename Views<S, E>::Mat;
  const std::size_t z = q.extent(0), s = q.extent(1), d = q.extent(2);
  Mat work = probs.data() ? Mat() : alloc<Mat>("pipebench::attention_scores", s, s);
  Mat dp = alloc<Mat>("pipebench::attention_dprobs", s, s);
  for (std::size_t zi = 0; zi < z; ++zi) {
    Mat p = work;
    if (probs.data())
      p = stacked<S, E>(probs, zi, s, s);
    else
      attention_probs<S, E>(q, k, zi, p);
    const Mat dz = stacked<S, E>(dout, zi, s, d);
    gemm('N', 'T', S(1), dz, stacked<S, E>(v, zi, s, d), S(0), dp);   // dP = dO V^T
    gemm('T', 'N', S(1), p, dz, S(0), stacked<S, E>(dv, zi, s, d));    // dV = P^T dO
    softmax_causal_backward<S, E>(p, dp);                               // dS
    gemm('N', 'N', S(1), dp, stacked<S, E>(k, zi, s, d), S(0), stacked<S, E>(dq, zi, s, d));  // dQs = dS K
    gemm('T', 'N', S(1), dp, stacked<S, E>(q, zi, s, d), S(0), stacked<S, E>(dk, zi, s, d));  // dK = dS^T Qs
  }
}

}  // namespace pipebench::kernels
