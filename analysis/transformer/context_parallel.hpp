#pragma once
// Context parallelism's communication and buffers per layer and micro-batch on one rank, the one home
// of these figures (docs/formulas.md "Context parallelism"): what `run` measures against, what the
// kernels' memory estimate adds, what the planner times. A rank's block of keys and values is
//   B = 2 b (s/cp) (h_kv/t) e bytes
// (K and V of its s/cp positions, this rank's a/t heads). Bytes a rank sends per layer:
//   ring (Liu et al. 2023):      F (cp-1) B (the K/V blocks passed on), I (cp-1) B + cp B (the K/V
//                                 again, and each block's dK, dV one hop each, the last hop home);
//   all-gather (Llama 3, Dubey et al. 2024 section 3.3.2):
//     pipebench                  F (cp-1) B, I (cp-1) B gathered again + (cp-1) B reduce-scattered;
//     megatron                   F (cp-1) B, I (cp-1) B reduce-scattered (the gathered K/V kept from F);
// full recomputation adds F's bytes to I. 0 at cp = 1.
#include <cstdint>

#include "analysis/recompute.hpp"
#include "analysis/transformer/shape.hpp"

namespace pipebench::analysis::transformer {

// How the keys and values reach the queries (`run --cp-comm`).
enum class CpExchange { ring, allgather };

// B above, exact, for `value_bytes`-byte values.
std::uint64_t cp_kv_block_bytes(const Shape& m, const Split& split, std::uint64_t value_bytes);

struct CpSent {
  std::uint64_t forward = 0, backward = 0;  // F, and I (recomputation included)
};
CpSent cp_sent_per_layer(const Shape& m, const Split& split, CpExchange x, Recompute r, Convention c,
                         std::uint64_t value_bytes);

// The pipebench kernels' transient K/V buffers of one layer's attention (kernels/context_parallel.hpp),
// the largest of F and I: ring F 2 blocks (the one in hand and the next), I 5 (those two, two dK/dV
// blocks alternating and the one arriving); all-gather F cp + 1 blocks (the rank's packed block and
// every rank's), I 2 cp + 2 (those, every rank's dK/dV and the rank's share of their sum).
std::uint64_t cp_buffer_bytes(const Shape& m, const Split& split, CpExchange x, std::uint64_t value_bytes);

}  // namespace pipebench::analysis::transformer
