// `pipebench run`: placeholder until its issue lands.
#include "analysis/error.hpp"
#include "bench/commands.hpp"

namespace pipebench::bench {

void add_run_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "(not implemented yet)");
  cmd->allow_extras();
  cmd->callback([] { throw Error("'run' is not implemented yet"); });
}

}  // namespace pipebench::bench
