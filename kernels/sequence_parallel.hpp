#pragma once
// Sequence parallelism (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
// Models", section 4.2.2): outside the tensor-parallel attention and MLP blocks (LayerNorms, bias +
// residual additions, the residual stream between layers and stages) each of the t tensor-parallel
// ranks holds s/t positions of every sequence. An all-gather along the sequence before each
// column-parallel linear and a reduce-scatter after each row-parallel one replace Megatron's
// all-reduce (same bytes on the wire: an all-reduce is a reduce-scatter then an all-gather).
//
// Rows of a [b, s, h] activation are (batch, position). Rank k's shard holds, for every sequence of
// the micro-batch, the positions [k*s/t, (k+1)*s/t): a [b, s/t, h] activation, rows (batch, j). The
// collectives exchange rank-ordered blocks (block k: rank k's shard), so a gather or a scatter also
// reorders rows between the blocks and the [b, s, h] order (the identity when b = 1).
#include <functional>

#include "kernels/views.hpp"

namespace pipebench::kernels {

enum class TpPoint;

// row of [b, s] for row `r` of block k (rows (bi, j) of a [b, s/t] shard)
KOKKOS_INLINE_FUNCTION std::size_t seq_full_row(std::size_t k, std::size_t r, std::size_t sl, std::size_t seq) {
  return (r / sl) * seq + k * sl + r % sl;
}

template <class S, class E>
struct SeqParallel {
  using Mat = typename Views<S, E>::Mat;
  // all_gather(send [m, h], recv [t*m, h]): recv block k = rank k's send.
  // reduce_scatter(send [t*m, h], recv [m, h]): recv = the sum over the ranks of their send block `rank`.
  using Gather = std::function<void(const Mat& send, const Mat& recv, TpPoint where)>;
  using Scatter = std::function<void(const Mat& send, const Mat& recv, TpPoint where)>;
  int t = 1, rank = 0, batch = 1, seq = 1;
  Gather all_gather;
  Scatter reduce_scatter;

  std::size_t local_seq() const { return static_cast<std::size_t>(seq / t); }
  std::size_t local_rows() const { return static_cast<std::size_t>(batch) * local_seq(); }

  // full [b*s, h] <- every rank's `local` [b*s/t, h]
  void gather(const Mat& local, TpPoint where, const Mat& full) const {
    const std::size_t m = local_rows(), h = local.extent(1), sl = local_seq(), s = static_cast<std::size_t>(seq);
    const Mat blocks = alloc<Mat>("pipebench::sp_gathered", m * static_cast<std::size_t>(t), h);
    E().fence();
    all_gather(local, blocks, where);
    Kokkos::parallel_for(
        "pipebench::sp_unblock", Kokkos::MDRangePolicy<E, Kokkos::Rank<2>>({0, 0}, {static_cast<int>(m) * t, static_cast<int>(h)}),
        KOKKOS_LAMBDA(int r, int j) {
          const auto q = static_cast<std::size_t>(r);
          full(seq_full_row(q / m, q % m, sl, s), j) = blocks(r, j);
        });
  }
  Mat gather(const Mat& local, TpPoint where) const {
    const Mat full = alloc<Mat>("pipebench::sp_full", local_rows() * static_cast<std::size_t>(t), local.extent(1));
    gather(local, where, full);
    return full;
  }
  // local [b*s/t, h] <- this rank's shard of the sum over the ranks of `full` [b*s, h]
  void scatter(const Mat& full, TpPoint where, const Mat& local) const {
    const std::size_t m = local_rows(), h = full.extent(1), sl = local_seq(), s = static_cast<std::size_t>(seq);
    const Mat blocks = alloc<Mat>("pipebench::sp_blocks", m * static_cast<std::size_t>(t), h);
    Kokkos::parallel_for(
        "pipebench::sp_block", Kokkos::MDRangePolicy<E, Kokkos::Rank<2>>({0, 0}, {static_cast<int>(m) * t, static_cast<int>(h)}),
        KOKKOS_LAMBDA(int r, int j) {
          const auto q = static_cast<std::size_t>(r);
          blocks(r, j) = full(seq_full_row(q / m, q % m, sl, s), j);
        });
    E().fence();
    reduce_scatter(blocks, local, where);
  }
  Mat scatter(const Mat& full, TpPoint where) const {
    const Mat local = alloc<Mat>("pipebench::sp_local", local_rows(), full.extent(1));
    scatter(full, where, local);
    return local;
  }
  // this rank's shard of a replicated `full`, no communication
  void take(const typename Views<S, E>::ConstMat& full, const Mat& local) const {
    const std::size_t m = local_rows(), h = full.extent(1), sl = local_seq(), s = static_cast<std::size_t>(seq);
    const std::size_t k = static_cast<std::size_t>(rank);
    Kokkos::parallel_for(
        "pipebench::sp_take", Kokkos::MDRangePolicy<E, Kokkos::Rank<2>>({0, 0}, {static_cast<int>(m), static_cast<int>(h)}),
        KOKKOS_LAMBDA(int r, int j) { local(r, j) = full(seq_full_row(k, static_cast<std::size_t>(r), sl, s), j); });
  }
};

}  // namespace pipebench::kernels
