#pragma once
// ZeRO-3 (FSDP) over one pipeline rank's actions: which stages' weights are all-gathered before each
// action and released after it, and what that costs per step (gathers, the most gathered stages held at
// once). The one home of these rules: the executor follows the plan, the run's memory and traffic
// formulas and the planner count from it (docs/formulas.md "ZeRO-3").
//
// A stage's weights are gathered whole (in the data-parallel buckets of its flat buffer), the unit
// PyTorch's FSDP calls a module; an action uses the stage it runs (an overlapped F&B pair both of its
// stages), except a split W, whose weight gradients need the stashed inputs and the outputs' gradients
// but not the weights (as FSDP gathers in the forward and the backward only). With reshard after forward (FSDP's default), every action gathers the stages it uses and
// releases them after; without it (what Llama 3 ran with pipelining), a stage is gathered before its
// first action of the step and released after its last.
#include <cstdint>
#include <vector>

#include "analysis/schedule.hpp"

namespace pipebench::analysis {

struct GatherPlan {
  std::vector<std::vector<int>> gather_before;  // per action of the rank: the stages gathered before it
  std::vector<std::vector<int>> release_after;  // per action: the stages released after it
  int gathers() const;                          // per step
};

// The stages whose weights action `a` reads: its own, an overlapped pair's backward stage, none for W.
std::vector<int> stages_used(const Action& a);

GatherPlan gather_plan(const Schedule& s, int rank, bool reshard_after_forward);

// The most gathered weight bytes the rank holds at once: during an action, the stages held (gathered
// and not yet released) and, with prefetch, the next action's gathers in flight. `stage_bytes` is
// indexed by stage (the gathered size of each of the rank's stages; 0 for the others).
double gathered_peak_bytes(const GatherPlan& g, const std::vector<double>& stage_bytes, bool prefetch);

// Gathers per step of one stage through which m micro-batches pass (the planner's view, without an
// action list): its forward and its backward (B or I) of each with reshard after forward (2 m), one
// otherwise. gather_plan's count for each stage of a schedule that runs the stage's F and backward as
// separate actions (tests/analysis/test_zero.cpp checks the catalog's schedules).
std::int64_t gathers_per_stage(int m, bool reshard_after_forward);

// A 16-bit run's weights decoded to fp32 for each action that reads them (kernels/half_weights.hpp):
// the most bytes held at once over the rank's actions, each holding the stages it uses (stages_used,
// at `stage_bytes`, indexed by stage) and releasing them after; with one chunk per rank, one chunk's.
double decoded_peak_bytes(const Schedule& s, int rank, const std::vector<double>& stage_bytes);

// The training state a rank holds between steps, in bytes per part, and what a ZeRO stage shards
// (Rajbhandari et al. 2020, section 5; Megatron-Core's distributed optimizer is stage 1): 1 the
// optimizer's state and the main weights, 2 the gradients too, 3 the weights too. `widths` are the
// bytes each part keeps per parameter, `whole` the parameters of the rank's stages and `shard` the
// rank's share of them (whole where nothing is split). The one rule both the run's formula
// (kernels::state_bytes, at the widths its buffers have) and the planner (analysis/plan/state.cpp, at
// Megatron's mixed-precision widths) apply.
struct StateParts {
  double weights = 0, gradients = 0, main_weights = 0, optimizer = 0;
};
// Per parameter, Megatron-LM's mixed-precision layout ("Distributed Optimizer" docs): 16-bit weights,
// 32-bit main gradients, fp32 main weights and Adam's two fp32 moments (18 bytes, or 6 + 12/d under
// the distributed optimizer). What the planner counts and what a --precision bf16|fp16 run holds.
constexpr StateParts kMixedPrecisionWidths{2, 4, 4, 8};
StateParts sharded_state(const StateParts& widths, int zero, double whole, double shard);

}  // namespace pipebench::analysis
