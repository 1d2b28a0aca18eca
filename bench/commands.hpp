#pragma once
// Each subcommand lives in its own bench/cmd/<name>.cpp and registers itself on the top-level app. The
// callback it installs does the work; errors propagate as pipebench::Error to main().
#include <CLI/CLI.hpp>

#include "bench/exit_code.hpp"

namespace pipebench::bench {


// The command line as typed, recorded in run metadata (main() sets it before parsing).
void set_command_line(int argc, char** argv);
const std::string& command_line_text();

void add_info_command(CLI::App& app);
void add_schedule_command(CLI::App& app);
void add_simulate_command(CLI::App& app);
void add_topology_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_report_command(CLI::App& app);
void add_merge_command(CLI::App& app);
void add_rerun_command(CLI::App& app);
void add_plan_command(CLI::App& app);
void add_comm_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_gemm_command(CLI::App& app);

}  // namespace pipebench::bench
