// `pipebench simulate`: the cartesian product of schedules, p, m and v, each simulated and set beside
// its analytic figures; a fixed-width table (docs/simulate.md) or the JSON contract (docs/json.md).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "analysis/catalog.hpp"
#include "analysis/error.hpp"
#include "analysis/limits.hpp"
#include "analysis/replay.hpp"
#include "bench/commands.hpp"
#include "bench/flags.hpp"
#include "bench/parse.hpp"
#include "bench/cmd/simulate_one.hpp"
#include "bench/render/table.hpp"
#include "bench/render/json.hpp"
#include "bench/render/output.hpp"
#include "bench/render/sink.hpp"

namespace pipebench::bench {

namespace {

struct SimulateSettings {
  std::vector<std::string> schedules;
  std::vector<int> p, m, v{0};
  int group = 0;
  std::string svg;
  TimeSettings times;
  bool json = false;
  bool csv = false;
  bool timeline = false;
  bool force = false;
};

std::string config_name(const SimRun& r) {
  const auto& s = r.schedule;
  return s.name + " p=" + std::to_string(s.p) + " m=" + std::to_string(s.m) + " v=" + std::to_string(s.v()) +
         (r.group ? " g=" + std::to_string(r.group) : "");
}

// "out.svg" -> "out_1f1b_p4_m8_v1.svg" (and "_g4" for an interleaved group).
std::string svg_file_name(const std::string& file, const SimRun& r) {
  const auto& s = r.schedule;
  const std::string stem = file.size() > 4 && file.substr(file.size() - 4) == ".svg" ? file.substr(0, file.size() - 4) : file;
  return stem + "_" + s.name + "_p" + std::to_string(s.p) + "_m" + std::to_string(s.m) + "_v" + std::to_string(s.v()) +
         (r.group ? "_g" + std::to_string(r.group) : "") + ".svg";
}

// "first rank / max over ranks", the two figures of a peak that matter for memory sizing.
std::string peak_cell(const std::vector<int>& per_rank) {
  int mx = 0;
  for (int x : per_rank) mx = std::max(mx, x);
  return std::to_string(per_rank.empty() ? 0 : per_rank[0]) + "/" + std::to_string(mx);
}

// Numbered footnotes for the reasons a formula does not hold, each printed once.
class Footnotes {
 public:
  std::string mark(const std::string& schedule, const std::string& reason) {
    const std::string text = schedule + ": " + reason;
    auto it = index_.find(text);
    if (it == index_.end()) {
      it = index_.emplace(text, static_cast<int>(order_.size()) + 1).first;
      order_.push_back(text);
    }
    return "n/a[" + std::to_string(it->second) + "]";
  }
  std::string text() const {
    std::string s;
    for (std::size_t i = 0; i < order_.size(); ++i) s += "# [" + std::to_string(i + 1) + "] " + order_[i] + '\n';
    return s;
  }

 private:
  std::map<std::string, int> index_;
  std::vector<std::string> order_;
};

// The combinations a schedule rejects, one `# skipped` line per schedule and reason.
class Skipped {
 public:
  void add(const std::string& schedule, const std::string& combination, const std::string& reason) {
    auto it = std::find_if(groups_.begin(), groups_.end(),
                           [&](const Group& g) { return g.schedule == schedule && g.reason == reason; });
    if (it == groups_.end()) it = groups_.insert(groups_.end(), Group{schedule, reason, {}});
    it->combinations.push_back(combination);
  }
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    for (const auto& g : groups_) {
      std::string which;
      for (std::size_t i = 0; i < g.combinations.size() && i < 3; ++i)
        which += (i ? "; " : "") + g.combinations[i];
      if (g.combinations.size() > 3)
        which = std::to_string(g.combinations.size()) + " combinations (" + which + "; ...)";
      out.push_back("# skipped " + g.schedule + " " + which + ": " + g.reason);
    }
    return out;
  }
  std::string first() const {
    const Group& g = groups_.front();
    return g.schedule + " " + g.combinations.front() + ": " + g.reason;
  }

 private:
  struct Group {
    std::string schedule, reason;
    std::vector<std::string> combinations;
  };
  std::vector<Group> groups_;
};

std::string times_line(const SimulateSettings& f, const Times& t) {
  std::ostringstream os;
  os << "# times for one rank's whole share of layers: tf=" << to_text(f.times.tf) << " tb=" << to_text(f.times.tb)
     << " tw=" << to_text(f.times.tw) << " t_overlap=" << (t.t_overlap < 0 ? "tf+tb" : to_text(f.times.t_overlap))
     << " p2p=" << (t.p2p > 0 ? to_text(f.times.p2p) : "0") << " stages=" << (t.stage_cost.empty() ? "uniform" : list_text(t.stage_cost))
     << " (" << (t.seconds ? "seconds" : "time units") << ")";
  return os.str();
}

Table simulate_table(const TimeDisplay& d) {
  return Table({{"schedule", ""}, {"p", ""}, {"m", ""}, {"v", ""}, {"makespan", d.unit}, {"bubble", "%"},
                {"formula", "%"}, {"diff", "pp"}, {"max_idle", d.unit}, {"peak", "chunks"}, {"peak_formula", "chunks"}});
}

// One configuration's table row, with `foot` marking the formulas that do not hold.
std::vector<std::string> simulate_cells(const SimRun& r, const TimeDisplay& d, Footnotes& foot) {
  const auto& mt = r.sim.metrics;
  const auto& a = *r.analytic;
  std::vector<std::string> row = {r.schedule.name, std::to_string(r.schedule.p), std::to_string(r.schedule.m),
                                  std::to_string(r.schedule.v()), fmt("%.6g", mt.makespan * d.factor),
                                  fmt("%.3f", 100 * mt.bubble_fraction)};
  if (a.bubble_fraction.value) {
    row.push_back(fmt("%.3f", 100 * *a.bubble_fraction.value));
    const double diff = 100 * (mt.bubble_fraction - *a.bubble_fraction.value);
    row.push_back(fmt("%+.3f", std::abs(diff) < 1e-9 ? 0.0 : diff));  // no "-0.000" from rounding noise
  } else {
    row.push_back(foot.mark(r.schedule.name, a.bubble_fraction.reason));
    row.push_back("-");
  }
  row.push_back(fmt("%.6g", mt.max_idle() * d.factor));
  std::vector<int> peaks;
  for (const auto& rm : mt.ranks) peaks.push_back(rm.peak_inflight);
  row.push_back(peak_cell(peaks));
  row.push_back(a.peak_inflight.value ? peak_cell(*a.peak_inflight.value)
                                      : foot.mark(r.schedule.name, a.peak_inflight.reason));
  return row;
}

std::string timelines_text(const Times& t, const std::vector<SimRun>& runs) {
  const TimeDisplay d = time_display(t);
  std::string out;
  for (const auto& r : runs) {
    out += "#\n# timeline: " + config_name(r) + '\n';
    std::vector<std::vector<std::string>> rows;
    for (const auto& op : r.sim.timeline)
      rows.push_back({std::to_string(op.rank), analysis::to_string(op.action), analysis::kind_name(op.action.kind),
                      std::to_string(op.action.stage), std::to_string(op.action.mb), fmt("%.6g", op.start * d.factor),
                      fmt("%.6g", op.end * d.factor)});
    out += Table({{"rank", ""}, {"action", ""}, {"kind", ""}, {"stage", ""}, {"mb", ""}, {"start", d.unit},
                  {"end", d.unit}}).render(rows);
  }
  return out;
}

nlohmann::ordered_json times_json(const Times& t) {
  nlohmann::ordered_json j;
  j["unit"] = t.seconds ? "s" : "units";
  j["tf"] = t.tf;
  j["tb"] = t.tb;
  j["tw"] = t.tw;
  j["t_overlap"] = t.t_overlap < 0 ? t.tf + t.tb : t.t_overlap;
  j["p2p"] = t.p2p;
  j["stage_cost"] = t.stage_cost.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(t.stage_cost);
  return j;
}

// One configuration: its row, and its object of docs/json.md with the timeline (millions of entries
// for a large schedule) streamed rather than built as a tree.
Record simulate_record(const SimRun& r, const Times& t, bool timeline, Footnotes& foot) {
  Record rec;
  rec.cells = simulate_cells(r, time_display(t), foot);
  auto j = summary_json(r.schedule, r.sim.metrics, &*r.analytic);
  j["group"] = r.group ? nlohmann::ordered_json(r.group) : nlohmann::ordered_json(nullptr);
  j["times"] = times_json(t);
  rec.objects.push_back(std::move(j));
  if (timeline) {
    rec.stream_key = "timeline";
    rec.stream = [&r](std::ostream& os, int indent) { write_timeline_json(os, r.sim.timeline, indent); };
  }
  return rec;
}

void write_results(Sink& sink, const SimulateSettings& f, const Times& t, const std::vector<SimRun>& runs,
                   const std::vector<std::string>& notes, const std::vector<std::string>& written) {
  sink.legend("# pipebench simulate\n" + times_line(f, t) + '\n');
  for (const auto& n : notes) sink.note(n + '\n');
  Footnotes foot;
  sink.begin_table(simulate_table(time_display(t)), true);
  for (const auto& r : runs) sink.record(simulate_record(r, t, f.timeline, foot));
  sink.end_table();
  sink.legend("# bubble = 1 - sum(busy)/(p*makespan); formula: the analytic figure (docs/metrics.md); diff = simulated - "
              "formula\n# peak: in-flight activations in chunks, rank 0 / max over ranks\n" + foot.text());
  if (f.timeline) sink.legend(timelines_text(t, runs));
  for (const auto& w : written) sink.note(w + '\n');
  sink.finish();
}

void run(const SimulateSettings& f) {
  const Format format = output_format(f.json, f.csv);
  const auto& names = f.schedules;
  for (const auto& n : names) analysis::schedule_row(n);  // unknown names fail before any work
  const auto &ps = f.p, &ms = f.m, &vs = f.v;
  const int group = f.group;
  const Times t = parse_times(f.times);

  // A combination the schedule rejects is skipped with a note when it is one of several, and is the
  // error itself when the user asked for exactly that one.
  const std::size_t total = names.size() * ps.size() * ms.size() * vs.size();
  // Only --timeline and --svg show each action; the table and the JSON summary need the metrics alone.
  const bool with_timeline = f.timeline || !f.svg.empty();
  if (!f.svg.empty() && total == 1) check_output_path(f.svg, "--svg", f.force);  // before any work
  // Only what lists every action keeps the actions past the simulation, within one budget for the sweep.
  const std::string listing = f.timeline ? "--timeline" : "--svg";
  std::int64_t listed = 0;
  std::vector<SimRun> runs;
  Skipped skipped;
  for (const auto& name : names)
    for (int p : ps)
      for (int m : ms)
        for (int v : vs) {
          try {
            const analysis::ScheduleParams q{name, p, m, v, group};
            if (with_timeline) check_listed_actions(q, listing);
            analysis::Schedule s = analysis::make_schedule(q);
            if (with_timeline) {
              check_listed_actions(s, listing);
              analysis::check_listed_items(listed + static_cast<std::int64_t>(s.num_actions()),
                                           listing + " of the whole sweep", "list fewer configurations");
              listed += static_cast<std::int64_t>(s.num_actions());
            }
            SimRun r = simulate_one(std::move(s), group, t, true, with_timeline);
            if (!with_timeline) r.schedule.actions = {};  // the table and JSON need its sizes only
            runs.push_back(std::move(r));
          } catch (const analysis::ScheduleError&) {
            throw;  // a generated schedule that fails validation is a bug to show, not a combination to skip
          } catch (const UsageError& e) {
            if (total == 1) throw;
            const std::string msg = e.what();
            const std::string combination =
                "p=" + std::to_string(p) + " m=" + std::to_string(m) + (v ? " v=" + std::to_string(v) : "");
            skipped.add(name, combination, msg.substr(0, msg.find('\n')));
          }
        }
  const std::vector<std::string> notes = skipped.lines();
  if (runs.empty())
    throw UsageError("no combination of --schedule, -p, -m, -v can be simulated, e.g. " + skipped.first());

  // --svg FILE: one configuration's picture is FILE; a sweep's are FILE with each name before ".svg".
  // Every path is checked before the first file is written, so a refused one leaves none behind.
  std::vector<std::string> written;
  std::vector<std::string> paths;
  if (!f.svg.empty())
    for (const auto& r : runs) paths.push_back(runs.size() == 1 ? f.svg : svg_file_name(f.svg, r));
  for (const auto& path : paths) check_output_path(path, "--svg", f.force);
  for (std::size_t i = 0; i < paths.size(); ++i) {
    write_output(paths[i], "--svg", [&](std::ostream& os) { write_svg_of(os, runs[i], t); }, f.force);
    written.push_back("# wrote " + paths[i]);
  }

  const auto sink = make_sink(format, std::cout, std::cerr);
  write_results(*sink, f, t, runs, notes, written);
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("simulate", "Simulate schedules over comma lists of p, m, v; compare with the formulas");
  auto f = std::make_shared<SimulateSettings>();
  add(*cmd, flag::schedule, f->schedules)->required();
  add(*cmd, flag::pipeline, f->p)->required();
  add(*cmd, flag::microbatches, f->m)->required();
  add(*cmd, flag::chunks, f->v);
  add(*cmd, flag::group, f->group);
  add_time_flags(*cmd, f->times, true);
  add(*cmd, flag::json, f->json)->description("Print the JSON contract (docs/json.md) instead of the table");
  add(*cmd, flag::csv, f->csv);
  cmd->add_flag("--timeline", f->timeline, "Also print every action's start and end");
  add(*cmd, flag::svg, f->svg);
  add(*cmd, flag::force, f->force);
  cmd->callback([f] { run(*f); });
}

}  // namespace pipebench::bench
