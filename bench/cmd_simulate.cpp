// `pipebench simulate`: placeholder until its issue lands.
#include "analysis/error.hpp"
#include "bench/commands.hpp"

namespace pipebench::bench {

void add_simulate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("simulate", "(not implemented yet)");
  cmd->allow_extras();
  cmd->callback([] { throw Error("'simulate' is not implemented yet"); });
}

}  // namespace pipebench::bench
