#pragma once
// What `pipebench plan` reads besides its flags: a machine file (TOML, one [machine] table; docs/model.md
// "Machine files"), through bench/results/calibration.hpp a results file to calibrate from, and the rank
// order, through topology::Grid.
#include <string>
#include <vector>

#include "analysis/plan/model.hpp"
#include "bench/config_file.hpp"
#include "bench/results/calibration.hpp"

namespace pipebench::bench {

// The keys of a [machine] table and their units, in the order docs/model.md lists them.
const std::vector<std::string>& machine_file_keys();

// A machine from the entries of a [machine] table; `file` names it in messages. Without `base` (a preset
// to start from) the figures peak_tflops, memory_gib, hbm_gbps, intra_node_gbps and inter_node_gbps are
// required. UsageError naming the file, the line and the key for an unknown key or a bad value.
analysis::plan::MachineSpec machine_from_entries(const std::vector<ConfigEntry>& entries, const std::string& file);

// `--machine NAME|FILE`: a preset name, or a path (anything with '/' or ending in .toml) read as a machine
// file.
analysis::plan::MachineSpec load_machine(const std::string& text);

// A machine calibrated from a results file: the preset's memory, and the file's link and rates. With a
// GEMM sweep, each product at its shape's measured rate and the element-wise work at the sweep's
// bandwidth, its passes per operation fitted so that the model gives the file's first transformer run
// its measured step time (the kernels' own element-wise passes, which no sweep measures); without one,
// the runs' achieved FLOP rate over whole actions (element-wise work included) and the preset's
// device bandwidth.
analysis::plan::MachineSpec calibrated(analysis::plan::MachineSpec m, const Calibration& c);

// `--order`: each layout's strides in the rank grid of topology::Grid under `order` (any order of tp, pp
// and dp, with cp and ep where their size is 1; Megatron-Core's semantics). Throws Grid's UsageError for
// an order it refuses, before any layout is asked for.
analysis::plan::RankOrder rank_order(const std::string& order);

}  // namespace pipebench::bench
