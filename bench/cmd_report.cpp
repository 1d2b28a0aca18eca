// `pipebench report FILE [--run ID] [--json] [--trace OUT.json]`: reads a results file back; never
// needs MPI. docs/report.md shows the output.
#include <iostream>
#include <memory>
#include <string>

#include "analysis/error.hpp"
#include "bench/commands.hpp"
#include "bench/flags.hpp"
#include "bench/render/report.hpp"
#include "bench/results/store.hpp"
#include "bench/render/trace.hpp"

namespace pipebench::bench {

namespace {

struct Options {
  std::string file;
  int run = 0;  // 0: none chosen
  bool json = false;
  std::string trace;
};

// --trace without --run is fine when the file holds exactly one run.
int run_for_trace(const Options& o, const RunListing& listing) {
  if (listing.runs.size() == 1) return listing.runs.front().id;
  if (listing.runs.empty()) throw UsageError("'" + o.file + "' holds no complete runs, so there is nothing to trace");
  std::vector<int> ids;
  for (const auto& r : listing.runs) ids.push_back(r.id);
  throw UsageError("--trace needs --run ID: '" + o.file + "' holds runs " + id_ranges(ids));
}

void report(const Options& o) {
  if (o.run == 0) {
    const RunListing listing = list_runs(o.file);
    const int traced = o.trace.empty() ? 0 : run_for_trace(o, listing);
    if (o.json)
      std::cout << listing_json(o.file, listing).dump(2) << '\n';
    else
      std::cout << render_listing(o.file, listing);
    if (traced) {
      const std::size_t n = write_chrome_trace(read_run(o.file, traced), o.trace);
      if (!o.json) std::cout << "# trace of run " << traced << " written to " << o.trace << " (" << n << " events)\n";
    }
    return;
  }
  const RunResult run = read_run(o.file, o.run);
  if (o.json)
    std::cout << run_json(o.run, run, true).dump(2) << '\n';
  else
    std::cout << render_run(o.file, o.run, run);
  if (!o.trace.empty()) {
    const std::size_t n = write_chrome_trace(run, o.trace);
    if (!o.json) std::cout << "# trace of run " << o.run << " written to " << o.trace << " (" << n << " events)\n";
  }
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "report", "Show the runs in a results file: a table of runs, one run's ranks and metadata, JSON, or a Chrome trace");
  auto o = std::make_shared<Options>();
  cmd->add_option("file", o->file, "HDF5 results file written by `pipebench run`")->required();
  cmd->add_option("--run", o->run, "Show this run: its summary, per-rank table and metadata")
      ->check(CLI::PositiveNumber);
  add(*cmd, flag::json, o->json)->description("Print JSON instead of tables (times in seconds): the run object of docs/json.md");
  add(*cmd, flag::trace, o->trace)->description("Write the run's Chrome trace (Perfetto, chrome://tracing) to this file");
  cmd->callback([o] { report(*o); });
}

}  // namespace pipebench::bench
