#pragma once
// Token and learned positional embedding of the first stage: x[bi*s + i] = wte[token] + wpe[i].
// Token ids are a pure function of (seed, micro-batch), so F stores nothing: W regenerates them.
// No I (tokens have no gradient); W needs the output gradient dx, which the stage's I stores.
#include "kernels/cp_positions.hpp"
#include "kernels/random.hpp"
#include "kernels/views.hpp"

namespace pipebench::kernels {

struct TokenSource {
  std::uint64_t seed = 0;
  int micro_batch = 0;
  int batch = 0, seq = 0, vocab = 0;  // b, s, V; context-parallel: s/cp positions, at global positions pos(i)
  CpPositions pos;
};

template <class E>
Kokkos::View<int*, typename E::memory_space> make_tokens(const TokenSource& src) {
  const auto tok = alloc<Kokkos::View<int*, typename E::memory_space>>("pipebench::tokens", src.batch * src.seq);
  const TokenSource t = src;
  Kokkos::parallel_for(
      "pipebench::make_tokens", Kokkos::RangePolicy<E>(0, t.batch * t.seq),
      KOKKOS_LAMBDA(int r) { tok(r) = token_at(t.seed, t.micro_batch, r / t.seq, t.pos(r % t.seq), t.vocab); });
  return tok;
}

template <class S, class E>
void embedding_forward(const TokenSource& src, const typename Views<S, E>::ConstMat& wte,
                       const typename Views<S, E>::ConstMat& wpe, const typename Views<S, E>::Mat& x) {
  const auto tok = make_tokens<E>(src);
  const int n = static_cast<int>(x.extent(0)), h = static_cast<int>(x.extent(1)), s = src.seq;
  const CpPositions pos = src.pos;
  Kokkos::parallel_for(
      "pipebench::embedding_forward", Kokkos::MDRangePolicy<E, Kokkos::Rank<2>>({0, 0}, {n, h}),
      KOKKOS_LAMBDA(int r, int j) { x(r, j) = wte(tok(r), j) + wpe(pos(r % s), j); });
}

// Vocabulary-parallel (Megatron's VocabParallelEmbedding): `wte` holds the rows [v0, v0 + rows) of the
// vocabulary; x = the rows of this rank's tokens, 0 for the others: summed over the tensor-parallel
// ranks, each token's row (plus zeros, exactly). embedding_add_positions then adds wpe once.
template <class S, class E>
void embedding_forward_partial(const TokenSource& src, const typename Views<S, E>::ConstMat& wte, int v0,
                               const typename Views<S, E>::Mat& x) {
  const auto tok = make_tokens<E>(src);
  const int n = static_cast<int>(x.extent(0)), h = static_cast<int>(x.extent(1)), rows = static_cast<int>(wte.extent(0));
  Kokkos::parallel_for(
      "pipebench::embedding_forward_partial", Kokkos::MDRangePolicy<E, Kokkos::Rank<2>>({0, 0}, {n, h}),
      KOKKOS_LAMBDA(int r, int j) {
        const int v = tok(r) - v0;
        x(r, j) = v >= 0 && v < rows ? wte(v, j) : S(0);
      });
}

// Rows of x are (batch, i) with i < seq, at this rank's positions first + i (a sequence-parallel shard:
// seq = s/t), global positions pos(first + i) under context parallelism.
template <class S, class E>
void embedding_add_positions(int seq, const typename Views<S, E>::ConstMat& wpe, const typename Views<S, E>::Mat& x,
                             int first = 0, CpPositions pos = {}) {
  const int n = static_cast<int>(x.extent(0)), h = static_cast<int>(x.extent(1)), s = seq;
  Kokkos::parallel_for(
      "pipebench::embedding_add_positions", Kokkos::MDRangePolicy<E, Kokkos::Rank<2>>({0, 0}, {n, h}),
      KOKKOS_LAMBDA(int r, int j) { x(r, j) += wpe(pos(first + r % s), j); });
}

// dwte[token] += dx, dwpe[i] += dx. One thread per hidden column walks the rows in order: no atomics,
// and the sums are bit-reproducible on every backend.
// Vocabulary-parallel: `dwte` holds the rows [v0, v0 + rows) (v0 = 0 and all rows otherwise).
template <class S, class E>
void embedding_backward_weight(const TokenSource& src, const typename Views<S, E>::ConstMat& dx,
                               const typename Views<S, E>::Mat& dwte, const typename Views<S, E>::Mat& dwpe,
                               int v0 = 0) {
  const auto tok = make_tokens<E>(src);
  const int n = static_cast<int>(dx.extent(0)), h = static_cast<int>(dx.extent(1)), s = src.seq;
  const int rows = static_cast<int>(dwte.extent(0));
  const CpPositions pos = src.pos;
  Kokkos::parallel_for(
      "pipebench::embedding_backward_weight", Kokkos::RangePolicy<E>(0, h), KOKKOS_LAMBDA(int j) {
        for (int r = 0; r < n; ++r) {
          const int v = tok(r) - v0;
          if (v >= 0 && v < rows) dwte(v, j) += dx(r, j);
          dwpe(pos(r % s), j) += dx(r, j);
        }
      });
}

}  // namespace pipebench::kernels
