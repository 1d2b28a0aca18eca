#pragma once
// The per-operation model (docs/model.md "Step time"): every operation of a layer, of the embedding and
// of the head and loss timed from its own shape on one rank for one micro-batch. Matrix products at the
// machine's GEMM efficiency for their (m, n, k) (analysis/plan/gemm.hpp), memory-bound work as the
// bytes it moves over the HBM bandwidth, tensor- and context-parallel collectives on the tier their
// group is on. The FLOPs, shapes and kept tensors are the cost model's (analysis/transformer/).
#include <string>
#include <vector>

#include "analysis/plan/model.hpp"

namespace pipebench::analysis::plan {

// The work of one part of the model, as the stage times add it up.
struct PartCosts {
  std::vector<OpCost> ops;
  double compute_f = 0, compute_i = 0, compute_w = 0;  // GEMMs and memory-bound work, I with its recompute
  double comm_f = 0, comm_i = 0;                        // exposed collectives (after any overlap)
  double recompute = 0;                                 // the part of compute_i that reruns the forward
};

// One layer (dense, or with `moe` an MoE layer: router, expert GEMMs at per-expert token counts,
// permutations and the dispatch and combine all-to-alls over ep), the embedding (first stage) and the
// head with the loss (last stage).
PartCosts layer_part(const Problem& pr, const Layout& l, const AxisStrides& strides, bool moe = false);
PartCosts embedding_part(const Problem& pr, const Layout& l, const AxisStrides& strides);
PartCosts head_part(const Problem& pr, const Layout& l);

// A collective on one tier: the ring's bytes at the tier's bus bandwidth times its efficiency plus its
// latencies. `factor` 2 for an all-reduce, 1 for an all-gather or a reduce-scatter (Patarasuk and Yuan
// 2009). `own`: the group kind's measured link (MachineSpec::tp_link, dp_link), taken where it has a
// bandwidth and was measured on this tier.
double collective(const MachineSpec& mc, bool inter, double bytes, int ranks, double factor,
                  const MachineSpec::GroupLink& own = {});
// An all-to-all of `bytes` per rank over `ranks`, `local` of them on the rank's node: each peer's share
// (bytes / ranks) goes over NVLink to the local - 1 on-node peers and over the network to the others, the
// two tiers at once (the slower decides), one latency per peer.
double all_to_all(const MachineSpec& mc, double bytes, int ranks, int local);

// The fullest rank's static bytes (weights, gradients, optimizer state of `params` parameters, sharded
// by the ZeRO stage), its data-parallel time and its optimizer step, into `sp` (analysis/plan/state.cpp).
// `expert` of the params are routed experts, sharded over the cp d / ep ranks that hold the same ones.
void static_and_dp(const Problem& pr, const Layout& l, double params, double expert, StagePlan& sp);

}  // namespace pipebench::analysis::plan
