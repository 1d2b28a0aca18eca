#pragma once
// I of the fused attention (kernels/flash_attention.hpp): the row statistics and dQ per query tile,
// then dK and dV per key tile, each recomputing its tiles of P = exp(S - lse) from q and k.
#include "kernels/flash_attention.hpp"

namespace pipebench::kernels {

namespace flash {

// Query tile qb of head zi: lse_i = m_i + log l_i over the causal keys, D_i = sum_c dO_ic O_ic, and
// dQs = dS K with dS = P * (dO V^T - D). Scratch: K^T, V^T, S/P and dP tiles, the dQ accumulator, the
// rows' m, l, D.
template <class S, class E>
struct QueryTile {
  using Heads = typename Views<S, E>::Heads;
  using Team = typename Kokkos::TeamPolicy<E>::member_type;
  Heads q, k, v, o, dout, dq;
  typename Views<S, E>::Mat lse, dsum;  // [z, s]
  int s, d, tile, nb;
  bool interleave;
  std::size_t values;  // flash_scratch_values(tile, d)


  KOKKOS_INLINE_FUNCTION void operator()(const Team& t) const {
    const int z = static_cast<int>(q.extent(0));
    const int l = causal_row(t.league_rank(), z * nb, nb, interleave);
    const int zi = l / nb, qb = l % nb, i0 = qb * tile, rows = s - i0 < tile ? s - i0 : tile;
    const std::size_t tt = static_cast<std::size_t>(tile) * tile, td = static_cast<std::size_t>(tile) * d;
    Carve<S, E> scr(t, values);
    S *kt = scr.take(td), *vt = scr.take(td), *acc = scr.take(td), *sc = scr.take(tt), *dp = scr.take(tt);
    S *mrow = scr.take(tile), *lrow = scr.take(tile), *drow = scr.take(tile);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(t, rows), [&](int i) {
      const S di = row_sum<S, E>(t, d, [&](int c) { return dout(zi, i0 + i, c) * o(zi, i0 + i, c); });
      Kokkos::single(Kokkos::PerThread(t), [&]() {
        mrow[i] = S(-1e30);
        lrow[i] = S(0);
        drow[i] = di;
      });
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, d), [&](int c) { acc[i * d + c] = S(0); });
    });
    for (int kb = 0; kb <= qb; ++kb) {  // the statistics
      const int j0 = kb * tile, cols = s - j0 < tile ? s - j0 : tile;
      t.team_barrier();
      load_transposed(t, k, zi, j0, cols, d, tile, kt);
      t.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(t, rows), [&](int i) {
        S* srow = sc + i * tile;
        score_row(t, q, zi, i0 + i, kt, tile, cols, d, srow);
        const int valid = valid_keys(i0 + i, j0, cols);
        const S mx = row_max<S, E>(t, srow, valid), mold = mrow[i], mnew = mx > mold ? mx : mold;
        const S sum = row_sum<S, E>(t, valid, [&](int j) { return math::exp(srow[j] - mnew); });
        const S alpha = math::exp(mold - mnew);
        Kokkos::single(Kokkos::PerThread(t), [&]() {
          lrow[i] = alpha * lrow[i] + sum;
          mrow[i] = mnew;
        });
      });
    }
    t.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(t, rows), [&](int i) {
      Kokkos::single(Kokkos::PerThread(t), [&]() {
        mrow[i] += math::log(lrow[i]);  // now the log-sum-exp
        lse(zi, i0 + i) = mrow[i];
        dsum(zi, i0 + i) = drow[i];
      });
    });
    for (int kb = 0; kb <= qb; ++kb) {  // dQ
      const int j0 = kb * tile, cols = s - j0 < tile ? s - j0 : tile;
      t.team_barrier();
      load_transposed(t, k, zi, j0, cols, d, tile, kt);
      load_transposed(t, v, zi, j0, cols, d, tile, vt);
      t.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(t, rows), [&](int i) {
        S* srow = sc + i * tile;
        S* dprow = dp + i * tile;
        score_row(t, q, zi, i0 + i, kt, tile, cols, d, srow);
        score_row(t, dout, zi, i0 + i, vt, tile, cols, d, dprow);
        const int valid = valid_keys(i0 + i, j0, cols);
        const S li = mrow[i], di = drow[i];
        for (int j = 0; j < valid; ++j) {
          const S ds = math::exp(srow[j] - li) * (dprow[j] - di);
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, d), [&](int c) { acc[i * d + c] += ds * k(zi, j0 + j, c); });
        }
      });
    }
    t.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(t, rows), [&](int i) {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, d), [&](int c) { dq(zi, i0 + i, c) = acc[i * d + c]; });
    });
  }
};

// Key tile kb of head zi: dV = P^T dO and dK = dS^T Qs over the query tiles at or below the diagonal.
// Scratch: K^T, V^T, P and dS tiles, the dK and dV accumulators.
template <class S, class E>
struct KeyTile {
  using Heads = typename Views<S, E>::Heads;
  using Team = typename Kokkos::TeamPolicy<E>::member_type;
  Heads q, k, v, dout, dk, dv;
  typename Views<S, E>::Mat lse, dsum;
  int s, d, tile, nb;
  bool interleave;
  std::size_t values;  // flash_scratch_values(tile, d)


  KOKKOS_INLINE_FUNCTION void operator()(const Team& t) const {
    const int z = static_cast<int>(q.extent(0));
    const int l = causal_row(t.league_rank(), z * nb, nb, interleave);
    const int zi = l / nb, kb = nb - 1 - l % nb, j0 = kb * tile, cols = s - j0 < tile ? s - j0 : tile;
    const std::size_t tt = static_cast<std::size_t>(tile) * tile, td = static_cast<std::size_t>(tile) * d;
    Carve<S, E> scr(t, values);
    S *kt = scr.take(td), *vt = scr.take(td), *dka = scr.take(td), *dva = scr.take(td), *pc = scr.take(tt),
      *dsc = scr.take(tt);
    load_transposed(t, k, zi, j0, cols, d, tile, kt);
    load_transposed(t, v, zi, j0, cols, d, tile, vt);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(t, cols), [&](int j) {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, d), [&](int c) { dka[j * d + c] = dva[j * d + c] = S(0); });
    });
    for (int qb = kb; qb < nb; ++qb) {
      const int i0 = qb * tile, rows = s - i0 < tile ? s - i0 : tile;
      t.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(t, rows), [&](int i) {  // P and dS, masked to 0
        S* prow = pc + i * tile;
        S* dsrow = dsc + i * tile;
        score_row(t, q, zi, i0 + i, kt, tile, cols, d, prow);
        score_row(t, dout, zi, i0 + i, vt, tile, cols, d, dsrow);
        const int valid = valid_keys(i0 + i, j0, cols);
        const S li = lse(zi, i0 + i), di = dsum(zi, i0 + i);
        Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, cols), [&](int j) {
          const S p = j < valid ? math::exp(prow[j] - li) : S(0);
          prow[j] = p;
          dsrow[j] = p * (dsrow[j] - di);
        });
      });
      t.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(t, cols), [&](int j) {  // one key row per thread
        for (int i = 0; i < rows; ++i) {
          const S p = pc[i * tile + j], ds = dsc[i * tile + j];
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, d), [&](int c) {
            dva[j * d + c] += p * dout(zi, i0 + i, c);
            dka[j * d + c] += ds * q(zi, i0 + i, c);
          });
        }
      });
    }
    t.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(t, cols), [&](int j) {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, d), [&](int c) {
        dk(zi, j0 + j, c) = dka[j * d + c];
        dv(zi, j0 + j, c) = dva[j * d + c];
      });
    });
  }
};

}  // namespace flash

// Gradients of q (scaled), k, v from do; o is F's output (for D_i = sum_c dO_ic O_ic).
template <class S, class E>
void flash_attention_backward(const typename Views<S, E>::Heads& q, const typename Views<S, E>::Heads& k,
                              const typename Views<S, E>::Heads& v, const typename Views<S, E>::Heads& o,
                              const typename Views<S, E>::Heads& dout, const typename Views<S, E>::Heads& dq,
                              const typename Views<S, E>::Heads& dk, const typename Views<S, E>::Heads& dv) {
  using Mat = typename Views<S, E>::Mat;
  const int z = static_cast<int>(q.extent(0)), s = static_cast<int>(q.extent(1)), d = static_cast<int>(q.extent(2));
  const int tile = flash_tile<S, E>(d), nb = (s + tile - 1) / tile;
  const bool interleave = interleave_causal_rows<E>();
  const std::size_t values = flash_scratch_values(tile, d);
  const Mat lse = alloc<Mat>("pipebench::flash_lse", z, s), dsum = alloc<Mat>("pipebench::flash_dsum", z, s);
  const flash::QueryTile<S, E> qt{q, k, v, o, dout, dq, lse, dsum, s, d, tile, nb, interleave, values};
  const std::size_t bytes = flash_scratch_bytes<S, E>(tile, d);
  Kokkos::parallel_for("pipebench::flash_attention_dq", flash::policy<E>(z * nb, bytes), qt);
  const flash::KeyTile<S, E> kt{q, k, v, dout, dk, dv, lse, dsum, s, d, tile, nb, interleave, values};
  Kokkos::parallel_for("pipebench::flash_attention_dkv", flash::policy<E>(z * nb, bytes), kt);
}

}  // namespace pipebench::kernels
