#include "bench/sim_support.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <CLI/CLI.hpp>

#include "analysis/error.hpp"
#include "analysis/svg.hpp"
#include "analysis/validate.hpp"

namespace pipebench::bench {

void add_time_flags(CLI::App& cmd, TimeFlags& f) {
  cmd.add_option("--tf", f.tf, "Forward time of one rank's whole share of layers (time units, or with ns/us/ms/s)")
      ->capture_default_str();
  cmd.add_option("--tb", f.tb, "Full backward time of one rank's share (I + W)")->capture_default_str();
  cmd.add_option("--tw", f.tw, "Weight-gradient part of the backward, 0 <= tw < tb")->capture_default_str();
  cmd.add_option("--t-overlap", f.t_overlap, "Time of an overlapped F&B pair for a rank's share (default tf+tb)");
  cmd.add_option("--p2p-time", f.p2p, "Time for an activation or gradient to cross between ranks (default 0)");
  cmd.add_option("--stage-cost", f.stage_cost,
                 "Comma list of cost multipliers, one per stage of a model copy (p*v), e.g. 1,1,1,2");
}

SimRun run_config(analysis::Schedule s, int group, const Times& t, bool with_formula) {
  analysis::validate(s);
  SimRun r;
  r.group = group;
  r.sim = analysis::simulate(s, analysis::uniform_costs(s, t.tf, t.tb, t.tw, t.t_overlap, t.stage_cost, t.p2p));
  if (with_formula) {
    analysis::FormulaParams q;
    q.schedule = s.name;
    q.p = s.p;
    q.m = s.m;
    q.v = s.v();
    q.group = group;
    q.tf = t.tf;
    q.tb = t.tb;
    q.tw = t.tw;
    q.t_overlap = t.t_overlap;
    q.uniform_stages = std::all_of(t.stage_cost.begin(), t.stage_cost.end(), [](double k) { return k == 1.0; });
    q.p2p = t.p2p;
    r.analytic = analysis::analytic_figures(q);
  }
  r.schedule = std::move(s);
  return r;
}

TimeDisplay time_display(const Times& t) { return t.seconds ? TimeDisplay{1e3, "ms"} : TimeDisplay{}; }

std::string svg_of(const SimRun& r, const Times& t) {
  analysis::SvgOptions opt;
  opt.time_unit = t.seconds ? "s" : "units";
  return analysis::render_svg(r.schedule, r.sim.timeline, opt);
}

void write_text_file(const std::string& path, const std::string& text, const std::string& flag) {
  std::error_code ec;
  const bool existed = std::filesystem::is_regular_file(path, ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out << text;
  if (out) out.close();
  if (!out)
    throw UsageError("cannot write " + flag + " '" + path + "': " + std::strerror(errno) +
                     "; give a file in an existing, writable directory");
  if (existed) std::cerr << "pipebench: note: replaced the existing file '" << path << "'\n";
}

std::string fmt(const char* format, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}

void print_table(std::ostream& os, const std::vector<SimColumn>& columns,
                 const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(columns.size());
  for (std::size_t c = 0; c < columns.size(); ++c) {
    width[c] = std::max(columns[c].name.size(), columns[c].unit.empty() ? 0 : columns[c].unit.size() + 2);
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](char lead, auto cell) {
    std::string s(1, lead);
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const std::string text = cell(c);
      s += std::string(width[c] + 2 - text.size(), ' ') + text;
    }
    os << s << '\n';
  };
  line('#', [&](std::size_t c) { return columns[c].name; });
  line('#', [&](std::size_t c) { return columns[c].unit.empty() ? std::string() : "(" + columns[c].unit + ")"; });
  for (const auto& row : rows) line(' ', [&](std::size_t c) { return row[c]; });
}

void print_rank_table(std::ostream& os, const SimRun& r, const Times& t) {
  const TimeDisplay d = time_display(t);
  const auto& peak = r.analytic ? r.analytic->peak_inflight.value : std::nullopt;
  std::vector<std::vector<std::string>> rows;
  for (const auto& rm : r.sim.metrics.ranks)
    rows.push_back({std::to_string(rm.rank), fmt("%.6g", rm.busy * d.factor), fmt("%.6g", rm.idle * d.factor),
                    fmt("%.6g", rm.span_bubble * d.factor), std::to_string(rm.peak_inflight),
                    peak ? std::to_string((*peak)[rm.rank]) : "n/a"});
  print_table(os,
              {{"rank", ""},
               {"busy", d.unit},
               {"idle", d.unit},
               {"span_bubble", d.unit},
               {"peak", "chunks"},
               {"peak_formula", "chunks"}},
              rows);
}

}  // namespace pipebench::bench
