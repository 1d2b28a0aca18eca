#include "bench/run/zero_formula.hpp"

#include <algorithm>

#include "analysis/zero.hpp"
#include "kernels/transformer_workload.hpp"

namespace pipebench::bench {

namespace {
// The run's data-parallel groups (bench/run/configuration.cpp): the dense gradients reduce over the cp d
// ranks of a replica (Megatron-Core's dp-cp), the routed experts' over the cp d / ep holding the same
// experts (the expert-data-parallel group). Rank 0 of both holds the largest shards (kernels::zero_shards
// gives the lower ranks full ones) and every pipeline stage has such a rank: its first.
kernels::ZeroGroups run_groups(const RunSettings& rs, const Plan& pl, int r) {
  const int d = rs.cp * pl.mapping.d, edp = std::max(1, d / std::max(rs.ep, 1));
  return {d, r, edp, r % edp};
}
}  // namespace

kernels::StateBytes state_formula(const RunSettings& rs, const Plan& pl) {
  const Mapping& mp = pl.mapping;
  kernels::StateBytes most;
  for (int pp = 0; pp < mp.p; ++pp)
    for (int dp = 0; dp < rs.cp * mp.d; ++dp) {
      const kernels::StateBytes b = kernels::state_bytes(pl.model, pl.schedule, pp, rs.zero, rs.dp_buckets, run_groups(rs, pl, dp));
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
  const kernels::ZeroGroups g = run_groups(rs, pl, 0);
  if (g.d <= 1 || rs.workload != WorkloadKind::transformer) return f;
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
    std::vector<double> whole(static_cast<std::size_t>(s.num_stages()), 0), padded(whole), routed(whole);
    for (int st : s.stages_of_rank(r)) {
      const kernels::StageMemory m = kernels::estimate_memory(kernels::stage_config(pl.model, split, s.depth_of_stage(st)), e);
      const auto k = static_cast<std::size_t>(st);
      whole[k] = static_cast<double>(m.parameters * e);
      // The routed experts' gradients go over the expert-data-parallel group, as records of the dp
      // group: nothing to reduce, gather or shard where it is one rank.
      if (g.edp == 1) routed[k] = static_cast<double>(m.expert_parameters * e);
      // Each bucket padded to equal shards over its group (kernels::stage_zero_shards): the same for every rank.
      for (const kernels::ZeroShard& z : kernels::stage_zero_shards(m.parameters, m.parameters - m.expert_parameters, buckets, g))
        if (!z.expert || g.edp > 1)
          padded[k] += static_cast<double>(z.shard * static_cast<std::size_t>(z.expert ? g.edp : g.d) * e);
    }
    for (int st : s.stages_of_rank(r)) {
      const auto k = static_cast<std::size_t>(st);
      if (rs.zero == 0) mine.all_reduced += (whole[k] - routed[k]) * grad_wire;
      if (rs.zero >= 1) mine.reduce_scattered += padded[k] * grad_wire;
      if (rs.zero == 1 || rs.zero == 2) mine.all_gathered += padded[k] * weight_wire;  // the updated weights, once a step
    }
    if (rs.zero == 3) {
      const analysis::GatherPlan plan = analysis::gather_plan(s, r, rs.reshard_after_forward != 0);
      for (const auto& before : plan.gather_before)
        for (int st : before) mine.all_gathered += padded[static_cast<std::size_t>(st)] * weight_wire;
      for (double& w : whole) w *= weight_wire;  // the gathered stages, as kept
      mine.gathered_peak = analysis::gathered_peak_bytes(plan, whole, rs.gather_prefetch);
    }
    f.all_gathered = std::max(f.all_gathered, mine.all_gathered);
    f.reduce_scattered = std::max(f.reduce_scattered, mine.reduce_scattered);
    f.all_reduced = std::max(f.all_reduced, mine.all_reduced);
    f.gathered_peak = std::max(f.gathered_peak, mine.gathered_peak);
  }
  return f;
}

}  // namespace pipebench::bench
