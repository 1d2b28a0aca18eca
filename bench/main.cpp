// pipebench: the single executable. Exit codes: 0 success, 1 runtime failure, 2 usage error, 75 a `run`
// stopped by SIGUSR1/SIGTERM before its end (bench/run/stop.hpp; --append --resume completes it). Every
// error is one line on stderr, `pipebench: error: ...` (docs/design.md "Conventions").
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <exception>
#include <iostream>
#include <new>
#include <string>

#include "analysis/error.hpp"
#include "analysis/replay.hpp"
#include "analysis/text.hpp"
#include "bench/commands.hpp"
#include "bench/config_file.hpp"
#include "bench/flags.hpp"
#include "bench/version.hpp"

namespace {

// This process's rank as the launcher (MPICH/Hydra, Open MPI, Slurm) announces it; 0 when not launched.
int launcher_rank() {
  for (const char* var : {"PMI_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"})
    if (const char* v = std::getenv(var)) return std::atoi(v);
  return 0;
}

// A CLI11 message made safe for one line: it echoes values raw, so control bytes are escaped, and it
// is cut at a length a terminal shows.
std::string one_line(const std::string& msg) {
  const std::string q = pipebench::quoted(msg, 600);
  std::string out;
  // quoted() also escapes quotes and backslashes, which messages use as text: undo only those.
  for (std::size_t i = 1; i + 1 < q.size(); ++i) {
    if (q[i] == '\\' && (q[i + 1] == '\'' || q[i + 1] == '\\')) ++i;
    out += q[i];
  }
  return out;
}

// The subcommand the command line chose ("run"), or "" before one was recognised.
std::string chosen(const CLI::App& app) {
  const auto subs = app.get_subcommands();
  return subs.empty() ? "" : subs.front()->get_name();
}

// A CLI11 parse error as one line that says what to do. Unknown arguments are named (escaped), with
// the nearest flag of the subcommand when one is close.
// A message as printed: the user text inside it (a flag's value, a file's name or contents, an HDF5
// library's text) cannot break the line or send escape sequences to the terminal (one_line). A
// schedule's error keeps the lines of its grid (analysis/validate.cpp), each escaped.
std::string printable(const std::exception& e) {
  if (!dynamic_cast<const pipebench::analysis::ScheduleError*>(&e)) return pipebench::one_line(e.what());
  std::string out, text = e.what();
  for (std::size_t at = 0; at <= text.size();) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    out += (at ? "\n" : "") + pipebench::one_line(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

std::string parse_error_text(const CLI::App& app, const CLI::ParseError& e) {
  const std::string sub = chosen(app);
  const std::string help = " (`pipebench " + (sub.empty() ? "" : sub + " ") + "--help` lists the allowed flags)";
  if (dynamic_cast<const CLI::ExtrasError*>(&e) == nullptr) return one_line(e.what()) + help;
  const auto extras = app.remaining(true);
  if (extras.empty()) return one_line(e.what()) + help;
  const std::string& first = extras.front();
  std::string text = "unexpected argument " + pipebench::quoted(first);
  if (first.rfind("--", 0) == 0 && !sub.empty()) {
    const std::string name = first.substr(2, first.find('=') == std::string::npos ? std::string::npos : first.find('=') - 2);
    text = "unknown flag " + pipebench::quoted(first) +
           pipebench::bench::did_you_mean(*app.get_subcommand(sub), name, "--");
  }
  for (std::size_t i = 1; i < extras.size() && i < 4; ++i) text += ", then " + pipebench::quoted(extras[i]);
  if (extras.size() > 4) text += " and " + std::to_string(extras.size() - 4) + " more";
  return text + help;
}

// Output that did not reach standard output (a full disk, /dev/full) is a failed command, not a
// success: one line, exit code 2, where the command itself had succeeded. This is the one place that
// says so, for every command (the sink and the front ends leave a failed std::cout to it): an MPI job
// (`run`, `comm`, `rerun`) first ends as a job, with its runs in its file, and then rank 0, the one
// that writes stdout, exits 2.
int checked_stdout(int rc) {
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno;
  if (rc != 0 || (flushed && !std::ferror(stdout) && std::cout.good())) return rc;
  std::fprintf(stderr, "pipebench: error: standard output could not be written (%s): what was printed is incomplete\n",
               err ? std::strerror(err) : "write error");
  return 2;
}

int run_main(int argc, char** argv);

}  // namespace

int main(int argc, char** argv) {
  // A file size limit (ulimit -f) makes a write fail with EFBIG, which the writers report and clean up
  // after, instead of SIGXFSZ killing the process and leaving a temporary file behind.
  std::signal(SIGXFSZ, SIG_IGN);
  return checked_stdout(run_main(argc, argv));
}

namespace {

int run_main(int argc, char** argv) {
  CLI::App app{"pipebench: pipeline- and 3D-parallelism benchmark suite", "pipebench"};
  const bool first_rank = launcher_rank() == 0;
  try {
    pipebench::bench::set_command_line(argc, argv);
    app.set_version_flag("--version", std::string(pipebench::bench::version()) + " (" + pipebench::bench::commit() + ")");
    app.require_subcommand(1);
    pipebench::bench::add_info_command(app);
    pipebench::bench::add_schedule_command(app);
    pipebench::bench::add_simulate_command(app);
    pipebench::bench::add_topology_command(app);
    pipebench::bench::add_run_command(app);
    pipebench::bench::add_comm_command(app);
    pipebench::bench::add_gemm_command(app);
    pipebench::bench::add_plan_command(app);
    pipebench::bench::add_report_command(app);
    pipebench::bench::add_compare_command(app);
    pipebench::bench::add_merge_command(app);
    pipebench::bench::add_rerun_command(app);
    pipebench::bench::add_config_option(app);
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
    if (first_rank) std::fprintf(stderr, "pipebench: error: %s\n", pipebench::one_line(parse_error_text(app, e)).c_str());
    return 2;
  } catch (const pipebench::UsageError& e) {
    // Flags are parsed straight into their fields, so a bad value lands here, on every rank. Our
    // messages quote values already; the few with more lines (a schedule's grid) mean them.
    if (first_rank) std::fprintf(stderr, "pipebench: error: %s\n", printable(e).c_str());
    return 2;
  } catch (const std::bad_alloc&) {
    // A last resort: sizes are bounded before anything is allocated, but a machine may still have less.
    const std::string sub = chosen(app);
    std::fprintf(stderr, "pipebench: error: out of memory while running `pipebench%s`: ask for less (smaller sizes, "
                         "fewer configurations) or run where more memory is free\n",
                 sub.empty() ? "" : (" " + sub).c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pipebench: error: %s\n", printable(e).c_str());
    return 1;
  }
  return 0;
}

}  // namespace
