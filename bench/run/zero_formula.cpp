#include "bench/run/zero_formula.hpp"

#include <algorithm>

#include "analysis/transformer/params.hpp"
#include "analysis/zero.hpp"
#include "kernels/transformer_workload.hpp"

namespace pipebench::bench {

kernels::StateBytes state_formula(const RunSettings& rs, const Plan& pl) {
  const Mapping& mp = pl.mapping;
  kernels::StateBytes most;
  for (int pp = 0; pp < mp.p; ++pp)
    for (int dp = 0; dp < mp.d; ++dp) {
      const kernels::StateBytes b = kernels::state_bytes(pl.model, pl.schedule, pp, rs.zero, rs.dp_buckets, mp.d, dp);
      most.weights = std::max(most.weights, b.weights);
      most.gradients = std::max(most.gradients, b.gradients);
      most.main_weights = std::max(most.main_weights, b.main_weights);
      most.optimizer = std::max(most.optimizer, b.optimizer);
      most.decoded = std::max(most.decoded, b.decoded);
    }
  return most;
}

ZeroFormula zero_formula(const RunSettings& rs, const Plan& pl) {
  ZeroFormula f;
  const analysis::Schedule& s = pl.schedule;
  const int d = pl.mapping.d;
  if (d <= 1 || rs.workload != WorkloadKind::transformer) return f;
  const std::size_t e = pl.model.fp64 ? 8 : 4;
  const int buckets = std::max(rs.dp_buckets, 1);
  // Gradients travel as bfloat16 under --grad-reduce-dtype bf16 (2 bytes of the 4 a value holds); the
  // gathered weights as the rank keeps them, 2 bytes a value in a 16-bit run (docs/transformer.md
  // "16-bit training state").
  const double grad_wire = rs.grad_reduce_bf16 ? 0.5 : 1.0;
  const double weight_wire = static_cast<double>(kernels::weight_element_bytes(pl.model)) / static_cast<double>(e);
  const auto split = kernels::stage_layers(pl.model, s.stages_per_pipe());
  for (int r = 0; r < s.p; ++r) {
    ZeroFormula mine;
    std::vector<double> whole(static_cast<std::size_t>(s.num_stages()), 0), padded(whole);
    for (int st : s.stages_of_rank(r)) {
      const std::uint64_t n = kernels::estimate_memory(kernels::stage_config(pl.model, split, s.depth_of_stage(st)), e).parameters;
      whole[static_cast<std::size_t>(st)] = static_cast<double>(n * e);
      // Buckets padded to d equal shards (kernels::zero_shards): the same for every data-parallel rank.
      for (const kernels::ZeroShard& z : kernels::zero_shards(n, buckets, d, 0))
        padded[static_cast<std::size_t>(st)] += static_cast<double>(z.shard * static_cast<std::size_t>(d) * e);
    }
    for (int st : s.stages_of_rank(r)) {
      const double p = padded[static_cast<std::size_t>(st)];
      // The routed experts' gradients go over the expert-data-parallel group (cp d / ep ranks), as
      // records of the dp group: nothing to reduce where it is one rank.
      double routed = 0;
      if (rs.cp * d == rs.ep) {
        const kernels::TransformerConfig sc = kernels::stage_config(pl.model, split, s.depth_of_stage(st));
        routed = sc.moe_layers_in(sc.first_layer, sc.num_layers) *
                 static_cast<double>(analysis::transformer::routed_expert_params(sc, sc.split()) * e);
      }
      if (rs.zero == 0) mine.all_reduced += (whole[static_cast<std::size_t>(st)] - routed) * grad_wire;
      if (rs.zero >= 1) mine.reduce_scattered += p * grad_wire;
      if (rs.zero == 1 || rs.zero == 2) mine.all_gathered += p * weight_wire;  // the updated weights, once a step
    }
    if (rs.zero == 3) {
      const analysis::GatherPlan g = analysis::gather_plan(s, r, rs.reshard_after_forward != 0);
      for (const auto& before : g.gather_before)
        for (int st : before) mine.all_gathered += padded[static_cast<std::size_t>(st)] * weight_wire;
      for (double& w : whole) w *= weight_wire;  // the gathered stages, as kept
      mine.gathered_peak = analysis::gathered_peak_bytes(g, whole, rs.gather_prefetch);
    }
    f.all_gathered = std::max(f.all_gathered, mine.all_gathered);
    f.reduce_scattered = std::max(f.reduce_scattered, mine.reduce_scattered);
    f.all_reduced = std::max(f.all_reduced, mine.all_reduced);
    f.gathered_peak = std::max(f.gathered_peak, mine.gathered_peak);
  }
  return f;
}

}  // namespace pipebench::bench
