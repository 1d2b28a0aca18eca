#pragma once
// Causal attention over a context-parallel group of cp ranks, each holding s/cp query, key and value
// positions of every sequence (kernels/cp_positions.hpp says which). The queries stay; the keys and
// values come to them block by block, one block per rank of the group:
//   ring (Liu et al. 2023, "Ring Attention"; Megatron-Core's and ring-flash-attention's exchange): at
//     step t a rank attends to the block of rank (r - t) mod cp while the next block is already on its
//     way (a send to rank r+1 and a receive from rank r-1, posted before the block's products);
//   all-gather (Llama 3, Dubey et al. 2024, section 3.3.2): every block gathered first, then the same
//     loop locally.
// Each block's partial output is merged with the online-softmax (log-sum-exp) rule of flash attention
// (Dao et al. 2022): with row maxima m, sums l and unnormalised outputs O,
//   m' = max(m_a, m_b), l' = l_a e^(m_a - m') + l_b e^(m_b - m'), O' = O_a e^(m_a - m') + O_b e^(m_b - m'),
// and O / l, lse = m + log l at the end. Only the part of a block that some query sees is computed
// (cp_detail::visible: half of every other rank's block under zigzag chunks, all or nothing under
// contiguous ones), as ring-flash-attention does. F keeps lse per query row (not the probabilities:
// they span other ranks' keys), so I recomputes each block's P = exp(Qs K^T - lse), as flash
// attention does.
// I: the keys and values travel again, and each block's dK, dV travel with them (ring: accumulated
// by every rank on the way and back at their owner after cp hops; all-gather: reduce-scattered).
// The causal mask is on global positions: key position <= query position.
#include <functional>
#include <utility>

#include "kernels/attention.hpp"
#include "kernels/cp_positions.hpp"
#include "kernels/workload.hpp"

namespace pipebench::kernels {

template <class S, class E>
struct ContextParallel {
  CpPositions pos;
  CpComm comm = CpComm::ring;
  CpOps ops;
};

namespace cp_detail {

template <class S, class E>
using Heads = typename Views<S, E>::Heads;
template <class S, class E>
using Rows = typename Views<S, E>::Mat;  // [z, n]: one value per (head, query row)

// The part of a block of `owner` that this rank's queries see. A rank's positions ascend, so the keys
// a query row sees are a prefix of the block, longer for later rows: rows [q0, n) see something, and
// none sees past key nk. Zigzag halves every block but the rank's own: a lower rank's second chunk is
// invisible to all of this rank's queries, a higher rank's keys to this rank's first chunk; contiguous
// chunks see a lower rank's block whole and a higher rank's not at all (nothing to compute).
struct Window {
  int q0 = 0, nq = 0, nk = 0;
  bool empty() const { return nq == 0 || nk == 0; }
};
inline Window visible(const CpPositions& pos, int owner) {
  const int n = pos.local;
  Window w;
  while (w.q0 < n && pos(w.q0) < pos.of(owner, 0)) ++w.q0;
  w.nq = n - w.q0;
  while (w.nk < n && w.nq > 0 && pos.of(owner, w.nk) <= pos(n - 1)) ++w.nk;
  return w;
}

// Rows [r0, r0 + nr) of every head of src, as a contiguous stack (the batched products need one).
template <class S, class E>
Heads<S, E> rows_of(const Heads<S, E>& src, int r0, int nr, const char* label) {
  if (r0 == 0 && nr == static_cast<int>(src.extent(1))) return src;
  const Heads<S, E> out = alloc<Heads<S, E>>(label, src.extent(0), static_cast<std::size_t>(nr), src.extent(2));
  const int d = static_cast<int>(src.extent(2));
  Kokkos::parallel_for(
      "pipebench::cp_rows_of", Kokkos::MDRangePolicy<E, Kokkos::Rank<3>>({0, 0, 0}, {static_cast<int>(src.extent(0)), nr, d}),
      KOKKOS_LAMBDA(int z, int i, int j) { out(z, i, j) = src(z, r0 + i, j); });
  return out;
}

// dst rows [r0, r0 + src rows) := src (or += src); with `clear`, dst's other rows := 0.
template <class S, class E>
void put_rows(const Heads<S, E>& dst, int r0, const Heads<S, E>& src, bool add, bool clear = false) {
  const int n = static_cast<int>(dst.extent(1)), nr = static_cast<int>(src.extent(1)), d = static_cast<int>(dst.extent(2));
  Kokkos::parallel_for(
      "pipebench::cp_put_rows", Kokkos::MDRangePolicy<E, Kokkos::Rank<3>>({0, 0, 0}, {static_cast<int>(dst.extent(0)), n, d}),
      KOKKOS_LAMBDA(int z, int i, int j) {
        const bool in = i >= r0 && i < r0 + nr;
        if (in) dst(z, i, j) = add ? dst(z, i, j) + src(z, i - r0, j) : src(z, i - r0, j);
        else if (clear) dst(z, i, j) = S(0);
      });
}

// sc [z, nq, nk]: the scores of query rows q0 + i against the block of `owner` -> exp(sc - row max)
// where the key is visible, 0 elsewhere; the row maxima and sums to mx, sum [z, nq] (sum 0: none).
template <class S, class E>
void block_softmax(const Heads<S, E>& sc, const CpPositions& pos, int owner, int q0, const Rows<S, E>& mx,
                   const Rows<S, E>& sum) {
  const int nq = static_cast<int>(sc.extent(1)), nk = static_cast<int>(sc.extent(2));
  Kokkos::parallel_for(
      "pipebench::cp_block_softmax", Kokkos::RangePolicy<E>(0, static_cast<int>(sc.extent(0)) * nq), KOKKOS_LAMBDA(int l) {
        const int z = l / nq, i = l % nq, qp = pos(q0 + i);
        int len = 0;
        while (len < nk && pos.of(owner, len) <= qp) ++len;
        S m = len > 0 ? sc(z, i, 0) : S(0), acc = 0;
        for (int j = 1; j < len; ++j) m = sc(z, i, j) > m ? sc(z, i, j) : m;
        for (int j = 0; j < len; ++j) {
          const S e = math::exp(sc(z, i, j) - m);
          sc(z, i, j) = e;
          acc += e;
        }
        for (int j = len; j < nk; ++j) sc(z, i, j) = S(0);
        mx(z, i) = m;
        sum(z, i) = acc;
      });
}

// The log-sum-exp merge of a block's (ob, mb, lb) [z, nq, ...] into rows q0 + i of the running
// (acc, m, l).
template <class S, class E>
void merge(const Heads<S, E>& acc, const Rows<S, E>& m, const Rows<S, E>& l, int q0, const Heads<S, E>& ob,
           const Rows<S, E>& mb, const Rows<S, E>& lb) {
  const int nq = static_cast<int>(ob.extent(1)), d = static_cast<int>(acc.extent(2));
  Kokkos::parallel_for(
      "pipebench::cp_merge", Kokkos::RangePolicy<E>(0, static_cast<int>(ob.extent(0)) * nq), KOKKOS_LAMBDA(int r) {
        const int z = r / nq, ib = r % nq, i = q0 + ib;
        if (lb(z, ib) == S(0)) return;
        if (l(z, i) == S(0)) {
          for (int j = 0; j < d; ++j) acc(z, i, j) = ob(z, ib, j);
          m(z, i) = mb(z, ib);
          l(z, i) = lb(z, ib);
          return;
        }
        const S top = m(z, i) > mb(z, ib) ? m(z, i) : mb(z, ib);
        const S a = math::exp(m(z, i) - top), b = math::exp(mb(z, ib) - top);
        for (int j = 0; j < d; ++j) acc(z, i, j) = acc(z, i, j) * a + ob(z, ib, j) * b;
        l(z, i) = l(z, i) * a + lb(z, ib) * b;
        m(z, i) = top;
      });
}

// o := acc / l in place; m := lse = m + log l in place.
template <class S, class E>
void finish(const Heads<S, E>& o, const Rows<S, E>& m, const Rows<S, E>& l) {
  const int n = static_cast<int>(o.extent(1)), d = static_cast<int>(o.extent(2));
  Kokkos::parallel_for(
      "pipebench::cp_finish", Kokkos::RangePolicy<E>(0, static_cast<int>(o.extent(0)) * n), KOKKOS_LAMBDA(int r) {
        const int z = r / n, i = r % n;
        const S inv = S(1) / l(z, i);
        for (int j = 0; j < d; ++j) o(z, i, j) *= inv;
        m(z, i) += math::log(l(z, i));
      });
}

// sc [z, nq, nk] of query rows q0 + i -> P = exp(sc - lse) where visible, 0 elsewhere.
template <class S, class E>
void block_probs(const Heads<S, E>& sc, const CpPositions& pos, int owner, int q0, const Rows<S, E>& lse) {
  const int nq = static_cast<int>(sc.extent(1)), nk = static_cast<int>(sc.extent(2));
  Kokkos::parallel_for(
      "pipebench::cp_block_probs", Kokkos::RangePolicy<E>(0, static_cast<int>(sc.extent(0)) * nq), KOKKOS_LAMBDA(int l) {
        const int z = l / nq, i = l % nq, qp = pos(q0 + i);
        for (int j = 0; j < nk; ++j)
          sc(z, i, j) = pos.of(owner, j) <= qp ? math::exp(sc(z, i, j) - lse(z, q0 + i)) : S(0);
      });
}

// dp := p * (dp - D_row) over query rows q0 + i: the softmax's backward, D = sum_j dO O of the row.
template <class S, class E>
void block_dscores(const Heads<S, E>& p, const Heads<S, E>& dp, int q0, const Rows<S, E>& dsum) {
  const int nq = static_cast<int>(p.extent(1)), nk = static_cast<int>(p.extent(2));
  Kokkos::parallel_for(
      "pipebench::cp_block_dscores",
      Kokkos::MDRangePolicy<E, Kokkos::Rank<3>>({0, 0, 0}, {static_cast<int>(p.extent(0)), nq, nk}),
      KOKKOS_LAMBDA(int z, int i, int j) { dp(z, i, j) = p(z, i, j) * (dp(z, i, j) - dsum(z, q0 + i)); });
}

// D = sum_j dO(i, j) O(i, j) per row.
template <class S, class E>
void row_dot(const Heads<S, E>& a, const Heads<S, E>& b, const Rows<S, E>& out) {
  const int n = static_cast<int>(a.extent(1)), d = static_cast<int>(a.extent(2));
  Kokkos::parallel_for(
      "pipebench::cp_row_dot", Kokkos::RangePolicy<E>(0, static_cast<int>(a.extent(0)) * n), KOKKOS_LAMBDA(int r) {
        const int z = r / n, i = r % n;
        S acc = 0;
        for (int j = 0; j < d; ++j) acc += a(z, i, j) * b(z, i, j);
        out(z, i) = acc;
      });
}

template <class S, class E>
void add_into(const Heads<S, E>& dst, const Heads<S, E>& src) {
  const S* s = src.data();
  S* t = dst.data();
  Kokkos::parallel_for(
      "pipebench::cp_add", Kokkos::RangePolicy<E>(0, dst.span()), KOKKOS_LAMBDA(std::size_t i) { t[i] += s[i]; });
}

// k, v [z, n, d] packed as one [2z, n, d] block: one message per step.
template <class S, class E>
Heads<S, E> pack(const Heads<S, E>& k, const Heads<S, E>& v) {
  const std::size_t z = k.extent(0);
  const Heads<S, E> kv = alloc<Heads<S, E>>("pipebench::cp_kv", 2 * z, k.extent(1), k.extent(2));
  Kokkos::deep_copy(E(), substack<S, E>(kv, 0, z), k);
  Kokkos::deep_copy(E(), substack<S, E>(kv, z, z), v);
  return kv;
}

// Every block's keys and values in rank order [cp * 2z, n, d] (all-gather).
template <class S, class E>
Heads<S, E> gather_all(const ContextParallel<S, E>& cp, const Heads<S, E>& kv) {
  const Heads<S, E> all =
      alloc<Heads<S, E>>("pipebench::cp_kv_all", kv.extent(0) * cp.pos.cp, kv.extent(1), kv.extent(2));
  E().fence();
  cp.ops.all_gather(kv.data(), all.data(), kv.span() * sizeof(S));
  return all;
}

// F of one block: its visible window's partial output merged into (o, lse, l).
template <class S, class E>
void forward_block(const ContextParallel<S, E>& cp, const Heads<S, E>& q, const Heads<S, E>& kv, int owner,
                   const Heads<S, E>& o, const Rows<S, E>& lse, const Rows<S, E>& l) {
  using D = typename Views<S, E>::Device;
  const Window w = visible(cp.pos, owner);
  if (w.empty()) return;
  const std::size_t z = q.extent(0), d = q.extent(2), nq = static_cast<std::size_t>(w.nq), nk = static_cast<std::size_t>(w.nk);
  const Heads<S, E> qw = rows_of<S, E>(q, w.q0, w.nq, "pipebench::cp_q_window");
  const Heads<S, E> kw = rows_of<S, E>(substack<S, E>(kv, 0, z), 0, w.nk, "pipebench::cp_k_window");
  const Heads<S, E> vw = rows_of<S, E>(substack<S, E>(kv, z, z), 0, w.nk, "pipebench::cp_v_window");
  const Heads<S, E> sc = alloc<Heads<S, E>>("pipebench::cp_scores", z, nq, nk);
  const Heads<S, E> ob = alloc<Heads<S, E>>("pipebench::cp_block_out", z, nq, d);
  const Rows<S, E> mb = alloc<Rows<S, E>>("pipebench::cp_block_max", z, nq), lb = alloc<Rows<S, E>>("pipebench::cp_block_sum", z, nq);
  gemm_batched<S, D>('N', 'T', S(1), qw, kw, S(0), sc);
  block_softmax<S, E>(sc, cp.pos, owner, w.q0, mb, lb);
  gemm_batched<S, D>('N', 'N', S(1), sc, vw, S(0), ob);
  merge<S, E>(o, lse, l, w.q0, ob, mb, lb);  // o and lse hold the running sums and maxima
}

// I of one block: dq += its part; the block's dK, dV to g [2z, n, d] (0 outside the window).
template <class S, class E>
void backward_block(const ContextParallel<S, E>& cp, const Heads<S, E>& q, const Heads<S, E>& kv, int owner,
                    const Rows<S, E>& lse, const Heads<S, E>& dout, const Rows<S, E>& dsum, const Heads<S, E>& dq,
                    const Heads<S, E>& g) {
  using D = typename Views<S, E>::Device;
  const Window w = visible(cp.pos, owner);
  if (w.empty()) {
    Kokkos::deep_copy(E(), g, S(0));
    return;
  }
  const std::size_t z = q.extent(0), d = q.extent(2), nq = static_cast<std::size_t>(w.nq), nk = static_cast<std::size_t>(w.nk);
  const Heads<S, E> qw = rows_of<S, E>(q, w.q0, w.nq, "pipebench::cp_q_window");
  const Heads<S, E> dow = rows_of<S, E>(dout, w.q0, w.nq, "pipebench::cp_dout_window");
  const Heads<S, E> kw = rows_of<S, E>(substack<S, E>(kv, 0, z), 0, w.nk, "pipebench::cp_k_window");
  const Heads<S, E> vw = rows_of<S, E>(substack<S, E>(kv, z, z), 0, w.nk, "pipebench::cp_v_window");
  const Heads<S, E> p = alloc<Heads<S, E>>("pipebench::cp_scores", z, nq, nk);
  const Heads<S, E> dp = alloc<Heads<S, E>>("pipebench::cp_dscores", z, nq, nk);
  const Heads<S, E> dkw = alloc<Heads<S, E>>("pipebench::cp_dk_window", z, nk, d);
  const Heads<S, E> dvw = alloc<Heads<S, E>>("pipebench::cp_dv_window", z, nk, d);
  const Heads<S, E> dqw = alloc<Heads<S, E>>("pipebench::cp_dq_window", z, nq, d);
  gemm_batched<S, D>('N', 'T', S(1), qw, kw, S(0), p);
  block_probs<S, E>(p, cp.pos, owner, w.q0, lse);
  gemm_batched<S, D>('T', 'N', S(1), p, dow, S(0), dvw);  // dV = P^T dO
  gemm_batched<S, D>('N', 'T', S(1), dow, vw, S(0), dp);  // dP = dO V^T
  block_dscores<S, E>(p, dp, w.q0, dsum);                 // dS
  gemm_batched<S, D>('N', 'N', S(1), dp, kw, S(0), dqw);  // dQs = dS K
  gemm_batched<S, D>('T', 'N', S(1), dp, qw, S(0), dkw);  // dK = dS^T Qs
  put_rows<S, E>(dq, w.q0, dqw, true);
  put_rows<S, E>(substack<S, E>(g, 0, z), 0, dkw, false, true);
  put_rows<S, E>(substack<S, E>(g, z, z), 0, dvw, false, true);
}

}  // namespace cp_detail

// F: o [z, n, d] = causal softmax(Qs K^T) V over the whole group; lse [z, n] for I.
template <class S, class E>
void cp_attention_forward(const ContextParallel<S, E>& cp, const typename Views<S, E>::Heads& q,
                          const typename Views<S, E>::Heads& k, const typename Views<S, E>::Heads& v,
                          const typename Views<S, E>::Mat& lse, const typename Views<S, E>::Heads& o) {
  using Heads = typename Views<S, E>::Heads;
  using Rows = typename Views<S, E>::Mat;
  const std::size_t z = q.extent(0), n = q.extent(1), d = q.extent(2);
  const Rows l = alloc<Rows>("pipebench::cp_sum", z, n);
  Kokkos::deep_copy(E(), l, S(0));
  auto block = [&](const Heads& kv, int owner) { cp_detail::forward_block<S, E>(cp, q, kv, owner, o, lse, l); };
  const Heads kv = cp_detail::pack<S, E>(k, v);
  if (cp.comm == CpComm::allgather) {
    const Heads all = cp_detail::gather_all(cp, kv);
    for (int b = 0; b < cp.pos.cp; ++b) block(substack<S, E>(all, b * 2 * z, 2 * z), b);
  } else {
    Heads cur = kv, next = alloc<Heads>("pipebench::cp_kv_next", 2 * z, n, d);
    for (int t = 0; t < cp.pos.cp; ++t) {
      std::function<void()> wait;
      if (t + 1 < cp.pos.cp) {
        E().fence();
        wait = cp.ops.ring(cur.data(), next.data(), cur.span() * sizeof(S), 0);
      }
      if (t != cp.ops.skip_ring_step) block(cur, (cp.pos.rank - t + cp.pos.cp) % cp.pos.cp);
      if (wait) wait();
      std::swap(cur, next);
    }
  }
  cp_detail::finish<S, E>(o, lse, l);
  E().fence();
}

// I: dq (of the scaled queries), dk, dv [z, n, d] from dout, with F's output o and lse.
template <class S, class E>
void cp_attention_backward(const ContextParallel<S, E>& cp, const typename Views<S, E>::Heads& q,
                           const typename Views<S, E>::Heads& k, const typename Views<S, E>::Heads& v,
                           const typename Views<S, E>::Heads& o, const typename Views<S, E>::Mat& lse,
                           const typename Views<S, E>::Heads& dout, const typename Views<S, E>::Heads& dq,
                           const typename Views<S, E>::Heads& dk, const typename Views<S, E>::Heads& dv) {
  using Heads = typename Views<S, E>::Heads;
  using Rows = typename Views<S, E>::Mat;
  const std::size_t z = q.extent(0), n = q.extent(1), d = q.extent(2);
  const Rows dsum = alloc<Rows>("pipebench::cp_dsum", z, n);
  cp_detail::row_dot<S, E>(dout, o, dsum);
  Kokkos::deep_copy(E(), dq, S(0));
  auto block = [&](const Heads& kv, int owner, const Heads& g) {
    cp_detail::backward_block<S, E>(cp, q, kv, owner, lse, dout, dsum, dq, g);
  };
  const Heads kv = cp_detail::pack<S, E>(k, v);
  Heads mine = alloc<Heads>("pipebench::cp_dkv", 2 * z, n, d);
  const int size = cp.pos.cp, rank = cp.pos.rank;
  if (cp.comm == CpComm::allgather) {
    const Heads all = cp_detail::gather_all(cp, kv);
    const Heads grads = alloc<Heads>("pipebench::cp_dkv_all", all.extent(0), n, d);
    for (int b = 0; b < size; ++b)
      block(substack<S, E>(all, b * 2 * z, 2 * z), b, substack<S, E>(grads, b * 2 * z, 2 * z));
    E().fence();
    cp.ops.reduce_scatter(grads.data(), mine.data(), mine.span(), static_cast<int>(sizeof(S)));
  } else {
    // The keys and values go round once more; each block's gradients follow one hop behind, summed on
    // the way, so that after the last step the block of rank r arrives back at r.
    Heads cur = kv, next = alloc<Heads>("pipebench::cp_kv_next", 2 * z, n, d);
    Heads g[2] = {alloc<Heads>("pipebench::cp_dkv_block", 2 * z, n, d),
                  alloc<Heads>("pipebench::cp_dkv_block2", 2 * z, n, d)};
    std::function<void()> grads_in;
    for (int t = 0; t < size; ++t) {
      std::function<void()> kv_in;
      if (t + 1 < size) {
        E().fence();
        kv_in = cp.ops.ring(cur.data(), next.data(), cur.span() * sizeof(S), 0);
      }
      const Heads& gt = g[t % 2];
      block(cur, (rank - t + size) % size, gt);
      if (grads_in) {
        grads_in();
        cp_detail::add_into<S, E>(gt, mine);
      }
      E().fence();
      grads_in = cp.ops.ring(gt.data(), mine.data(), gt.span() * sizeof(S), 1);
      if (kv_in) kv_in();
      std::swap(cur, next);
    }
    grads_in();
  }
  Kokkos::deep_copy(E(), dk, substack<S, E>(mine, 0, z));
  Kokkos::deep_copy(E(), dv, substack<S, E>(mine, z, z));
  E().fence();
}

}  // namespace pipebench::kernels
