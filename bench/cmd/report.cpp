// `pipebench report FILE [--run ID] [--json] [--trace OUT.json] [--html OUT.html [--timeline RUN,...]]
// [--force]`: reads a results file back;
// never needs MPI. The file may be damaged: it is read in a child process (bench/results/store.hpp), a
// damaged run is skipped with a warning, a damaged file is one error line. docs/report.md shows the output.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "analysis/error.hpp"
#include "analysis/text.hpp"
#include "bench/commands.hpp"
#include "bench/flags.hpp"
#include "bench/render/comm_text.hpp"
#include "bench/render/output.hpp"
#include "bench/render/report.hpp"
#include "bench/results/store.hpp"
#include "bench/render/chakra.hpp"
#include "bench/render/trace.hpp"
#include "bench/render/train_text.hpp"
#include "bench/render/html.hpp"
#include "bench/cmd/report_input.hpp"

namespace pipebench::bench {

namespace {

struct ReportSettings {
  std::string file;
  int run = 0;  // 0: none chosen
  bool json = false, csv = false;
  Format format = Format::text;
  std::string trace, trace_kineto, trace_chakra;
  std::string html;
  std::vector<int> timeline;  // runs whose timelines the HTML page shows (empty: one per schedule)
  bool force = false;
  TrainSettings train;
};

std::vector<std::pair<int, const RunResult*>> runs_of(const RunListing& l) {
  std::vector<std::pair<int, const RunResult*>> out;
  for (const auto& r : l.runs) out.emplace_back(r.id, &r.run);
  return out;
}

// --trace without --run is fine when the file holds exactly one run.
int run_for_trace(const ReportSettings& o, const RunListing& listing) {
  if (listing.runs.size() == 1) return listing.runs.front().id;
  if (listing.runs.empty()) throw UsageError("'" + o.file + "' holds no complete runs, so there is nothing to trace");
  std::vector<int> ids;
  for (const auto& r : listing.runs) ids.push_back(r.id);
  const char* flag = !o.trace.empty() ? "--trace" : !o.trace_kineto.empty() ? "--trace-kineto" : "--trace-chakra";
  throw UsageError(std::string(flag) + " needs --run ID: '" + o.file + "' holds runs " + id_ranges(ids));
}

bool traces(const ReportSettings& o) { return !o.trace.empty() || !o.trace_kineto.empty() || !o.trace_chakra.empty(); }

// The traces asked for of run `id` (the per-rank ones check every rank's path before the first file).
void write_traces(const ReportSettings& o, const RunResult& run, int id) {
  const bool text = o.format == Format::text;
  if (!o.trace.empty()) {
    const std::size_t n = write_chrome_trace(run, o.trace, o.force);
    if (text) std::cout << "# trace of run " << id << " written to " << o.trace << " (" << n << " events)\n";
  }
  if (!o.trace_kineto.empty()) {
    const std::size_t n = write_kineto_traces(run, o.trace_kineto, o.force);
    if (text) std::cout << "# Kineto traces of run " << id << " written to " << o.trace_kineto << ".<rank>.json (" << n << " ranks)\n";
  }
  if (!o.trace_chakra.empty()) {
    const std::size_t n = write_chakra_traces(run, o.trace_chakra, o.force);
    if (text) std::cout << "# Chakra traces of run " << id << " written to " << o.trace_chakra << ".<rank>.et (" << n << " ranks)\n";
  }
}

void warn_damaged(const ReportSettings& o, const RunListing& listing) {
  for (const auto& d : listing.damaged)
    std::fprintf(stderr, "pipebench: warning: run %d of %s is damaged and is skipped: %s\n", d.id,
                 quoted(o.file, 200).c_str(), d.reason.c_str());
}

// --html: the whole page is rendered before the file is written (write_output: temporary + rename).
void report_html(const ReportSettings& o) {
  if (o.run != 0 || o.json || o.csv || traces(o))
    throw UsageError("--html makes the whole page: give it without --run, --json, --csv and the traces");
  check_output_path(o.html, "--html", o.force);
  const ReportInput in = report_input(o.file, o.timeline);
  warn_damaged(o, in.listing);
  write_output(o.html, "--html", [&](std::ostream& out) { write_html_report(out, in); }, o.force);
  std::cout << "# HTML report of " << in.listing.runs.size() << " run(s)";
  if (!in.comm.empty()) std::cout << " and " << in.comm.size() << " communication result(s)";
  std::cout << " written to " << o.html << '\n';
}

void report(const ReportSettings& o) {
  if (!o.html.empty()) return report_html(o);
  if (!o.timeline.empty()) throw UsageError("--timeline chooses the runs of the --html page; give --html OUT.html too");
  // A trace path that cannot be written is refused before the file is read.
  if (!o.trace.empty()) check_output_path(o.trace, "--trace", o.force);
  if (o.run == 0) {
    const RunListing listing = list_runs(o.file);
    warn_damaged(o, listing);
    const int traced = traces(o) ? run_for_trace(o, listing) : 0;
    const std::vector<StoredComm> comms = readable_comms(o.file);  // `pipebench comm` results
    JsonDocument doc = listing_document(o.file, listing, &comms);
    if (o.train.tokens > 0) doc.tail["train"] = train_json(runs_of(listing), o.train);
    const auto sink = make_sink(o.format, std::cout, std::cerr, doc);
    write_listing(*sink, o.file, listing, &comms);
    sink->legend(train_lines(runs_of(listing), o.train));
    sink->finish();
    if (traced) write_traces(o, read_run(o.file, traced), traced);
    return;
  }
  const RunResult run = read_run(o.file, o.run);
  JsonDocument one;
  one.one_object = true;
  const auto sink = make_sink(o.format, std::cout, std::cerr, one);
  sink->begin_table(runs_table(), false, "");  // the text is the run's own page
  Record rec;
  rec.text = render_run(o.file, o.run, run) + train_lines({{o.run, &run}}, o.train);
  rec.cells = run_row(o.run, run);
  rec.objects.push_back(run_json(o.run, run, true));
  sink->record(rec);
  sink->end_table();
  sink->finish();
  write_traces(o, run, o.run);
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "report", "Show the runs in a results file: a table of runs, one run's ranks and metadata, JSON, a Chrome trace, or an HTML page with plots (--html)");
  auto o = std::make_shared<ReportSettings>();
  cmd->add_option("file", o->file, "HDF5 results file written by `pipebench run`")->required();
  add(*cmd, {"--run", "Show this run (an id >= 1): its summary, per-rank table and metadata"}, o->run);
  add(*cmd, flag::json, o->json)->description("Print JSON instead of tables (times in seconds): the run object of docs/json.md");
  add(*cmd, flag::csv, o->csv);
  add(*cmd, flag::trace, o->trace)->description("Write the run's Chrome trace (Perfetto, chrome://tracing) to this file");
  add(*cmd, {"--trace-kineto", "Write the run's per-rank Kineto-style traces (Holistic Trace Analysis) to PREFIX.<rank>.json"},
      o->trace_kineto);
  add(*cmd, {"--trace-chakra", "Write the run's per-rank Chakra execution traces (ASTRA-sim) to PREFIX.<rank>.et"},
      o->trace_chakra);
  add(*cmd, flag::html, o->html);
  add(*cmd, {"--timeline", "Runs whose measured and simulated timelines the --html page shows (comma list of ids; default: the first run of each schedule)", 1},
      o->timeline);
  add(*cmd, flag::force, o->force)->description("Replace the --trace or --html file if it exists");
  add_large_count(*cmd, flag::train_tokens, o->train.tokens);
  add(*cmd, flag::gpu_hour_price, o->train.price)->type_name("PRICE");
  cmd->callback([o] {
    o->format = output_format(o->json, o->csv);
    report(*o);
  });
}

}  // namespace pipebench::bench
