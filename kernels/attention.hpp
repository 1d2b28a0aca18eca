#pragma once
// Causal multi-head attention core, heads laid out [b * heads, s, d] so each (sequence, head) matrix is a
// contiguous [s, d] block and each product over all heads is one strided-batched BLAS call:
//   S = Qs K^T (Qs = Q / sqrt(d), scaled once when the heads are split), P = causal softmax(S), O = P V.
// F stores Qs, K, V (and P unless it is recomputed, "selective" recomputation); I needs all of them;
// attention has no weights, so W has nothing to do here.
// A device and short sequences compute the s x s products in full (the upper triangle is masked
// afterwards); a host with a vendor BLAS skips the blocks above the diagonal (causal_blocks below). The
// FLOP counts count the products in full either way, the convention of Narayanan et al. 2021.
#include "kernels/gemm_batched.hpp"
#include "kernels/host_math.hpp"
#include "kernels/host_tuning.hpp"
#include "kernels/transformer_config.hpp"
#include "kernels/vector_math.hpp"
#include "kernels/views.hpp"

#include <algorithm>
#include <initializer_list>
#include <type_traits>

namespace pipebench::kernels {

template <class E>
constexpr bool on_host() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename E::memory_space>::accessible;
}

// The host's reshuffles below: row r of the [b*s, heads*d] side, f(r, z0, i) with z0 = its sequence's
// first head and i its position; f copies the row's heads as contiguous runs of d values, where the
// two-index loop computed a division and a remainder per value (the same values either way).
template <class E, class F>
void host_head_rows(const char* name, int b, int s, const F& f) {
  Kokkos::parallel_for(name, Kokkos::RangePolicy<E>(0, b * s), [=](int r) { f(r, (r / s), r % s); });  // host only
}

// qkv [b*s, 3*hl*d], columns (which, head, j) -> q, k, v [b*hl, s, d]; q is multiplied by `scale`.
template <class S, class E>
void split_heads(const typename Views<S, E>::ConstMat& qkv, int b, int s, int heads, int d, S scale,
                 const typename Views<S, E>::Heads& q, const typename Views<S, E>::Heads& k,
                 const typename Views<S, E>::Heads& v) {
  const int hd = heads * d;
  if constexpr (on_host<E>()) {
    host_head_rows<E>("pipebench::split_heads", b, s, [=](int r, int seq, int i) {
      const S* row = &qkv(r, 0);
      for (int hh = 0; hh < heads; ++hh) {
        S *qo = &q(seq * heads + hh, i, 0), *ko = &k(seq * heads + hh, i, 0), *vo = &v(seq * heads + hh, i, 0);
        for (int j = 0; j < d; ++j) {
          qo[j] = row[hh * d + j] * scale;
          ko[j] = row[hd + hh * d + j];
          vo[j] = row[2 * hd + hh * d + j];
        }
      }
    });
    return;
  }
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
  if constexpr (on_host<E>()) {
    host_head_rows<E>("pipebench::merge_heads", b, s, [=](int r, int seq, int i) {
      for (int hh = 0; hh < heads; ++hh)
        for (int j = 0; j < d; ++j) out(r, hh * d + j) = o(seq * heads + hh, i, j);
    });
    return;
  }
  Kokkos::parallel_for(
      "pipebench::merge_heads", Kokkos::MDRangePolicy<E, Kokkos::Rank<2>>({0, 0}, {b * s, heads * d}),
      KOKKOS_LAMBDA(int r, int c) { out(r, c) = o((r / s) * heads + c / d, r % s, c % d); });
}

// out [b*s, hl*d] -> o [b*hl, s, d]: the inverse of merge_heads.
template <class S, class E>
void unmerge_heads(const typename Views<S, E>::ConstMat& in, int b, int s, int heads, int d,
               const typename Views<S, E>::Heads& o) {
  if constexpr (on_host<E>()) {
    host_head_rows<E>("pipebench::unmerge_heads", b, s, [=](int r, int seq, int i) {
      for (int hh = 0; hh < heads; ++hh)
        for (int j = 0; j < d; ++j) o(seq * heads + hh, i, j) = in(r, hh * d + j);
    });
    return;
  }
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
  if constexpr (on_host<E>()) {
    host_head_rows<E>("pipebench::merge_heads_qkv", b, s, [=](int r, int seq, int i) {
      S* row = &dqkv(r, 0);
      for (int hh = 0; hh < heads; ++hh) {
        const S *qi = &dq(seq * heads + hh, i, 0), *ki = &dk(seq * heads + hh, i, 0), *vi = &dv(seq * heads + hh, i, 0);
        for (int j = 0; j < d; ++j) {
          row[hh * d + j] = qi[j] * scale;
          row[hd + hh * d + j] = ki[j];
          row[2 * hd + hh * d + j] = vi[j];
        }
      }
    });
    return;
  }
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

// The heads the unfused attention takes at once where it holds their score matrices in a workspace
// (attention_group_for, kernels/transformer_config.hpp): one per host thread, 8 on a device.
template <class E>
std::size_t attention_group(std::size_t z) {
  const bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename E::memory_space>::accessible;
  return attention_group_for(z, host ? E().concurrency() : 0);
}

// One causal softmax row on the host: p[0, len) -> softmax, p[len, s) -> 0. The row (s values) stays in
// the first-level cache through its three sweeps (maximum; exponent and sum; scale and mask), so memory
// sees one read and one write per value; the lanes of kernels/vector_math.hpp let each sweep vectorise.
template <class S>
KOKKOS_INLINE_FUNCTION void softmax_row(S* p, int len, int s) {
  const S mx = math::max_of(p, len);
  const S sum = math::lane_sum<S>(len, [&](int j) {
    const S e = math::exp(p[j] - mx);
    p[j] = e;
    return e;
  });
  const S inv = S(1) / sum;
  for (int j = 0; j < len; ++j) p[j] *= inv;
  for (int j = len; j < s; ++j) p[j] = S(0);
}

// softmax_row on a host: fp32 through kernels/host_math.hpp's vectorised exponent.
template <class S>
void host_softmax_row(S* p, int len, int s) {
  if constexpr (std::is_same_v<S, float>)
    host::softmax_row(p, len, s);
  else
    softmax_row(p, len, s);
}

// dp := p * (dp - sum_j p_j dp_j) over one row, 0 from len up to `end`.
template <class S>
KOKKOS_INLINE_FUNCTION void softmax_row_backward(const S* p, S* dp, int len, int end) {
  const S dot = math::lane_sum<S>(len, [&](int j) { return p[j] * dp[j]; });
  for (int j = 0; j < len; ++j) dp[j] = p[j] * (dp[j] - dot);
  for (int j = len; j < end; ++j) dp[j] = S(0);
}

// In place over rows of [rows, s] score matrices (row r is query position r % s): p_j = softmax over
// keys j <= i, 0 above the diagonal. The host runs one row per iteration (softmax_row); a device one row
// per team, its reductions over the team's threads.
template <class S, class E>
void softmax_causal_forward(const typename Views<S, E>::Mat& p) {
  using Team = typename Kokkos::TeamPolicy<E>::member_type;
  const int rows = static_cast<int>(p.extent(0)), s = static_cast<int>(p.extent(1));
  const bool interleave = interleave_causal_rows<E>();
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename E::memory_space>::accessible) {
    Kokkos::parallel_for(
        "pipebench::softmax_causal_forward", Kokkos::RangePolicy<E>(0, rows), [=](int l) {  // host only
          const int r = causal_row(l, rows, s, interleave);
          host_softmax_row(&p(r, 0), r % s + 1, s);
        });
    return;
  }
  Kokkos::parallel_for(
      "pipebench::softmax_causal_forward", Kokkos::TeamPolicy<E>(rows, Kokkos::AUTO), KOKKOS_LAMBDA(const Team& t) {
        const int r = t.league_rank(), i = r % s;
        S mx = p(r, 0), sum = 0;
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
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename E::memory_space>::accessible) {
    Kokkos::parallel_for(
        "pipebench::softmax_causal_backward", Kokkos::RangePolicy<E>(0, rows), KOKKOS_LAMBDA(int l) {
          const int r = causal_row(l, rows, s, interleave);
          softmax_row_backward(&p(r, 0), &dp(r, 0), r % s + 1, s);
        });
    return;
  }
  Kokkos::parallel_for(
      "pipebench::softmax_causal_backward", Kokkos::TeamPolicy<E>(rows, Kokkos::AUTO), KOKKOS_LAMBDA(const Team& t) {
        const int r = t.league_rank(), i = r % s;
        S dot = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(t, i + 1), [&](int j, S& acc) { acc += p(r, j) * dp(r, j); }, dot);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, s),
                             [&](int j) { dp(r, j) = j <= i ? p(r, j) * (dp(r, j) - dot) : S(0); });
      });
}

// The causal products on a host by blocks of causal_rows query rows (issue 25): rows [r0, r1) of a
// head's scores need the keys [0, r1) only, so S = Qs K^T, O = P V, dP = dO V^T and dQs = dS K run per
// row block over its keys, and dV = P^T dO, dK = dS^T Qs per block of key columns over the rows at and
// below it: (1 + causal_rows / s) / 2 of the full products' multiply-adds (0.56 at s = 1024), and a
// block's 128 x r1 scores stay in the second-level cache from their product through the softmax to
// P V. Each head is one host thread's, its BLAS calls single-threaded. P is written in full (0 above
// the diagonal) as the full path writes it, since I and the stash read it whole; dS only up to each
// row block's end, all the column products read. For at least two blocks (s >= 256), fp32 or fp64, no
// 16-bit autocast, and a BLAS that runs each call on one thread where the heads take several; the
// tally (GemmTally) records the full products, as the FLOP counts do.
constexpr int causal_rows = 128;

template <class S, class E>
bool causal_blocks([[maybe_unused]] std::size_t s) {
#if defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
  if constexpr (on_host<E>() && (std::is_same_v<S, float> || std::is_same_v<S, double>))
    return s >= 2 * causal_rows && products_16() == Half::none && (E().concurrency() == 1 || blas_threads() == 1);
#endif
  return false;
}

#if defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
namespace detail {

// Offset of row `row` of a matrix `width` wide.
inline std::size_t at(int row, int width) { return static_cast<std::size_t>(row) * static_cast<std::size_t>(width); }

// One head's P (and O = P V where o is not null) from its [s, d] Qs, K, V.
template <class S>
void causal_head_forward(const S* q, const S* k, const S* v, S* p, S* o, int s, int d) {
  for (int r0 = 0; r0 < s; r0 += causal_rows) {
    const int r1 = std::min(s, r0 + causal_rows), rows = r1 - r0;
    host_blas_gemm<S>(false, true, rows, r1, d, S(1), q + at(r0, d), d, k, d, S(0), p + at(r0, s), s);  // S = Qs K^T
    for (int r = r0; r < r1; ++r) host_softmax_row(p + at(r, s), r + 1, s);
    if (o) host_blas_gemm<S>(false, false, rows, d, r1, S(1), p + at(r0, s), s, v, d, S(0), o + at(r0, d), d);  // O = P V
  }
}

// One head's dQs, dK, dV from its P and dO; dp is an [s, s] workspace.
template <class S>
void causal_head_backward(const S* q, const S* k, const S* v, const S* p, const S* dout, S* dp, S* dq, S* dk, S* dv,
                          int s, int d) {
  for (int r0 = 0; r0 < s; r0 += causal_rows) {
    const int r1 = std::min(s, r0 + causal_rows), rows = r1 - r0;
    host_blas_gemm<S>(false, true, rows, r1, d, S(1), dout + at(r0, d), d, v, d, S(0), dp + at(r0, s), s);  // dP = dO V^T
    for (int r = r0; r < r1; ++r) softmax_row_backward(p + at(r, s), dp + at(r, s), r + 1, r1);  // dS
    host_blas_gemm<S>(false, false, rows, d, r1, S(1), dp + at(r0, s), s, k, d, S(0), dq + at(r0, d), d);  // dQs = dS K
  }
  for (int c0 = 0; c0 < s; c0 += causal_rows) {
    const int cols = std::min(s, c0 + causal_rows) - c0, below = s - c0;
    host_blas_gemm<S>(true, false, cols, d, below, S(1), p + at(c0, s) + c0, s, dout + at(c0, d), d, S(0), dv + at(c0, d), d);
    host_blas_gemm<S>(true, false, cols, d, below, S(1), dp + at(c0, s) + c0, s, q + at(c0, d), d, S(0), dk + at(c0, d), d);
  }
}

// f(i) for i in [0, g) on the host threads, one head each.
template <class E, class F>
void over_heads(std::size_t g, const F& f) {
  Kokkos::parallel_for("pipebench::attention_causal_blocks", Kokkos::RangePolicy<E>(0, static_cast<int>(g)), f);  // host only
}

// The full products the blocks stand for, in the tally: `shapes` per head.
inline void tally_full(std::size_t heads, std::initializer_list<GemmTally::Product> shapes) {
  if (GemmTally* tally = gemm_tally())
    for (std::size_t z = 0; z < heads; ++z) tally->products.insert(tally->products.end(), shapes);
}

}  // namespace detail
#endif

// Heads [z0, z0 + count) of a stack of [rows, cols] matrices, as a stack.
template <class S, class E, class V>
typename Views<S, E>::Heads substack(const V& v, std::size_t z0, std::size_t count) {
  const std::size_t rows = v.extent(1), cols = v.extent(2);
  return typename Views<S, E>::Heads(v.data() + z0 * rows * cols, count, rows, cols);
}

// The [count * s, s] rows of a stack of score matrices, for the softmax.
template <class S, class E>
typename Views<S, E>::Mat score_rows(const typename Views<S, E>::Heads& p) {
  return typename Views<S, E>::Mat(p.data(), p.extent(0) * p.extent(1), p.extent(2));
}

// o = softmax(q k^T) v per head, each product one strided-batched call over the heads
// (kernels/gemm_batched.hpp). With `probs` non-empty ([b*hl, s, s]) the probabilities are kept there for
// I; otherwise they go through one workspace (selective recomputation). A device takes all heads at once
// (8 into the workspace); a host attention_group() heads, one per thread, so that their score matrices
// (4 MiB per head at s = 1024) are still in the last-level cache when the softmax and the product with v
// read them back: all heads at once made both read 64 MiB from memory at the paper size (issue 25). On
// one thread the BLAS calls are the same either way (one per head), so the results are bitwise the same.
template <class S, class E>
void attention_forward(const typename Views<S, E>::Heads& q, const typename Views<S, E>::Heads& k,
                       const typename Views<S, E>::Heads& v, const typename Views<S, E>::Heads& probs,
                       const typename Views<S, E>::Heads& o) {
  using Heads = typename Views<S, E>::Heads;
  using D = typename Views<S, E>::Device;
  const std::size_t z = q.extent(0), s = q.extent(1);
  const std::size_t group = probs.data() && !on_host<E>() ? z : attention_group<E>(z);
  Heads work = probs.data() ? Heads() : alloc<Heads>("pipebench::attention_scores", group, s, s);
  [[maybe_unused]] const bool blocks = causal_blocks<S, E>(s);
  for (std::size_t z0 = 0; z0 < z; z0 += group) {
    const std::size_t g = z - z0 < group ? z - z0 : group;
    const Heads p = probs.data() ? substack<S, E>(probs, z0, g) : substack<S, E>(work, 0, g);
#if defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
    if constexpr (on_host<E>()) {
      if (blocks) {
        const std::size_t d = q.extent(2);
        detail::over_heads<E>(g, [=](int i) {
          const std::size_t h = z0 + static_cast<std::size_t>(i);
          detail::causal_head_forward<S>(&q(h, 0, 0), &k(h, 0, 0), &v(h, 0, 0), &p(i, 0, 0), &o(h, 0, 0),
                                         static_cast<int>(s), static_cast<int>(d));
        });
        detail::tally_full(g, {{s, s, d}, {s, d, s}});
        continue;
      }
    }
#endif
    gemm_batched<S, D>('N', 'T', S(1), substack<S, E>(q, z0, g), substack<S, E>(k, z0, g), S(0), p);
    softmax_causal_forward<S, E>(score_rows<S, E>(p));
    gemm_batched<S, D>('N', 'N', S(1), p, substack<S, E>(v, z0, g), S(0), substack<S, E>(o, z0, g));
  }
}

// Gradients of q (scaled), k, v from do. Probabilities come from `probs` or are recomputed from q, k;
// attention_group() heads at a time.
template <class S, class E>
void attention_backward_input(const typename Views<S, E>::Heads& q, const typename Views<S, E>::Heads& k,
                              const typename Views<S, E>::Heads& v, const typename Views<S, E>::Heads& probs,
                              const typename Views<S, E>::Heads& dout, const typename Views<S, E>::Heads& dq,
                              const typename Views<S, E>::Heads& dk, const typename Views<S, E>::Heads& dv) {
  using Heads = typename Views<S, E>::Heads;
  using D = typename Views<S, E>::Device;
  const std::size_t z = q.extent(0), s = q.extent(1), group = attention_group<E>(z);
  Heads work = probs.data() ? Heads() : alloc<Heads>("pipebench::attention_scores", group, s, s);
  Heads dp_all = alloc<Heads>("pipebench::attention_dprobs", group, s, s);
  [[maybe_unused]] const bool blocks = causal_blocks<S, E>(s);
  for (std::size_t z0 = 0; z0 < z; z0 += group) {
    const std::size_t g = z - z0 < group ? z - z0 : group;
    const Heads qg = substack<S, E>(q, z0, g), kg = substack<S, E>(k, z0, g), dz = substack<S, E>(dout, z0, g);
    const Heads dp = substack<S, E>(dp_all, 0, g);
    Heads p = probs.data() ? substack<S, E>(probs, z0, g) : substack<S, E>(work, 0, g);
#if defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
    if constexpr (on_host<E>()) {
      if (blocks) {
        const std::size_t d = q.extent(2);
        const int si = static_cast<int>(s), di = static_cast<int>(d);
        const bool recompute = !probs.data();
        detail::over_heads<E>(g, [=](int i) {
          const std::size_t h = z0 + static_cast<std::size_t>(i);
          if (recompute) detail::causal_head_forward<S>(&q(h, 0, 0), &k(h, 0, 0), nullptr, &p(i, 0, 0), nullptr, si, di);
          detail::causal_head_backward<S>(&q(h, 0, 0), &k(h, 0, 0), &v(h, 0, 0), &p(i, 0, 0), &dout(h, 0, 0),
                                          &dp(i, 0, 0), &dq(h, 0, 0), &dk(h, 0, 0), &dv(h, 0, 0), si, di);
        });
        if (recompute) detail::tally_full(g, {{s, s, d}});
        detail::tally_full(g, {{s, s, d}, {s, d, s}, {s, d, s}, {s, d, s}});
        continue;
      }
    }
#endif
    if (!probs.data()) {
      gemm_batched<S, D>('N', 'T', S(1), qg, kg, S(0), p);
      softmax_causal_forward<S, E>(score_rows<S, E>(p));
    }
    gemm_batched<S, D>('N', 'T', S(1), dz, substack<S, E>(v, z0, g), S(0), dp);  // dP = dO V^T
    gemm_batched<S, D>('T', 'N', S(1), p, dz, S(0), substack<S, E>(dv, z0, g));   // dV = P^T dO
    softmax_causal_backward<S, E>(score_rows<S, E>(p), score_rows<S, E>(dp));      // dS
    gemm_batched<S, D>('N', 'N', S(1), dp, kg, S(0), substack<S, E>(dq, z0, g));  // dQs = dS K
    gemm_batched<S, D>('T', 'N', S(1), dp, qg, S(0), substack<S, E>(dk, z0, g));  // dK = dS^T Qs
  }
}

}  // namespace pipebench::kernels
