// `pipebench info`: what this build is and what it found, one `key: value` line each (or --json).
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/commands.hpp"
#include "bench/flags.hpp"
#include "bench/results/h5.hpp"
#include "bench/version.hpp"
#include "comm/build_info.hpp"
#include "kernels/build_info.hpp"

namespace pipebench::bench {

namespace {

std::vector<std::pair<std::string, std::string>> collect() {
  return {
      {"pipebench", std::string(version()) + " (commit " + commit() + ")"},
      {"build", std::string(build_type()) + ", " + compiler()},
      {"mpi", comm::mpi_library_version()},
      {"kokkos", kernels::kokkos_version() + ", " + kernels::kokkos_backends()},
      {"kokkoskernels", kernels::kokkoskernels_version()},
      {"precision", kernels::precision_paths()},
      {"blas", kernels::blas_description()},
      {"hdf5", h5::library_description()},
      {"nccl", comm::nccl_version()},
      {"cuda", comm::cuda_runtime()},
  };
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Print the version, commit and the libraries this build uses");
  auto json = std::make_shared<bool>(false);
  add(*cmd, flag::json, *json)->description("Print one JSON object instead of text");
  cmd->callback([json] {
    const auto items = collect();
    if (*json) {
      nlohmann::ordered_json j;
      for (const auto& [k, v] : items) j[k] = v;
      std::cout << j.dump(2) << '\n';
      return;
    }
    for (const auto& [k, v] : items) std::cout << k << ": " << std::string(14 - k.size(), ' ') << v << '\n';
  });
}

}  // namespace pipebench::bench
