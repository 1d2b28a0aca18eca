#include "bench/cmd/run_system.hpp"

#include <algorithm>

#include "analysis/error.hpp"
#include "bench/config_file.hpp"

namespace pipebench::bench {

const std::vector<std::string>& system_keys() {
  // MLPerf Training system description fields (mlcommons/training_results_v*, systems/*.json), plus
  // power_limit and interconnect speeds, which MLPerf folds into its notes.
  static const std::vector<std::string> kKeys = {
      "system_name",          "number_of_nodes",          "accelerator_model_name",
      "accelerators_per_node", "accelerator_memory_capacity", "accelerator_interconnect",
      "accelerator_interconnect_topology", "accelerator_interconnect_bandwidth", "host_processor_model_name",
      "host_memory_capacity", "host_networking",          "host_networking_topology",
      "host_networking_bandwidth", "host_storage_type",   "cooling",
      "power_limit",          "hw_notes"};
  return kKeys;
}

std::map<std::string, std::string> read_system_file(const std::string& path) {
  const std::string body = read_toml_file(path, "--system", "system");
  std::map<std::string, std::string> out;
  const auto& keys = system_keys();
  for (const ConfigEntry& e : parse_toml_table(body, path, "--system", "system")) {
    if (std::find(keys.begin(), keys.end(), e.key) == keys.end()) {
      std::string allowed;
      for (const auto& k : keys) allowed += (allowed.empty() ? "" : ", ") + k;
      throw UsageError("--system '" + path + "' line " + std::to_string(e.line) + ": unknown key '" + e.key +
                       "'; a [system] table takes " + allowed);
    }
    out[e.key] = e.value;
  }
  return out;
}

}  // namespace pipebench::bench
