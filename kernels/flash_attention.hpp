#pragma once
// Fused causal attention: flash attention's algorithm (Dao et al. 2022, "FlashAttention: Fast and
// Memory-Efficient Exact Attention with IO-Awareness", arXiv:2205.14135; the loop order of
// FlashAttention-2, Dao 2023, arXiv:2307.08691): one Kokkos team per tile of query rows walks the key
// tiles at or below the diagonal, keeps a running maximum m and sum l of exp(S - m) per row (the online
// softmax) and rescales its output accumulator when m grows, so no s x s matrix exists in memory and
// the masked half of the scores is never computed. The tiles live in team scratch memory.
// Same inputs and outputs as the unfused kernels/attention.hpp ([z, s, d] heads, q already scaled by
// 1/sqrt(d)); the two agree to rounding (docs/transformer.md, "Fused attention", derives the tolerance).
// I recomputes the row statistics instead of keeping them from F, so the fused path holds exactly what
// selective recomputation holds (Q, K, V; no probabilities): three kernels, each with its own tiles,
//   statistics and dQ per query tile (rows' log-sum-exp and D_i = sum_c dO_ic O_ic, then dQ = dS K),
//   dK and dV per key tile (dV = P^T dO, dK = dS^T Qs), with dS = P * (dO V^T - D),
// and no atomics: every output element is summed by one thread in a fixed order (deterministic).
#include "analysis/error.hpp"
#include "kernels/attention.hpp"
#include "kernels/vector_math.hpp"
#include "kernels/views.hpp"

#include <string>

namespace pipebench::kernels {

// Host and device functions: device code calls both (nvcc warning #20013 for constexpr host-only ones).
template <class E>
KOKKOS_INLINE_FUNCTION constexpr bool host_space() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename E::memory_space>::accessible;
}

// Scratch level of a team's tiles: level 0 (shared memory) on a device; on the host, where both levels
// are the same memory, level 1, whose limit (20 MB) holds any tile (level 0's is 32 KB there).
template <class E>
KOKKOS_INLINE_FUNCTION constexpr int flash_level() {
  return host_space<E>() ? 1 : 0;
}

// Team scratch bytes at tile t and head size d (one array of flash_scratch_values, carved by each kernel).
template <class S, class E>
std::size_t flash_scratch_bytes(int t, int d) {
  return Kokkos::View<S*, typename E::scratch_memory_space, Kokkos::MemoryUnmanaged>::shmem_size(
      flash_scratch_values(t, d));
}

// The tile (query rows = key columns) for head size d: the largest of 64, 32, 16 whose scratch fits the
// backend's per-team limit (needs Kokkos started on a device); 0 if none does.
template <class S, class E>
int flash_tile(int d) {
  const std::size_t limit = static_cast<std::size_t>(Kokkos::TeamPolicy<E>::scratch_size_max(flash_level<E>()));
  for (int t : {64, 32, 16})
    if (flash_scratch_bytes<S, E>(t, d) <= limit) return t;
  throw Error("internal error: the fused attention's tiles do not fit team scratch at head size " + std::to_string(d) +
              " (fused_attention_refusal should have refused it)");
}

namespace flash {

// Hands out consecutive pieces of a team's one scratch array of `values` (flash_scratch_values, a host
// function: computed before the kernel).
template <class S, class E>
struct Carve {
  S* next;
  template <class Team>
  KOKKOS_INLINE_FUNCTION Carve(const Team& t, std::size_t values)
      : next(Kokkos::View<S*, typename E::scratch_memory_space, Kokkos::MemoryUnmanaged>(
                 t.team_scratch(flash_level<E>()), values)
                 .data()) {}
  KOKKOS_INLINE_FUNCTION S* take(std::size_t n) {
    S* p = next;
    next += n;
    return p;
  }
};

template <class E>
Kokkos::TeamPolicy<E> policy(int league, std::size_t scratch) {
  // The host runs a team as one thread, whose inner loops the compiler vectorises; a device a team of
  // threads over the rows of a tile, each row's loops over 16 vector lanes.
  Kokkos::TeamPolicy<E> p = host_space<E>() ? Kokkos::TeamPolicy<E>(league, 1, 1)
                                            : Kokkos::TeamPolicy<E>(league, Kokkos::AUTO, 16);
  return p.set_scratch_size(flash_level<E>(), Kokkos::PerTeam(static_cast<int>(scratch)));
}

// Row i of S = q k^T over the key tile: srow[j] = sum_c q(z, i, c) kt[c][j], j < cols.
template <class S, class Team, class Q>
KOKKOS_INLINE_FUNCTION void score_row(const Team& t, const Q& q, int z, int i, const S* kt, int tile, int cols,
                                      int d, S* srow) {
  Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, cols), [&](int j) { srow[j] = S(0); });
  for (int c = 0; c < d; ++c) {
    const S qc = q(z, i, c);
    const S* kc = kt + c * tile;
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, cols), [&](int j) { srow[j] += qc * kc[j]; });
  }
}

// The transposed [d, tile] copy of rows j0 .. j0 + cols of x (z): out[c][j] = x(z, j0 + j, c).
template <class S, class Team, class X>
KOKKOS_INLINE_FUNCTION void load_transposed(const Team& t, const X& x, int z, int j0, int cols, int d, int tile,
                                            S* out) {
  Kokkos::parallel_for(Kokkos::TeamThreadRange(t, cols), [&](int j) {
    Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, d), [&](int c) { out[c * tile + j] = x(z, j0 + j, c); });
  });
}

// Maximum and sum of one row's n values over its vector lanes.
template <class S, class E, class Team>
KOKKOS_INLINE_FUNCTION S row_max(const Team& t, const S* x, int n) {
  if constexpr (host_space<E>()) {
    return math::max_of(x, n);
  } else {
    S m = x[0];
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(t, n), [&](int j, S& v) { v = x[j] > v ? x[j] : v; }, Kokkos::Max<S>(m));
    return m;
  }
}
template <class S, class E, class Team, class F>
KOKKOS_INLINE_FUNCTION S row_sum(const Team& t, int n, const F& f) {
  if constexpr (host_space<E>()) {
    return math::lane_sum<S>(n, f);
  } else {
    S sum = 0;
    Kokkos::parallel_reduce(Kokkos::ThreadVectorRange(t, n), [&](int j, S& v) { v += f(j); }, sum);
    return sum;
  }
}

// Valid keys of query row i (global) in the key tile starting at j0 with cols keys: causal.
KOKKOS_INLINE_FUNCTION int valid_keys(int i, int j0, int cols) {
  const int v = i - j0 + 1;
  return v < cols ? (v > 0 ? v : 0) : cols;
}

}  // namespace flash

// o = softmax(q k^T) v, causal, per head; q, k, v, o [z, s, d].
template <class S, class E>
void flash_attention_forward(const typename Views<S, E>::Heads& q, const typename Views<S, E>::Heads& k,
                             const typename Views<S, E>::Heads& v, const typename Views<S, E>::Heads& o) {
  using Team = typename Kokkos::TeamPolicy<E>::member_type;
  const int z = static_cast<int>(q.extent(0)), s = static_cast<int>(q.extent(1)), d = static_cast<int>(q.extent(2));
  const int tile = flash_tile<S, E>(d), nb = (s + tile - 1) / tile;
  const bool interleave = interleave_causal_rows<E>();
  const std::size_t tt = static_cast<std::size_t>(tile) * tile, td = static_cast<std::size_t>(tile) * d;
  const std::size_t values = flash_scratch_values(tile, d);
  Kokkos::parallel_for(
      "pipebench::flash_attention_forward", flash::policy<E>(z * nb, flash_scratch_bytes<S, E>(tile, d)),
      KOKKOS_LAMBDA(const Team& t) {
        const int l = causal_row(t.league_rank(), z * nb, nb, interleave);  // heavy and light tiles mixed
        const int zi = l / nb, qb = l % nb, i0 = qb * tile, rows = s - i0 < tile ? s - i0 : tile;
        flash::Carve<S, E> scr(t, values);
        S *sc = scr.take(tt), *kt = scr.take(td), *acc = scr.take(td), *mrow = scr.take(tile), *lrow = scr.take(tile);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, rows), [&](int i) {
          mrow[i] = S(-1e30);
          lrow[i] = S(0);
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, d), [&](int c) { acc[i * d + c] = S(0); });
        });
        for (int kb = 0; kb <= qb; ++kb) {
          const int j0 = kb * tile, cols = s - j0 < tile ? s - j0 : tile;
          t.team_barrier();
          flash::load_transposed(t, k, zi, j0, cols, d, tile, kt);
          t.team_barrier();
          Kokkos::parallel_for(Kokkos::TeamThreadRange(t, rows), [&](int i) {
            S* srow = sc + i * tile;
            S* arow = acc + i * d;
            flash::score_row(t, q, zi, i0 + i, kt, tile, cols, d, srow);
            const int valid = flash::valid_keys(i0 + i, j0, cols);
            const S mx = flash::row_max<S, E>(t, srow, valid), mold = mrow[i], mnew = mx > mold ? mx : mold;
            const S sum = flash::row_sum<S, E>(t, valid, [&](int j) {
              const S e = math::exp(srow[j] - mnew);
              srow[j] = e;
              return e;
            });
            const S alpha = math::exp(mold - mnew);
            Kokkos::single(Kokkos::PerThread(t), [&]() {
              lrow[i] = alpha * lrow[i] + sum;
              mrow[i] = mnew;
            });
            Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, d), [&](int c) { arow[c] *= alpha; });
            for (int j = 0; j < valid; ++j) {
              const S pj = srow[j];
              Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, d), [&](int c) { arow[c] += pj * v(zi, j0 + j, c); });
            }
          });
        }
        Kokkos::parallel_for(Kokkos::TeamThreadRange(t, rows), [&](int i) {
          const S inv = S(1) / lrow[i];
          Kokkos::parallel_for(Kokkos::ThreadVectorRange(t, d), [&](int c) { o(zi, i0 + i, c) = acc[i * d + c] * inv; });
        });
      });
}

}  // namespace pipebench::kernels
