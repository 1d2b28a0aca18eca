#pragma once
// Each subcommand lives in its own cmd_<name>.cpp and registers itself on the top-level app. The
// callback it installs does the work; errors propagate as pipebench::Error to main().
#include <CLI/CLI.hpp>

namespace pipebench::bench {

void add_info_command(CLI::App& app);
void add_schedule_command(CLI::App& app);
void add_simulate_command(CLI::App& app);
void add_topology_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_report_command(CLI::App& app);

}  // namespace pipebench::bench
