// pipebench: the single executable. Exit codes: 0 success, 1 runtime failure, 2 usage error.
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "analysis/error.hpp"
#include "bench/commands.hpp"
#include "bench/version.hpp"

namespace {

// This process's rank as the launcher (MPICH/Hydra, Open MPI, Slurm) announces it; 0 when not launched.
int launcher_rank() {
  for (const char* var : {"PMI_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"})
    if (const char* v = std::getenv(var)) return std::atoi(v);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  pipebench::bench::set_command_line(argc, argv);
  CLI::App app{"pipebench: pipeline- and 3D-parallelism benchmark suite", "pipebench"};
  app.set_version_flag("--version", std::string(pipebench::bench::version()) + " (" + pipebench::bench::commit() + ")");
  app.require_subcommand(1);
  app.set_config("--config", "",
                 "Read flags from a TOML file: a [run] section with the long flag names as keys (docs/run.md); "
                 "flags on the command line win");
  pipebench::bench::add_info_command(app);
  pipebench::bench::add_schedule_command(app);
  pipebench::bench::add_simulate_command(app);
  pipebench::bench::add_topology_command(app);
  pipebench::bench::add_run_command(app);
  pipebench::bench::add_report_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const pipebench::bench::ExitCode& e) {
    return e.code;
  } catch (const CLI::ParseError& e) {
    // Under mpiexec or srun every rank parses the same flags: one of them says what is wrong.
    if (launcher_rank() == 0) std::fprintf(stderr, "pipebench: error: %s\nRun with --help for the allowed flags.\n", e.what());
    return 2;
  } catch (const pipebench::UsageError& e) {
    // Flags are parsed straight into their fields, so a bad value lands here, on every rank.
    if (launcher_rank() == 0) std::fprintf(stderr, "pipebench: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pipebench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
