// `pipebench schedule`: placeholder until its issue lands.
#include "analysis/error.hpp"
#include "bench/commands.hpp"

namespace pipebench::bench {

void add_schedule_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("schedule", "(not implemented yet)");
  cmd->allow_extras();
  cmd->callback([] { throw Error("'schedule' is not implemented yet"); });
}

}  // namespace pipebench::bench
