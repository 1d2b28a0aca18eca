// The static memory and data-parallel traffic of a layout by ZeRO stage (analysis/plan/ops.hpp,
// docs/model.md "Memory per GPU").
#include <algorithm>

#include "analysis/plan/ops.hpp"
#include "analysis/zero.hpp"
#include "analysis/transformer/params.hpp"

namespace pipebench::analysis::plan {

namespace {

// Per parameter, Megatron-LM's mixed-precision layout (analysis/zero.hpp, what a 16-bit run holds):
// 16-bit weights, 32-bit main gradients, and 12 bytes of optimizer state (fp32 master weights, Adam's m
// and v), which ZeRO-1 / the distributed optimizer shards over the d replicas: 18 bytes, or 6 + 12/d.
constexpr StateParts kWidths = kMixedPrecisionWidths;
constexpr double kWeightBytes = kWidths.weights, kGradBytes = kWidths.gradients;
// An Adam step moves about 30 bytes per parameter through device memory (reads fp32 weight, gradient,
// m, v; writes weight, m, v and the 16-bit copy): a memory-bound pass.
constexpr double kOptimizerTraffic = 30;

}  // namespace

// Static memory and data-parallel traffic by ZeRO stage over the cp d ranks that hold a replica's
// shard (Rajbhandari et al. 2020; Megatron's distributed optimizer is stage 1): 1 shards the 12 bytes of
// optimizer state, 2 the 4 of the fp32 gradients too, 3 the 16-bit weights too, which are then gathered
// per layer (two layers' worth held) in F and again in the backward for every micro-batch
// (analysis/zero.hpp's gathers_per_stage, the rule the run's executor follows per stage), with the
// gradients reduce-scattered once, after the last backward (as the run does). Stage 0: an all-reduce of the gradients; 1 and 2: their reduce-scatter and
// the weights' all-gather once a step.
void static_and_dp(const Problem& pr, const Layout& l, double params, double expert, StagePlan& sp) {
  const MachineSpec& mc = pr.machine;
  const int shards = l.d * std::max(1, l.cp), ep = std::max(1, l.ep);
  // The dense parameters shard over the cp d ranks, the routed experts over the cp d / ep that hold
  // the same ones (Megatron-Core's expert data parallelism).
  const double dense = params - expert, z = shards, ze = double(shards) / ep;
  const StateParts held = sharded_state(kWidths, l.zero, params, dense / z + expert / ze);
  sp.weights = held.weights;
  if (l.zero >= 3) sp.weights += 2 * kWeightBytes * double(transformer::layer_params(pr.model)) / l.t;
  sp.gradients = held.gradients;
  sp.optimizer_state = held.main_weights + held.optimizer;
  sp.static_bytes = sp.weights + sp.gradients + sp.optimizer_state + mc.memory_reserve_bytes;
  // Inside a node when the block of a group fits in one: the t d ranks of a pipeline stage in the order
  // tp-dp-pp, all t p d in tp-pp-dp (context-parallel ranks join the group, Megatron-Core's dp-cp).
  const std::int64_t stride = strides_of(pr, l).dp * std::max(1, l.cp);
  const int gpn = pr.gpus_per_node > 0 ? pr.gpus_per_node : mc.gpus_per_node;
  const bool inter = shards > 1 && stride * l.d > gpn;
  // One group's reduction time for `x` parameters over `n` ranks; the expert group's is its own.
  const auto reduce = [&](double x, int n) {
    const MachineSpec::GroupLink& own = mc.dp_link;
    if (l.zero == 0) return collective(mc, inter, kGradBytes * x, n, 2, own);
    if (l.zero <= 2)
      return collective(mc, inter, kGradBytes * x, n, 1, own) + collective(mc, inter, kWeightBytes * x, n, 1, own);
    return double(gathers_per_stage(sp.m, true)) * collective(mc, inter, kWeightBytes * x, n, 1, own) +
           collective(mc, inter, kGradBytes * x, n, 1, own);
  };
  sp.dp_time = reduce(dense, shards) + reduce(expert, shards / ep);
  sp.optimizer = kOptimizerTraffic * (l.zero >= 1 ? dense / z + expert / ze : params) / mc.hbm_bandwidth;
}

}  // namespace pipebench::analysis::plan
