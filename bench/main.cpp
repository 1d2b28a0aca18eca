// pipebench: the single executable. Exit codes: 0 success, 1 runtime failure, 2 usage error.
#include <cstdio>
#include <exception>

#include "analysis/error.hpp"
#include "bench/commands.hpp"
#include "bench/version.hpp"

int main(int argc, char** argv) {
  pipebench::bench::set_command_line(argc, argv);
  CLI::App app{"pipebench: pipeline- and 3D-parallelism benchmark suite", "pipebench"};
  app.set_version_flag("--version", std::string(pipebench::bench::version()) + " (" + pipebench::bench::commit() + ")");
  app.require_subcommand(1);
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
    std::fprintf(stderr, "pipebench: error: %s\nRun with --help for the allowed flags.\n", e.what());
    return 2;
  } catch (const pipebench::UsageError& e) {
    std::fprintf(stderr, "pipebench: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pipebench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
