#pragma once
// Mean cross-entropy over the b*s tokens of a micro-batch, targets = the next tokens of the stream.
// The logits gradient (softmax - onehot) / (b*s) follows from the loss alone, so F turns the logits into
// their gradient in place and stores that: the logits themselves are never needed again.
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
  const S inv_n = S(1) / static_cast<S>(n);
  Kokkos::parallel_for(
      "pipebench::cross_entropy_forward", Kokkos::TeamPolicy<E>(n, Kokkos::AUTO), KOKKOS_LAMBDA(const Team& m) {
        const int r = m.league_rank();
        const int target = token_at(t.seed, t.micro_batch, r / t.seq, r % t.seq + 1, t.vocab);
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

}  // namespace pipebench::kernels
