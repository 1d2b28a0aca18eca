#pragma once
// Balanced stages (--layers-per-stage auto): the flags of the stage split, and the calibration step
// that measures the per-layer, embedding and head costs the split balances (kernels::balance_layers).
#include <vector>

#include "bench/run/plan.hpp"

namespace CLI {
class App;
}

namespace pipebench::bench {

// --layers-per-stage, --balance, --embedding-stage, --head-stage into `md`, in help group `group`.
void add_stage_split_flags(CLI::App& cmd, kernels::TransformerWorkloadConfig& md, const char* group);

// With --layers-per-stage auto on the transformer and --balance measured, every rank times one
// micro-batch's F+I+W of a layer, of the embedding and of the head (kernels::measure_stage_costs) for
// each tensor-parallel size of the sweep; the ranks agree on the largest of each (so that every rank
// plans the same split), the costs go into rs.model, and `plans` is planned again. Then (either
// balance) rank 0 prints, per distinct stage count, each stage's cost with the even split and with the
// balanced one, their spread, and the step-time gain. Called by every rank, after a plan_sweep that
// succeeded everywhere; needs Kokkos.
void balance_stages(RunSettings& rs, int world, std::vector<Plan>& plans);

}  // namespace pipebench::bench
