#pragma once
// Mean cross-entropy over the b*s tokens of a micro-batch, targets = the next tokens of the stream.
// Context-parallel, a rank's b*s/cp tokens: it returns their mean, and their gradient is that of the
// mean over all b*s positions of the group (1/(b*s) each), so that summing the gradients over the
// cp x d ranks (Megatron-Core's dp-cp group) gives the whole sequence's.
// The logits gradient (softmax - onehot) / (b*s) follows from the loss alone, so F turns the logits into
// their gradient in place and stores that: the logits themselves are never needed again.
#include <functional>

#include "kernels/embedding.hpp"
#include "kernels/views.hpp"

namespace pipebench::kernels {

// logits [b*s, V] -> dlogits in place; returns the mean loss.
template <class S, class E>
double cross_entropy_forward(const TokenSource& src, const typename Views<S, E>::Mat& logits) {
  using Team = typename Kokkos::TeamPolicy<E>::member_type;
  const int n = static_cast<int>(logits.extent(0)), vocab = static_cast<int>(logits.extent(1));
  const auto row_loss = alloc<Kokkos::View<double*, typename E::memory_space>>("pipebench::row_loss", n);
  const TokenSource t = src;
  const S inv_n = S(1) / static_cast<S>(static_cast<long long>(n) * src.pos.cp);
  Kokkos::parallel_for(
      "pipebench::cross_entropy_forward", Kokkos::TeamPolicy<E>(n, Kokkos::AUTO), KOKKOS_LAMBDA(const Team& m) {
        const int r = m.league_rank();
        const int target = token_at(t.seed, t.micro_batch, r / t.seq, t.pos(r % t.seq) + 1, t.vocab);
        S mx = 0, sum = 0;
        // Read before the max reduction, which synchronises the team, hence before any thread overwrites it.
        const S target_logit = logits(r, target);
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(m, vocab), [&](int j, S& v) { v = logits(r, j) > v ? logits(r, j) : v; },
            Kokkos::Max<S>(mx));
        // Keep exp(l - max) in place: one exp per logit.
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(m, vocab),
            [&](int j, S& acc) {
              const S e = math::exp(logits(r, j) - mx);
              logits(r, j) = e;
              acc += e;
            },
            sum);
        const S inv = S(1) / sum;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, vocab), [&](int j) {
          logits(r, j) = (logits(r, j) * inv - (j == target ? S(1) : S(0))) * inv_n;
        });
        Kokkos::single(Kokkos::PerTeam(m), [&]() {
          row_loss(r) = static_cast<double>(math::log(sum)) + static_cast<double>(mx - target_logit);
        });
      });
  double total = 0;
  Kokkos::parallel_reduce(
      "pipebench::cross_entropy_sum", Kokkos::RangePolicy<E>(0, n),
      KOKKOS_LAMBDA(int r, double& acc) { acc += row_loss(r); }, total);
  return total / n;
}

// Vocabulary-parallel (Megatron's vocab_parallel_cross_entropy): `logits` [b*s, V/t] are this rank's
// columns [v0, v0 + V/t) of the vocabulary. `reduce(m, 0)` must sum the [b*s, t] matrix of the ranks'
// row maxima (each rank fills its column, zeros elsewhere: the sum gathers them exactly), `reduce(m, 1)`
// the [b*s, 2] matrix of the partial sums of exp(l - max) and of the target logit (held by one rank),
// both over the tensor-parallel group. Turns the logits into their gradient in place; returns the mean
// loss, the same on every rank. No rank holds more than its V/t columns of logits. `reduce` is a
// std::function, not a template parameter: nvcc refuses the device lambdas below in a template
// instantiated with a caller's local lambda type.
template <class S, class E>
double parallel_cross_entropy_forward(const TokenSource& src, const typename Views<S, E>::Mat& logits, int v0,
                                      int tp_size, int tp_rank,
                                      const std::function<void(const typename Views<S, E>::Mat&, int)>& reduce) {
  using Mat = typename Views<S, E>::Mat;
  using Team = typename Kokkos::TeamPolicy<E>::member_type;
  const int n = static_cast<int>(logits.extent(0)), cols = static_cast<int>(logits.extent(1)), t = tp_size;
  // Each rank fills its own column of the maxima; the sum over the ranks gathers them (the rest is 0).
  const Mat maxima = alloc<Mat>("pipebench::loss_maxima", n, t), sums = alloc<Mat>("pipebench::loss_sums", n, 2);
  Kokkos::deep_copy(E(), maxima, S(0));
  const TokenSource ts = src;
  const int rank = tp_rank;
  Kokkos::parallel_for(
      "pipebench::parallel_cross_entropy_max", Kokkos::TeamPolicy<E>(n, Kokkos::AUTO), KOKKOS_LAMBDA(const Team& m) {
        const int r = m.league_rank();
        S mx = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(m, cols), [&](int j, S& v) { v = logits(r, j) > v ? logits(r, j) : v; },
            Kokkos::Max<S>(mx));
        Kokkos::single(Kokkos::PerTeam(m), [&]() { maxima(r, rank) = mx; });
      });
  E().fence();
  reduce(maxima, 0);
  Kokkos::parallel_for(
      "pipebench::parallel_cross_entropy_sum", Kokkos::TeamPolicy<E>(n, Kokkos::AUTO), KOKKOS_LAMBDA(const Team& m) {
        const int r = m.league_rank();
        S mx = maxima(r, 0);
        for (int k = 1; k < t; ++k) mx = maxima(r, k) > mx ? maxima(r, k) : mx;
        const int target = token_at(ts.seed, ts.micro_batch, r / ts.seq, ts.pos(r % ts.seq) + 1, ts.vocab) - v0;
        const S target_logit = target >= 0 && target < cols ? logits(r, target) : S(0);
        m.team_barrier();  // every thread has read the target logit before any overwrites it
        S sum = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(m, cols),
            [&](int j, S& acc) {
              const S e = math::exp(logits(r, j) - mx);
              logits(r, j) = e;
              acc += e;
            },
            sum);
        Kokkos::single(Kokkos::PerTeam(m), [&]() {
          sums(r, 0) = sum;
          sums(r, 1) = target_logit;
        });
      });
  E().fence();
  reduce(sums, 1);
  const auto row_loss = alloc<Kokkos::View<double*, typename E::memory_space>>("pipebench::row_loss", n);
  const S inv_n = S(1) / static_cast<S>(static_cast<long long>(n) * src.pos.cp);
  Kokkos::parallel_for(
      "pipebench::parallel_cross_entropy_grad", Kokkos::TeamPolicy<E>(n, Kokkos::AUTO), KOKKOS_LAMBDA(const Team& m) {
        const int r = m.league_rank();
        S mx = maxima(r, 0);
        for (int k = 1; k < t; ++k) mx = maxima(r, k) > mx ? maxima(r, k) : mx;
        const int target = token_at(ts.seed, ts.micro_batch, r / ts.seq, ts.pos(r % ts.seq) + 1, ts.vocab) - v0;
        const S inv = S(1) / sums(r, 0);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(m, cols), [&](int j) {
          logits(r, j) = (logits(r, j) * inv - (j == target ? S(1) : S(0))) * inv_n;
        });
        Kokkos::single(Kokkos::PerTeam(m), [&]() {
          row_loss(r) = static_cast<double>(math::log(sums(r, 0))) + static_cast<double>(mx - sums(r, 1));
        });
      });
  double total = 0;
  Kokkos::parallel_reduce(
      "pipebench::cross_entropy_sum", Kokkos::RangePolicy<E>(0, n),
      KOKKOS_LAMBDA(int r, double& acc) { acc += row_loss(r); }, total);
  return total / n;
}

}  // namespace pipebench::kernels
