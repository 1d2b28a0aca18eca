#include "bench/render/html.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "analysis/metrics.hpp"
#include "bench/render/html_page.hpp"
#include "bench/render/plot.hpp"
#include "bench/render/report.hpp"
#include "bench/render/svg.hpp"

namespace pipebench::bench {

namespace {

using html_page::kNaN;
using html_page::page_begin;
using html_page::page_end;
using html_page::swatch;

double cfg_num(const RunResult& r, const char* key) {
  const std::string v = config_value(r, key);
  try {
    return v.empty() ? kNaN : std::stod(v);
  } catch (...) {
    return kNaN;
  }
}

using html_page::run_label;

// The schedules in the order they first appear.
std::vector<std::string> schedules_of(const RunListing& l) {
  std::vector<std::string> out;
  for (const auto& r : l.runs) {
    const std::string s = config_value(r.run, "schedule");
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  }
  return out;
}

// Metadata values over the runs: key -> value -> run ids.
using Values = std::map<std::string, std::map<std::string, std::vector<int>>>;
Values metadata_values(const RunListing& l) {
  Values v;
  for (const auto& r : l.runs)
    for (const auto& [k, val] : r.run.metadata) v[k][val].push_back(r.id);
  return v;
}

void meta_row(std::ostream& o, const Values& v, const std::string& key, const std::string& label, std::size_t runs) {
  const auto it = v.find(key);
  if (it == v.end()) return;
  o << "<tr><th class=\"t\">" << xml_escape(label) << "</th><td class=\"wrap\">";
  if (it->second.size() == 1 && it->second.begin()->second.size() == runs) {
    o << xml_escape(it->second.begin()->first);
  } else {
    bool first = true;
    for (const auto& [val, ids] : it->second) {
      o << (first ? "" : "<br>") << xml_escape(val) << " <span class=\"muted\">(run " << xml_escape(id_ranges(ids)) << ")</span>";
      first = false;
    }
  }
  o << "</td></tr>\n";
}

void summary_section(std::ostream& o, const ReportInput& in) {
  const RunListing& l = in.listing;
  Values v = metadata_values(l);
  std::size_t n = l.runs.size();
  if (l.runs.empty()) {  // a file of communication results only
    for (const auto& c : in.comm)
      for (const auto& [k, val] : c.result.metadata) v[k][val].push_back(c.id);
    n = in.comm.size();
  }
  o << "<h2 id=\"summary\">Summary</h2>\n<p class=\"note\">" << xml_escape(in.path) << ": " << n << " complete run(s)";
  if (!l.incomplete.empty()) o << ", incomplete run(s) " << xml_escape(id_ranges(l.incomplete)) << " ignored";
  if (!l.damaged.empty()) {
    std::vector<int> ids;
    for (const auto& d : l.damaged) ids.push_back(d.id);
    o << ", damaged run(s) " << xml_escape(id_ranges(ids)) << " skipped";
  }
  o << "; schema version " << l.schema_version << ".</p>\n";
  o << "<div class=\"grid\"><div><h3>Machine</h3><table>\n";
  meta_row(o, v, "cpu", "CPU", n);
  meta_row(o, v, "gpu", "GPU", n);
  meta_row(o, v, "nodes", "nodes", n);
  meta_row(o, v, "ranks", "ranks", n);
  meta_row(o, v, "placement", "placement (host:ranks)", n);
  meta_row(o, v, "interconnect", "interconnect", n);
  // The system description (run --system): what software cannot detect.
  for (const auto& [k, vals] : v)
    if (k.rfind("system.", 0) == 0) meta_row(o, v, k, k.substr(7), n);
  if (!v.count("interconnect") && !v.count("system.accelerator_interconnect") && !v.count("system.host_networking"))
    o << "<tr><th class=\"t\">interconnect</th><td class=\"wrap muted\">not recorded (see the MPI library and "
         "the environment below)</td></tr>\n";
  o << "</table></div>\n<div><h3>Software</h3><table>\n";
  const std::pair<const char*, const char*> software[] = {
      {"pipebench_version", "pipebench"}, {"pipebench_commit", "commit"},    {"compiler", "compiler"},
      {"build_type", "build type"},       {"build_flags", "build flags"},    {"mpi", "MPI"},
      {"kokkos", "Kokkos"},               {"kokkos_backend", "Kokkos backend"}, {"kokkoskernels", "KokkosKernels"},
      {"blas", "BLAS"},                   {"hdf5", "HDF5"},                  {"nccl", "NCCL"},
      {"cuda", "CUDA"}};
  for (const auto& [k, label] : software) meta_row(o, v, k, label, n);
  o << "</table></div></div>\n<h3>When and how</h3><table>\n";
  if (const auto it = v.find("date_utc"); it != v.end()) {
    o << "<tr><th class=\"t\">date (UTC)</th><td class=\"wrap\">" << xml_escape(it->second.begin()->first);
    if (it->second.size() > 1) o << " to " << xml_escape(it->second.rbegin()->first);
    o << "</td></tr>\n";
  }
  meta_row(o, v, "command_line", "command line", n);
  meta_row(o, v, "statistic", "statistic", n);
  if (const auto it = v.find("job_id"); it != v.end() && !(it->second.size() == 1 && it->second.count("none")))
    meta_row(o, v, "job_id", "batch job", n);
  for (const auto& [k, vals] : v)
    if (k.rfind("slurm_", 0) == 0) meta_row(o, v, k, k, n);
  o << "</table>\n<details><summary>Environment recorded (allow-listed variables)</summary><table>\n";
  for (const auto& [k, vals] : v)
    if (k.rfind("env.", 0) == 0) meta_row(o, v, k, k.substr(4), n);
  o << "</table></details>\n";
}

void runs_section(std::ostream& o, const RunListing& l) {
  o << "<h2 id=\"runs\">Runs</h2>\n<p class=\"note\">As <code>pipebench report FILE</code> prints it, plus the "
       "variability over the timed steps: step time min and max, coefficient of variation (cv) and spread = "
       "(max - min) / median, flagged above "
    << fmt("%.0f", kSpreadFlag * 100) << " %. Click a header to sort.</p>\n<div class=\"wide\"><table class=\"sortable\" id=\"runs-table\"><thead><tr>";
  const Table t = runs_table();
  for (const auto& c : t.columns())
    o << "<th" << (c.numeric ? "" : " class=\"t\"") << ">" << xml_escape(c.name)
      << (c.unit.empty() ? "" : "<br><span class=\"muted\">(" + xml_escape(c.unit) + ")</span>") << "</th>";
  o << "<th>step min<br><span class=\"muted\">(ms)</span></th><th>step max<br><span class=\"muted\">(ms)</span></th>"
       "<th>cv<br><span class=\"muted\">(%)</span></th><th>spread<br><span class=\"muted\">(%)</span></th></tr></thead>\n<tbody>\n";
  for (const auto& r : l.runs) {
    const auto cells = run_row(r.id, r.run);
    o << "<tr>";
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const bool text = i < t.columns().size() && !t.columns()[i].numeric;
      o << "<td" << (text ? " class=\"t\"" : "") << ">" << (i == 1 ? swatch(cells[i]) : "") << xml_escape(cells[i]) << "</td>";
    }
    const auto& s = r.run.summary;
    const auto spread = step_time_spread(s);
    o << "<td>" << (s.step_time_min ? fmt("%.3f", *s.step_time_min * 1e3) : "unknown") << "</td><td>"
      << (s.step_time_max ? fmt("%.3f", *s.step_time_max * 1e3) : "unknown") << "</td><td>"
      << (s.step_time_cv ? fmt("%.2f", *s.step_time_cv * 100) : "unknown") << "</td>";
    if (!spread)
      o << "<td class=\"muted\">unknown</td>";
    else if (*spread > kSpreadFlag)
      o << "<td class=\"flag\" title=\"spread above " << fmt("%.0f", kSpreadFlag * 100) << " %\">" << fmt("%.2f", *spread * 100)
        << " &#9888;</td>";
    else
      o << "<td>" << fmt("%.2f", *spread * 100) << "</td>";
    o << "</tr>\n";
  }
  o << "</tbody></table></div>\n";
}

// Runs of one schedule that differ in something other than m get their own series.
std::string series_key(const RunResult& r) {
  std::string k;
  for (const char* c : {"t", "p", "d", "v", "workload"})
    if (!config_value(r, c).empty()) k += (k.empty() ? "" : " ") + std::string(c) + "=" + config_value(r, c);
  return k;
}

// Small multiples: one SVG of `panels` (each a whole <svg> kPanelWidth wide, as render_plot makes it),
// three to a row, each panel's content a translated group, so the figure is one picture with one title.
constexpr double kPanelWidth = 380, kPanelHeight = 250;
double svg_height(const std::string& svg) {
  const std::size_t at = svg.find("height=\"");
  return at == std::string::npos ? kPanelHeight : std::atof(svg.c_str() + at + 8);
}
std::string small_multiples(const std::string& title, const std::vector<std::string>& panels) {
  const std::size_t cols = 3;
  std::string body;
  double y = 0;
  for (std::size_t row = 0; row * cols < panels.size(); ++row) {
    double row_height = 0;
    for (std::size_t i = row * cols; i < panels.size() && i < (row + 1) * cols; ++i) {
      const std::string& p = panels[i];
      const std::size_t open_end = p.find('>'), close = p.rfind("</svg>");
      if (p.rfind("<svg", 0) != 0 || open_end == std::string::npos || close == std::string::npos) continue;
      const double h = svg_height(p);
      row_height = std::max(row_height, h);
      std::string inner = p.substr(open_end + 1, close - open_end - 1);
      const std::string full = "width=\"100%\" height=\"100%\"";
      if (const std::size_t at = inner.find(full); at != std::string::npos)
        inner.replace(at, full.size(), "width=\"" + fmt("%.0f", kPanelWidth) + "\" height=\"" + fmt("%.0f", h) + "\"");
      body += "<g transform=\"translate(" + fmt("%.0f", static_cast<double>(i % cols) * kPanelWidth) + "," + fmt("%.0f", y) +
              ")\">" + inner + "</g>\n";
    }
    y += row_height;
  }
  const double width = static_cast<double>(std::min(cols, panels.size())) * kPanelWidth;
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" width=\"" + fmt("%.0f", width) + "\" height=\"" +
         fmt("%.0f", y) + "\" viewBox=\"0 0 " + fmt("%.0f", width) + " " + fmt("%.0f", y) +
         "\" font-family=\"sans-serif\" role=\"img\"><title>" + xml_escape(title) + "</title>\n" + body + "</svg>";
}

void bubble_section(std::ostream& o, const RunListing& l) {
  o << "<h2 id=\"bubble\">Bubble against micro-batches</h2>\n<p class=\"note\">Per schedule: the measured bubble "
       "(median over timed steps, bars from min to max), the simulator fed the measured op times (solid line) and "
       "the analytic formula (dashed; absent where no formula holds).</p>\n";
  std::vector<std::string> panels;
  for (const auto& sched : schedules_of(l)) {
    std::map<std::string, std::vector<const StoredRun*>> by;
    for (const auto& r : l.runs)
      if (config_value(r.run, "schedule") == sched) by[series_key(r.run)].push_back(&r);
    std::vector<PlotSeries> series;
    const std::string colour = schedule_colour(sched);
    for (auto& [key, runs] : by) {
      std::sort(runs.begin(), runs.end(), [](const StoredRun* a, const StoredRun* b) { return cfg_num(a->run, "m") < cfg_num(b->run, "m"); });
      const std::string suffix = by.size() > 1 ? " (" + key + ")" : "";
      PlotSeries meas{"measured" + suffix, colour, SeriesStyle::points};
      PlotSeries sim{"simulated" + suffix, colour, SeriesStyle::line};
      PlotSeries form{"formula" + suffix, colour, SeriesStyle::dashed};
      for (const StoredRun* r : runs) {
        const auto& s = r->run.summary;
        const double m = cfg_num(r->run, "m");
        meas.x.push_back(m);
        meas.y.push_back(s.bubble_measured * 100);
        meas.lo.push_back(s.bubble_min ? *s.bubble_min * 100 : kNaN);
        meas.hi.push_back(s.bubble_max ? *s.bubble_max * 100 : kNaN);
        meas.tips.push_back(run_label(r->id, r->run) + ": bubble " + fmt("%.2f", s.bubble_measured * 100) + " %" +
                            (s.bubble_min && s.bubble_max ? " (min " + fmt("%.2f", *s.bubble_min * 100) + ", max " +
                                                                fmt("%.2f", *s.bubble_max * 100) + ")"
                                                          : ""));
        sim.x.push_back(m);
        sim.y.push_back(s.bubble_simulated * 100);
        form.x.push_back(m);
        form.y.push_back(s.bubble_formula ? *s.bubble_formula * 100 : kNaN);
      }
      series.push_back(std::move(meas));
      series.push_back(std::move(sim));
      if (std::any_of(form.y.begin(), form.y.end(), [](double y) { return std::isfinite(y); })) series.push_back(std::move(form));
    }
    PlotOptions opt;
    opt.title = "Bubble against m: " + sched;
    opt.x_label = "micro-batches m";
    opt.y_label = "bubble (%)";
    opt.integer_x = true;
    opt.width = kPanelWidth;
    opt.height = kPanelHeight;
    panels.push_back(render_plot(opt, series));
  }
  o << "<div class=\"wide\">" << small_multiples("Bubble against m, one panel per schedule", panels) << "</div>\n";
}

void breakdown_section(std::ostream& o, const ReportInput& in) {
  o << "<h2 id=\"breakdown\">Step time breakdown</h2>\n<p class=\"note\">Per run, averaged over ranks: compute "
       "(the ranks' busy time), the bubble the schedule itself implies for that compute (the simulator fed the "
       "run's stage times without communication or overhead), waiting for inputs (the rest of the makespan), "
       "data-parallel sync and optimizer (step time - makespan), and the executor's own overhead between actions. "
       "The parts add up to the step time.</p>\n";
  std::vector<std::string> rows;
  std::vector<std::vector<double>> values;
  for (const auto& r : in.listing.runs) {
    const auto it = in.breakdown.find(r.id);
    if (it == in.breakdown.end()) continue;
    const analysis::Breakdown& b = it->second;
    rows.push_back(run_label(r.id, r.run));
    // A run measures pp as its waiting for inputs and dp as step time - makespan (analysis/breakdown.hpp).
    values.push_back({b.compute * 1e3, b.bubble * 1e3, b.pp * 1e3, b.dp * 1e3, b.overhead * 1e3});
  }
  PlotOptions opt;
  opt.title = "Step time breakdown per run";
  opt.x_label = "time per step (ms)";
  opt.width = 1200;
  const std::vector<StackPart> parts = {{"compute", "#4c78a8"},
                                        {"bubble (schedule)", "#d5d9de"},
                                        {"waiting for inputs", "#f58518"},
                                        {"DP sync + optimizer", "#54a24b"},
                                        {"executor overhead", "#b279a2"}};
  o << "<div class=\"wide\">" << render_stacked(opt, rows, parts, values) << "</div>\n";
}

// An SVG file's text inlined into HTML: without its XML declaration, with a <title> for the page.
std::string inline_svg(const std::string& svg, const std::string& title) {
  std::string s = svg;
  if (s.rfind("<?xml", 0) == 0) s.erase(0, s.find('\n') + 1);
  const auto open = s.find("<svg");
  const auto end = open == std::string::npos ? std::string::npos : s.find('>', open);
  if (end != std::string::npos) s.insert(end + 1, "<title>" + xml_escape(title) + "</title>");
  return s;
}

void timeline_section(std::ostream& o, const ReportInput& in) {
  if (in.timelines.empty()) return;
  o << "<h2 id=\"timelines\">Timelines</h2>\n<p class=\"note\">The first timed step of pipeline 0 as measured, "
       "above the simulator's prediction from the run's measured op times, point-to-point time and executor "
       "overhead (<code>--timeline RUN...</code> chooses the runs; by default the first run of each schedule). "
       "Hover over a box for its action and times.</p>\n";
  for (const auto& t : in.timelines) {
    const StoredRun* run = nullptr;
    for (const auto& r : in.listing.runs)
      if (r.id == t.id) run = &r;
    const std::string label = run ? run_label(t.id, run->run) : "run " + std::to_string(t.id);
    o << "<h3>" << (run ? swatch(config_value(run->run, "schedule")) : "") << xml_escape(label) << "</h3>\n<div class=\"wide\">\n";
    // One time scale for both pictures: the longer one takes the full width.
    SvgOptions opt;
    opt.time_unit = "s";
    const double full = std::min(1100.0, svg_plot_width(t.schedule, opt));
    const double tm = analysis::compute_metrics(t.schedule, t.measured).makespan;
    const double ts = analysis::compute_metrics(t.schedule, t.simulated).makespan;
    const double longest = std::max(tm, ts);
    opt.plot_width = longest > 0 && tm > 0 ? std::max(120.0, full * tm / longest) : full;
    opt.title = label + ": measured (first timed step, pipeline 0)";
    o << inline_svg(render_svg(t.schedule, t.measured, opt), "Timeline measured: " + label) << '\n';
    opt.plot_width = longest > 0 && ts > 0 ? std::max(120.0, full * ts / longest) : full;
    opt.title = label + ": simulated from the measured op times";
    o << inline_svg(render_svg(t.schedule, t.simulated, opt), "Timeline simulated: " + label) << "</div>\n";
  }
}

// The runs whose per-rank figures the memory and transformer sections show: the timeline runs, or the
// first run of each schedule.
std::vector<const StoredRun*> shown_runs(const ReportInput& in) {
  std::vector<const StoredRun*> out;
  for (const auto& t : in.timelines)
    for (const auto& r : in.listing.runs)
      if (r.id == t.id) out.push_back(&r);
  if (!out.empty()) return out;
  std::set<std::string> seen;
  for (const auto& r : in.listing.runs)
    if (seen.insert(config_value(r.run, "schedule")).second) out.push_back(&r);
  return out;
}

void memory_section(std::ostream& o, const ReportInput& in) {
  o << "<h2 id=\"memory\">Activation memory per rank</h2>\n<p class=\"note\">Peak activation memory of each "
       "pipeline rank (tensor and data-parallel rank 0), measured (solid) against the formula replayed on the "
       "simulated timeline with the workload's stash sizes (dashed), one colour per schedule.</p>\n";
  std::vector<PlotSeries> series;
  for (const StoredRun* r : shown_runs(in)) {
    const std::string sched = config_value(r->run, "schedule");
    PlotSeries meas{"measured, " + run_label(r->id, r->run), schedule_colour(sched), SeriesStyle::line_points};
    PlotSeries pred{"formula, " + run_label(r->id, r->run), schedule_colour(sched), SeriesStyle::dashed};
    for (const auto& rk : r->run.ranks) {
      if (rk.tp != 0 || rk.dp != 0) continue;
      meas.x.push_back(rk.pp);
      meas.y.push_back(static_cast<double>(rk.peak_activation_bytes) / 1048576.0);
      pred.x.push_back(rk.pp);
      pred.y.push_back(static_cast<double>(rk.predicted_activation_bytes) / 1048576.0);
    }
    series.push_back(std::move(meas));
    series.push_back(std::move(pred));
  }
  PlotOptions opt;
  opt.title = "Peak activation memory per pipeline rank";
  opt.x_label = "pipeline rank";
  opt.y_label = "activation memory (MiB)";
  opt.width = 1200;
  opt.height = 360;
  opt.integer_x = true;
  o << "<div class=\"wide\">" << render_plot(opt, series) << "</div>\n";
}

double extra(const RunResult& r, const char* key) {
  const auto it = r.summary.extra.find(key);
  return it == r.summary.extra.end() ? kNaN : it->second;
}

std::string cell(double v, const char* f, double scale = 1) { return std::isfinite(v) ? fmt(f, v * scale) : "-"; }

void transformer_section(std::ostream& o, const ReportInput& in) {
  std::vector<const StoredRun*> runs;
  for (const auto& r : in.listing.runs)
    if (r.run.summary.extra.count("loss") || r.run.summary.extra.count("mfu") || config_value(r.run, "workload") == "transformer")
      runs.push_back(&r);
  if (runs.empty()) return;
  o << "<h2 id=\"transformer\">Transformer runs</h2>\n<p class=\"note\">Loss (mean over the step's "
       "micro-batches), model FLOP utilisation against the BLAS rate measured on the same ranks, the FLOP rate "
       "the ranks achieved (recomputation included) and the stages' median forward and backward times.</p>\n"
       "<div class=\"wide\"><table class=\"sortable\"><thead><tr><th>run</th><th class=\"t\">schedule</th><th>m</th>"
       "<th>loss</th><th>MFU (%)</th><th>achieved (GFLOP/s)</th><th>BLAS (GFLOP/s)</th><th>model (GFLOP/step)</th>"
       "<th class=\"t\">per stage F / backward (ms)</th></tr></thead><tbody>\n";
  for (const StoredRun* r : runs) {
    o << "<tr><td>" << r->id << "</td><td class=\"t\">" << swatch(config_value(r->run, "schedule")) << xml_escape(config_value(r->run, "schedule"))
      << "</td><td>" << xml_escape(config_value(r->run, "m")) << "</td><td>" << cell(extra(r->run, "loss"), "%.4f") << "</td><td>"
      << cell(extra(r->run, "mfu"), "%.2f", 100) << "</td><td>" << cell(extra(r->run, "flop_rate"), "%.2f", 1e-9)
      << "</td><td>" << cell(extra(r->run, "blas_flop_rate"), "%.2f", 1e-9) << "</td><td>"
      << cell(extra(r->run, "model_flops"), "%.3f", 1e-9) << "</td><td class=\"t\">";
    for (const auto& st : r->run.stages)
      o << (st.stage ? ", " : "") << "s" << st.stage << " " << fmt("%.3f", st.forward * 1e3) << "/" << fmt("%.3f", st.backward * 1e3);
    o << "</td></tr>\n";
  }
  o << "</tbody></table></div>\n<div class=\"grid\">\n";
  for (const StoredRun* r : runs) {
    if (r->run.stages.empty()) continue;
    bool shown = false;
    for (const auto& t : in.timelines) shown = shown || t.id == r->id;
    if (!shown && !in.timelines.empty()) continue;
    std::vector<std::string> cats;
    BarSeries f{"forward F", "#4c78a8", {}}, b{"backward (B or I + W)", "#e45756", {}}, w{"weight W", "#eca82c", {}};
    for (const auto& st : r->run.stages) {
      cats.push_back("s" + std::to_string(st.stage));
      f.values.push_back(st.forward * 1e3);
      b.values.push_back(st.backward * 1e3);
      w.values.push_back(st.weight > 0 ? st.weight * 1e3 : kNaN);
    }
    PlotOptions opt;
    opt.title = "Stage times: " + run_label(r->id, r->run);
    opt.x_label = "stage";
    opt.y_label = "median time per chunk action (ms)";
    o << render_bars(opt, cats, {f, b, w});
  }
  o << "</div>\n";
}

}  // namespace

void write_html_report(std::ostream& o, const ReportInput& in) {
  page_begin(o, "pipebench report: " + in.path);
  o << "<p class=\"note\"><a href=\"#headline\">headline</a> &middot; <a href=\"#summary\">summary</a> &middot; <a href=\"#runs\">runs</a> &middot; "
       "<a href=\"#bubble\">bubble</a> &middot; <a href=\"#breakdown\">breakdown</a> &middot; "
       "<a href=\"#timelines\">timelines</a> &middot; <a href=\"#memory\">memory</a>"
    << (in.comm.empty() ? "" : " &middot; <a href=\"#comm\">communication</a>") << "</p>\n";
  write_headline(o, in.listing);
  summary_section(o, in);
  if (!in.listing.runs.empty()) {
    runs_section(o, in.listing);
    bubble_section(o, in.listing);
    breakdown_section(o, in);
    timeline_section(o, in);
    memory_section(o, in);
    transformer_section(o, in);
  }
  write_comm_section(o, in.comm);
  page_end(o);
}

}  // namespace pipebench::bench
