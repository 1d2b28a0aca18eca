// `pipebench schedule`: one schedule, generated or imported from a CSV, validated, then printed or
// written as a grid, CSV (torch.distributed.pipelining), JSON or an SVG timeline (docs/simulate.md).
#include <iostream>
#include <memory>
#include <utility>

#include "analysis/csv.hpp"
#include "analysis/error.hpp"
#include "analysis/catalog.hpp"
#include "bench/commands.hpp"
#include "bench/flags.hpp"
#include "bench/parse.hpp"
#include "bench/cmd/simulate_one.hpp"
#include "bench/render/json.hpp"
#include "bench/render/output.hpp"

namespace pipebench::bench {

namespace {

struct ScheduleSettings {
  std::string schedule, format = "grid", out, import_csv;
  int p = 0, m = 0, v = 0, group = 0;
  bool generated = false;  // any of --schedule, -p, -m, -v, --group given
  bool force = false;
  TimeSettings times;
};

std::string catalog_help() {
  std::string s = "Schedule name:";
  for (const auto& i : analysis::schedule_catalog()) s += "\n  " + i.name + ": " + i.summary;
  return s;
}

std::string figures_line(const SimRun& r, const Times& t) {
  const TimeDisplay d = time_display(t);
  const auto& mt = r.sim.metrics;
  std::string s = "# simulated: makespan " + fmt("%.6g", mt.makespan * d.factor) + " " + d.unit + ", bubble " +
                  fmt("%.3f", 100 * mt.bubble_fraction) + " %";
  if (!r.analytic)
    s += " (imported schedule: no formula)";
  else if (r.analytic->bubble_fraction.value)
    s += " (formula " + fmt("%.3f", 100 * *r.analytic->bubble_fraction.value) + " %)";
  else
    s += " (formula n/a: " + r.analytic->bubble_fraction.reason + ")";
  return s;
}

// Writes the output as it goes: a grid, CSV or SVG needs no second copy in memory (the JSON tree is
// bounded by check_listed_actions() before the simulation), and the caller checks the stream.
void render(std::ostream& os, const ScheduleSettings& f, const SimRun& r, const Times& t) {
  const auto& s = r.schedule;
  if (f.format == "csv") return analysis::write_csv(os, s);
  if (f.format == "svg") return write_svg_of(os, r, t);
  if (f.format == "json") {
    auto j = schedule_json(s);
    j["simulated"] = summary_json(s, r.sim.metrics, r.analytic ? &*r.analytic : nullptr);
    os << j.dump(2) << "\n";
    return;
  }
  os << "# " << s.name << ": p=" << s.p << " m=" << s.m << " v=" << s.v() << (s.pipes > 1 ? " pipes=2" : "")
     << ", " << s.num_actions() << " actions, valid\n";
  analysis::write_grid(os, s);
  os << "# times: tf=" << to_text(f.times.tf) << " tb=" << to_text(f.times.tb)
     << " tw=" << to_text(f.times.tw) << (t.t_overlap < 0 ? "" : " t_overlap=" + to_text(f.times.t_overlap))
     << (t.p2p > 0 ? " p2p=" + to_text(f.times.p2p) : "")
     << (t.stage_cost.empty() ? "" : " stages=" + list_text(t.stage_cost)) << '\n'
     << figures_line(r, t) << '\n';
  if (r.analytic && !r.analytic->idle.formula.empty()) {
    const auto& idle = r.analytic->idle;
    os << "# formula (" << r.analytic->source << "): " << analysis::idle_measure_name(r.analytic->idle_measure)
       << " = " << idle.formula << ", holds when " << idle.condition << '\n';
  }
  print_rank_table(os, r, t);
}

void run(const ScheduleSettings& f) {
  const bool generated = f.generated;
  if (generated && !f.import_csv.empty())
    throw UsageError(
        "--import-csv cannot be combined with --schedule, -p, -m, -v or --group: the CSV defines the schedule");
  if (!generated && f.import_csv.empty())
    throw UsageError("no schedule given: pass --schedule NAME -p P -m M, or --import-csv FILE");
  const Times t = parse_times(f.times);

  if (!f.out.empty()) check_output_path(f.out, "--out", f.force);  // before any work

  const bool with_timeline = f.format == "svg";  // only the picture shows each action
  analysis::Schedule s;
  if (generated) {
    if (f.schedule.empty() || f.p == 0 || f.m == 0)
      throw UsageError("--schedule, -p and -m are all required to generate a schedule");
    const analysis::ScheduleParams q{f.schedule, f.p, f.m, f.v, f.group};
    if (f.format == "json" || f.format == "svg") check_listed_actions(q, "--format " + f.format);
    s = analysis::make_schedule(q);
  } else {
    analysis::CsvImportNotes notes;
    s = analysis::read_csv_file(f.import_csv, &notes);
    if (notes.b_read_as_i > 0) {  // before validation, which may then fail on what was read
      const bool one = notes.b_read_as_i == 1;
      std::cerr << "pipebench: warning: " << f.import_csv << ": " << notes.b_read_as_i
                << (one ? " B action" : " B actions") << " followed by a W of the same stage and micro-batch "
                << (one ? "was" : "were") << " read as I (torch's older zero-bubble CSVs)\n";
    }
  }
  if (f.format == "json" || f.format == "svg") check_listed_actions(s, "--format " + f.format);
  const SimRun r = simulate_one(std::move(s), generated ? f.group : 0, t, generated, with_timeline);

  if (f.out.empty()) {
    render(std::cout, f, r, t);  // a failed write to stdout: bench/main.cpp's checked_stdout
  } else {
    write_output(f.out, "--out", [&](std::ostream& os) { render(os, f, r, t); }, f.force);
    std::cout << "# wrote " << f.out << " (" << f.format << ")\n";
  }
  // An imported schedule's figures are part of the answer, but CSV and SVG cannot carry them: they go
  // to stdout when the file went elsewhere, else to stderr so that stdout stays a valid file.
  if (!generated && (f.format == "csv" || f.format == "svg")) {
    std::ostream& os = f.out.empty() ? std::cerr : std::cout;
    os << figures_line(r, t) << '\n';
    print_rank_table(os, r, t);
  }
}

}  // namespace

void add_schedule_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("schedule", "Print or write one schedule (generated or imported), validated");
  auto f = std::make_shared<ScheduleSettings>();
  const std::vector<CLI::Option*> generating = {
      add(*cmd, flag::schedule, f->schedule)->description(catalog_help()), add(*cmd, flag::pipeline, f->p),
      add(*cmd, flag::microbatches, f->m), add(*cmd, flag::chunks, f->v), add(*cmd, flag::group, f->group)};
  add(*cmd, {"--format", "Output: grid (text), csv (torch.distributed.pipelining), json, svg"}, f->format,
      {{"grid", "grid"}, {"csv", "csv"}, {"json", "json"}, {"svg", "svg"}});
  add(*cmd, flag::out, f->out)->description("Write to this file instead of stdout");
  add(*cmd, {"--import-csv", "Read a schedule CSV (one row per rank), validate and simulate it"}, f->import_csv);
  add(*cmd, flag::force, f->force);
  add_time_flags(*cmd, f->times, true);
  cmd->callback([f, generating] {
    for (const auto* o : generating) f->generated = f->generated || o->count() > 0;
    run(*f);
  });
}

}  // namespace pipebench::bench
