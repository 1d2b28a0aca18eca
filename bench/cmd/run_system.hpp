#pragma once
// `pipebench run --system FILE.toml` (docs/run.md "System description"): the facts of MLPerf's system
// description that software cannot detect (accelerator model, count and memory per node, interconnect
// and its speeds, topology, cooling, power limits), stored with each run as metadata `system.<key>`
// beside what pipebench detects, shown by `report` and compared by `compare` (like for like).
#include <map>
#include <string>
#include <vector>

namespace pipebench::bench {

// The keys a [system] table may hold, in MLPerf Training's system-description field names where MLPerf
// has one (its systems/*.json: accelerator_model_name, accelerators_per_node, ...).
const std::vector<std::string>& system_keys();

// The [system] table of `path` (bench/config_file.hpp's grammar) as key -> value. UsageError naming the
// file, the line and the key for an unknown key, and for everything config_file refuses.
std::map<std::string, std::string> read_system_file(const std::string& path);

}  // namespace pipebench::bench
