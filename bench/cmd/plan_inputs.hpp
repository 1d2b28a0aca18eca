#pragma once
// What `pipebench plan` reads besides its flags: a machine file (TOML, one [machine] table; docs/model.md
// "Machine files") and, through bench/results/calibration.hpp, a results file to calibrate from.
#include <string>
#include <vector>

#include "analysis/plan/model.hpp"
#include "bench/config_file.hpp"

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

}  // namespace pipebench::bench
