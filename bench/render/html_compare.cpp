// The comparison page of `pipebench compare --html` (bench/render/html.hpp).
#include <algorithm>
#include <map>
#include <sstream>

#include "bench/render/html.hpp"
#include "bench/render/html_page.hpp"
#include "bench/render/plot.hpp"

namespace pipebench::bench {

using html_page::kNaN;
using html_page::page_begin;
using html_page::page_end;
using html_page::swatch;

namespace {

std::string ratio_cell(const std::optional<double>& r) {
  if (!r) return "<td>-</td>";
  const char* cls = *r < 0.98 ? " class=\"ok\"" : *r > 1.02 ? " class=\"flag\"" : "";
  return std::string("<td") + cls + ">" + fmt("%.3f", *r) + "</td>";
}

std::string value_cell(const std::optional<double>& v, const std::optional<double>& lo, const std::optional<double>& hi,
                       double scale) {
  if (!v) return "<td>-</td>";
  std::string s = "<td";
  if (lo && hi) s += " title=\"min " + fmt("%.4g", *lo * scale) + ", max " + fmt("%.4g", *hi * scale) + "\"";
  return s + ">" + fmt("%.4g", *v * scale) + "</td>";
}

// The summary: counts, the significance rule, the geometric means per group and their bars.
void write_summary(std::ostream& o, const Comparison& c) {
  o << "<h2 id=\"summary\">Summary</h2>\n<p class=\"note\">" << c.matches.size()
    << " configuration(s) in both files, " << c.only_a.size() << " only in A, " << c.only_b.size()
    << " only in B. Step time B/A: " << c.significant << " difference(s) significant, " << c.insignificant
    << " within the noise, " << c.unknown
    << " with not enough samples. A difference is significant when the 95 % percentile-bootstrap interval of the "
       "ratio of medians (over the repeats' medians when both runs were repeated, else over the timed steps; fixed "
       "seed) excludes 1"
    << (c.threshold > 0 ? " and B/A differs from 1 by " + num(c.threshold * 100) + " % or more (--threshold)" : std::string())
    << ". Ratios below 1 mean B is faster (step time) or better.</p>\n";
  if (c.geomean_step_ratio)
    o << "<p class=\"note\"><b>Geometric-mean step time B/A over all matches: " << fmt("%.3f", *c.geomean_step_ratio)
      << "</b></p>\n";
  o << "<table><thead><tr><th class=\"t\">group</th><th>runs</th><th>geomean step time B/A</th></tr></thead><tbody>\n";
  for (const auto& g : c.groups)
    o << "<tr><td class=\"t\">" << swatch(g.name) << xml_escape(g.name) << "</td><td>" << g.runs << "</td>"
      << ratio_cell(g.geomean_step_ratio) << "</tr>\n";
  o << "</tbody></table>\n";
  std::vector<std::string> cats;
  std::vector<BarSeries> series;
  // One bar per schedule, in its colour.
  BarSeries s{"geometric mean of step time B/A", "#888888", {}};
  for (const auto& g : c.groups) {
    cats.push_back(g.name);
    s.values.push_back(g.geomean_step_ratio.value_or(kNaN));
    s.colours.push_back(schedule_colour(g.name));
  }
  series.push_back(std::move(s));
  PlotOptions opt;
  opt.title = "Geometric-mean step time B/A per schedule";
  opt.x_label = "schedule";
  opt.y_label = "step time B/A (1 = same)";
  opt.width = 900;
  o << "<div class=\"wide\">" << render_bars(opt, cats, series) << "</div>\n";
}

// Step time B against A, one point per configuration, with the diagonal B = A.
void write_scatter(std::ostream& o, const Comparison& c) {
  std::vector<PlotSeries> series;
  std::map<std::string, std::size_t> at;
  for (const auto& m : c.matches) {
    if (!at.count(m.schedule)) {
      at[m.schedule] = series.size();
      series.push_back({m.schedule, schedule_colour(m.schedule), SeriesStyle::points});
    }
    if (m.figures.empty() || !m.figures[0].a || !m.figures[0].b) continue;
    const CompareFigure& f = m.figures[0];
    PlotSeries& s = series[at[m.schedule]];
    s.x.push_back(*f.a * f.scale);
    s.y.push_back(*f.b * f.scale);
    s.lo.push_back(f.b_lo ? *f.b_lo * f.scale : kNaN);
    s.hi.push_back(f.b_hi ? *f.b_hi * f.scale : kNaN);
    s.tips.push_back(m.label + ": A " + fmt("%.3f", *f.a * f.scale) + " ms, B " + fmt("%.3f", *f.b * f.scale) + " ms");
  }
  // The diagonal B = A: points below it are faster in B.
  double lo = 1e300, hi = 0;
  for (const auto& s : series)
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      lo = std::min({lo, s.x[i], s.y[i]});
      hi = std::max({hi, s.x[i], s.y[i]});
    }
  if (hi > 0) {
    PlotSeries same("B = A", "#999999", SeriesStyle::dashed);
    same.x = {lo, hi};
    same.y = {lo, hi};
    series.push_back(std::move(same));
  }
  PlotOptions opt;
  opt.title = "Step time, B against A (one point per configuration)";
  opt.x_label = "step time A (ms)";
  opt.y_label = "step time B (ms)";
  opt.width = 900;
  opt.height = 420;
  o << "<div class=\"wide\">" << render_plot(opt, series) << "</div>\n";
}

// The verdict per metric, then like for like: what a committee reads first.
void write_verdict(std::ostream& o, const Comparison& c) {
  o << "<h2 id=\"verdict\">Verdict</h2>\n<table><thead><tr><th class=\"t\">configuration</th><th>step time B/A</th>"
       "<th>95 % interval</th><th>verdict</th><th>bubble B/A</th><th>95 % interval</th><th>verdict</th></tr></thead><tbody>\n";
  const auto verdict = [](const CompareFigure& f) {
    if (!f.significant) return std::string("<td class=\"muted\">not enough samples</td>");
    if (!*f.significant) return std::string("<td>no difference</td>");
    return std::string("<td class=\"flag\">") + (f.ratio && *f.ratio > 1 ? "B higher" : "B lower") + "</td>";
  };
  const auto interval = [](const CompareFigure& f) {
    return f.ci_lo && f.ci_hi ? "<td>" + fmt("%.3f", *f.ci_lo) + " - " + fmt("%.3f", *f.ci_hi) + "</td>" : std::string("<td>-</td>");
  };
  for (const auto& m : c.matches) {
    o << "<tr><td class=\"t\">" << swatch(m.schedule) << xml_escape(m.label) << "</td>";
    for (std::size_t i = 0; i < 2 && i < m.figures.size(); ++i)
      o << ratio_cell(m.figures[i].ratio) << interval(m.figures[i]) << verdict(m.figures[i]);
    o << "</tr>\n";
  }
  o << "</tbody></table>\n<h2 id=\"like\">Like for like</h2>\n";
  if (c.unlike.empty()) {
    o << "<p class=\"note\">Yes: CPU, accelerator, nodes, ranks per node, pipebench commit, build type, MPI, NCCL, BLAS, "
         "Kokkos and the system description are the same in A and B.</p>\n";
    return;
  }
  o << "<p class=\"note\"><b>No</b> (compared with --allow-different): these differ.</p>\n<table><thead><tr><th class=\"t\">"
       "fact</th><th class=\"t\">A</th><th class=\"t\">B</th></tr></thead><tbody>\n";
  for (const auto& d : c.unlike)
    o << "<tr><td class=\"t\">" << xml_escape(d.key) << "</td><td class=\"t\">" << xml_escape(d.a) << "</td><td class=\"t\">"
      << xml_escape(d.b) << "</td></tr>\n";
  o << "</tbody></table>\n";
}

// The matched configurations' figures, A, B, B/A and significance.
void write_matches(std::ostream& o, const Comparison& c) {
  o << "<h2 id=\"matches\">Matched configurations</h2>\n<div class=\"wide\"><table class=\"sortable\" id=\"matches-table\"><thead><tr>"
       "<th class=\"t\">configuration</th><th>run A</th><th>run B</th>";
  const std::vector<CompareFigure> none;
  const auto& head = c.matches.empty() ? none : c.matches.front().figures;
  for (const auto& f : head)
    o << "<th>" << xml_escape(f.name) << " A (" << xml_escape(f.unit) << ")</th><th>B</th><th>B/A</th><th>significant</th>";
  o << "</tr></thead><tbody>\n";
  for (const auto& m : c.matches) {
    o << "<tr><td class=\"t\">" << swatch(m.schedule) << xml_escape(m.label) << "</td><td>" << m.id_a << "</td><td>" << m.id_b
      << "</td>";
    for (const auto& f : m.figures) {
      o << value_cell(f.a, f.a_lo, f.a_hi, f.scale) << value_cell(f.b, f.b_lo, f.b_hi, f.scale) << ratio_cell(f.ratio);
      if (!f.significant)
        o << "<td class=\"muted\">" << (f.a && f.b ? "few samples" : "-") << "</td>";
      else
        o << "<td" << (*f.significant ? " class=\"flag\">yes" : ">no") << "</td>";
    }
    o << "</tr>\n";
  }
  o << "</tbody></table></div>\n";
}

// The bus bandwidth of the `comm` results both files hold: B/A against size, then a table.
void write_comm(std::ostream& o, const Comparison& c) {
  if (c.comm.empty()) return;
  o << "<h2 id=\"comm\">Communication</h2>\n<p class=\"note\">Bus bandwidth of the <code>pipebench comm</code> "
       "results both files hold, per message size; B/A above 1 means B moves data faster. Significant when the "
       "min-max time ranges do not overlap.</p>\n";
  std::vector<PlotSeries> series;
  int k = 0;
  for (const auto& m : c.comm) {
    PlotSeries s(m.label, series_colour(k++), SeriesStyle::line_points);
    for (const auto& z : m.sizes)
      if (z.ratio) {
        s.x.push_back(static_cast<double>(z.bytes));
        s.y.push_back(*z.ratio);
      }
    series.push_back(std::move(s));
  }
  PlotOptions opt;
  opt.title = "Bus bandwidth B/A against message size";
  opt.x_label = "message size";
  opt.y_label = "busbw B/A";
  opt.log_x = true;
  opt.width = 900;
  o << "<div class=\"wide\">" << render_plot(opt, series) << "</div>\n";
  o << "<table class=\"sortable\"><thead><tr><th class=\"t\">group</th><th>size (B)</th><th>busbw A (GB/s)</th>"
       "<th>busbw B (GB/s)</th><th>B/A</th><th>significant</th></tr></thead><tbody>\n";
  for (const auto& m : c.comm)
    for (const auto& z : m.sizes) {
      o << "<tr><td class=\"t\">" << xml_escape(m.label) << "</td><td>" << z.bytes << "</td><td>" << fmt("%.3f", z.busbw_a)
        << "</td><td>" << fmt("%.3f", z.busbw_b) << "</td><td>" << (z.ratio ? fmt("%.3f", *z.ratio) : "-") << "</td>"
        << "<td" << (z.significant ? " class=\"flag\">yes" : ">no") << "</td></tr>\n";
    }
  o << "</tbody></table>\n";
  for (const auto& k2 : c.comm_only_a) o << "<p class=\"note\">only in A: " << xml_escape(k2) << "</p>\n";
  for (const auto& k2 : c.comm_only_b) o << "<p class=\"note\">only in B: " << xml_escape(k2) << "</p>\n";
}

// The configurations in one file only, and the metadata that differs.
void write_unmatched_and_metadata(std::ostream& o, const Comparison& c) {
  o << "<h2 id=\"unmatched\">Configurations in one file only</h2>\n";
  for (const auto& [name, list] : {std::make_pair("A", &c.only_a), std::make_pair("B", &c.only_b)}) {
    o << "<h3>only in " << name << " (" << list->size() << ")</h3>\n<ul>\n";
    for (const auto& u : *list) o << "<li>" << xml_escape(u.label) << " <code class=\"muted\">" << xml_escape(u.key) << "</code></li>\n";
    o << "</ul>\n";
  }
  o << "<h2 id=\"metadata\">Metadata that differs</h2>\n<p class=\"note\">Hardware, libraries, build flags and "
       "settings; dates, process ids and the writing host are left out (they always differ).</p>\n"
       "<table><thead><tr><th class=\"t\">entry</th><th class=\"t\">A</th><th class=\"t\">B</th></tr></thead><tbody>\n";
  for (const auto& d : c.metadata)
    o << "<tr><th class=\"t\">" << xml_escape(d.key) << "</th><td class=\"wrap\">" << xml_escape(d.a) << "</td><td class=\"wrap\">"
      << xml_escape(d.b) << "</td></tr>\n";
  o << "</tbody></table>\n";
}

}  // namespace

void write_html_compare(std::ostream& o, const Comparison& c) {
  page_begin(o, "pipebench compare: " + c.path_a + " (A) vs " + c.path_b + " (B)");
  write_verdict(o, c);
  write_summary(o, c);
  write_scatter(o, c);
  write_matches(o, c);
  write_comm(o, c);
  write_unmatched_and_metadata(o, c);
  page_end(o);
}
}  // namespace pipebench::bench
