#pragma once
// The formulas a ZeRO run's data-parallel measurements are set beside (docs/formulas.md "ZeRO"): per
// step, the bytes each kind of data-parallel collective moves on the busiest rank, and under ZeRO-3 the
// most gathered weight bytes a rank holds at once (analysis/zero.hpp's gather plan).
#include "bench/run/plan.hpp"
#include "kernels/transformer_workload.hpp"

namespace pipebench::bench {

struct ZeroFormula {
  // Per step, the largest over ranks; each collective's bytes as nccl-tests counts them (an all-gather's
  // gathered output, a reduce-scatter's whole input, an all-reduce's buffer).
  double all_gathered = 0, reduce_scattered = 0, all_reduced = 0;
  double gathered_peak = 0;  // ZeRO-3: gathered stages held plus prefetches in flight
};

// The most bytes of each kind of training state any rank of the configuration holds between steps
// (kernels::state_bytes): they depend on the rank's pipeline stages and, under ZeRO, on its shards.
kernels::StateBytes state_formula(const RunSettings& rs, const Plan& pl);

// Zero everywhere without data parallelism (cp d = 1: the dp-cp group is one rank) or for the synthetic
// workload. With experts the routed experts' buckets count over cp d / ep ranks, nothing where that is one.
ZeroFormula zero_formula(const RunSettings& rs, const Plan& pl);

}  // namespace pipebench::bench
