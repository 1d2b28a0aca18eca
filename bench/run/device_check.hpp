#pragma once
// Whether `run` can use the device and the backend it was asked for, decided on rank 0 before any
// allocation (docs/gpu.md "Bad input"): an empty answer lets it go on, anything else is the one-line
// reason (a UsageError, exit code 2).
#include <string>

#include "bench/run/plan.hpp"
#include "kernels/device.hpp"

namespace pipebench::bench {

// Pure: from what the build and the node offer. `ranks_per_node`: the ranks on rank 0's node.
std::string device_refusal(const kernels::DeviceInfo& dev, bool nccl_built, const RunSettings& rs, int ranks_per_node,
                           int world_size);

// Asks the build and the CUDA runtime, then throws UsageError with device_refusal's reason, if any.
void check_device(const RunSettings& rs, int ranks_per_node, int world_size);

}  // namespace pipebench::bench
