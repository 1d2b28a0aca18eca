#pragma once
// Which global positions of a sequence a context-parallel rank holds (s/cp of them). Load-balanced
// ("zigzag", Megatron-Core's get_batch_on_this_cp_rank and ring-flash-attention's zigzag): the sequence
// is cut into 2*cp chunks of s/(2cp) and rank i holds chunks i and 2*cp-1-i, so every rank has as many
// early (cheap) as late (expensive) causal query rows. Contiguous: rank i holds chunk i of cp, and the
// last rank does most of the causal attention's work. cp = 1 is the identity either way.
#include <Kokkos_Core.hpp>

#include "kernels/transformer_config.hpp"

namespace pipebench::kernels {

struct CpPositions {
  int cp = 1, rank = 0;
  int local = 0;  // positions per sequence on a rank: s/cp
  CpChunks chunks = CpChunks::zigzag;
  // Global position of local position i of rank r.
  KOKKOS_INLINE_FUNCTION int of(int r, int i) const {
    if (cp == 1 || chunks == CpChunks::contiguous) return r * local + i;
    const int c = local / 2;
    return i < c ? r * c + i : (2 * cp - 1 - r) * c + (i - c);
  }
  KOKKOS_INLINE_FUNCTION int operator()(int i) const { return of(rank, i); }
};

}  // namespace pipebench::kernels
