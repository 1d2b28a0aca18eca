#pragma once
// ZeRO-3 (FSDP) over one pipeline rank's actions: which stages' weights are all-gathered before each
// action and released after it, and what that costs per step (gathers, the most gathered stages held at
// once). The one home of these rules: the executor follows the plan, the run's memory and traffic
// formulas and the planner count from it (docs/formulas.md "ZeRO-3").
//
// A stage's weights are gathered whole (in the data-parallel buckets of its flat buffer), the unit
// PyTorch's FSDP calls a module; an action uses the stage it runs (an overlapped F&B pair both of its
// stages). With reshard after forward (FSDP's default), every action gathers the stages it uses and
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

// The stages action `a` computes with: its own, and an overlapped pair's backward stage.
std::vector<int> stages_used(const Action& a);

GatherPlan gather_plan(const Schedule& s, int rank, bool reshard_after_forward);

// The most gathered weight bytes the rank holds at once: during an action, the stages held (gathered
// and not yet released) and, with prefetch, the next action's gathers in flight. `stage_bytes` is
// indexed by stage (the gathered size of each of the rank's stages; 0 for the others).
double gathered_peak_bytes(const GatherPlan& g, const std::vector<double>& stage_bytes, bool prefetch);

// Gathers per step of one stage of a rank holding v chunks with m micro-batches (the planner's view, no
// action list): every F, B, I and W of the stage with reshard after forward (2 m, or 3 m with split W),
// one otherwise. Equal to gather_plan's count for each stage of the catalog's schedules.
std::int64_t gathers_per_stage(int m, bool split_w, bool reshard_after_forward);

}  // namespace pipebench::analysis
