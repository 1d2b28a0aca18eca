// `pipebench report`: placeholder until its issue lands.
#include "analysis/error.hpp"
#include "bench/commands.hpp"

namespace pipebench::bench {

void add_report_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("report", "(not implemented yet)");
  cmd->allow_extras();
  cmd->callback([] { throw Error("'report' is not implemented yet"); });
}

}  // namespace pipebench::bench
