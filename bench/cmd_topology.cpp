// `pipebench topology`: placeholder until its issue lands.
#include "analysis/error.hpp"
#include "bench/commands.hpp"

namespace pipebench::bench {

void add_topology_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("topology", "(not implemented yet)");
  cmd->allow_extras();
  cmd->callback([] { throw Error("'topology' is not implemented yet"); });
}

}  // namespace pipebench::bench
