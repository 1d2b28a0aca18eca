// The communication section of `report --html`: `pipebench comm`'s results (bench/results/comm_results.hpp)
// as bus bandwidth against size per operation and the alpha-beta fit of each.
#include <algorithm>
#include <cstdint>

#include "bench/render/html.hpp"
#include "bench/render/html_page.hpp"
#include "bench/render/plot.hpp"

namespace pipebench::bench {


void write_comm_section(std::ostream& o, const std::vector<StoredComm>& comm) {
  if (comm.empty()) return;
  o << "<h2 id=\"comm\">Communication</h2>\n<p class=\"note\">Results of <code>pipebench comm</code>: bus "
       "bandwidth against message size per operation, one series per group (nccl-tests' busbw), and the "
       "&alpha;-&beta; fit t(bytes) = &alpha; + bytes / &beta; of each.</p>\n<div class=\"grid\">\n";
  std::vector<std::string> ops;
  for (const auto& sc : comm)
    if (std::find(ops.begin(), ops.end(), sc.result.op) == ops.end()) ops.push_back(sc.result.op);
  for (const auto& op : ops) {
    std::vector<PlotSeries> series;
    int k = 0;
    for (const auto& sc : comm) {
      const CommResult& c = sc.result;
      if (c.op != op) continue;
      PlotSeries s{"comm " + std::to_string(sc.id) + ": " + c.group + " (" + std::to_string(c.groups) + " x " +
                       std::to_string(c.group_size) + ", " + c.backend + ")",
                   series_colour(k++), SeriesStyle::line_points};
      for (const auto& row : c.rows) {
        if (row.in_place) continue;  // out of place, as nccl-tests' first columns
        s.x.push_back(static_cast<double>(row.bytes));
        s.y.push_back(row.busbw_GBps);
      }
      series.push_back(std::move(s));
    }
    PlotOptions opt;
    opt.title = "Bus bandwidth: " + op;
    opt.x_label = "message size";
    opt.y_label = "busbw (GB/s)";
    opt.log_x = true;
    o << render_plot(opt, series);
  }
  o << "</div>\n<table class=\"sortable\"><thead><tr><th>comm</th><th class=\"t\">op</th><th class=\"t\">group</th>"
       "<th>groups</th><th>group size</th><th class=\"t\">backend</th><th>&alpha; (us)</th><th>&beta; (GB/s)</th>"
       "<th>max rel. error (%)</th><th>sizes</th><th>wrong</th></tr></thead><tbody>\n";
  for (const auto& sc : comm) {
    const CommResult& c = sc.result;
    std::int64_t wrong = 0;
    for (const auto& r : c.rows) wrong += std::max<std::int64_t>(r.wrong, 0);  // -1: not checked
    const bool fit = c.fit.points > 0;
    o << "<tr><td>" << sc.id << "</td><td class=\"t\">" << xml_escape(c.op) << "</td><td class=\"t\">" << xml_escape(c.group)
      << "</td><td>" << c.groups << "</td><td>" << c.group_size << "</td><td class=\"t\">" << xml_escape(c.backend)
      << "</td><td>" << (fit ? fmt("%.3f", c.fit.alpha_s * 1e6) : "-") << "</td><td>"
      << (fit ? fmt("%.3f", c.fit.beta_Bps * 1e-9) : "-") << "</td><td>"
      << (fit ? fmt("%.1f", c.fit.max_rel_error * 100) : "-") << "</td><td>" << c.rows.size() << "</td><td"
      << (wrong ? " class=\"flag\"" : "") << ">" << wrong << "</td></tr>\n";
  }
  o << "</tbody></table>\n";
}

}  // namespace pipebench::bench
