#pragma once
// Small self-contained SVG plots for the HTML report and comparison (bench/render/html.hpp): line and
// point plots with optional min-max bars, grouped bars and stacked horizontal bars, each with axes,
// tick labels, units, a legend and a <title> (what a browser shows on hover and what the browser test
// counts). Text is sized for a page 1280 px wide. Colours: schedule_colour() gives each schedule one
// colour, used by every plot and table of a report, so a schedule reads the same everywhere.
#include <string>
#include <utility>
#include <vector>

#include "analysis/text.hpp"  // xml_escape

namespace pipebench::bench {

// One fixed colour per schedule of analysis::schedule_catalog() (by its position), grey for others.
std::string schedule_colour(const std::string& schedule);
// A colour for the k-th series that is not a schedule (ops, groups, kinds of time).
std::string series_colour(int k);

enum class SeriesStyle { line_points, line, dashed, points };

struct PlotSeries {
  PlotSeries() = default;
  PlotSeries(std::string n, std::string c, SeriesStyle s) : name(std::move(n)), colour(std::move(c)), style(s) {}
  std::string name;    // the legend's text
  std::string colour;  // "#rrggbb"
  SeriesStyle style = SeriesStyle::line_points;
  std::vector<double> x, y;
  std::vector<double> lo, hi;  // empty, or one per point: a min-max bar drawn around it
  std::vector<std::string> tips;  // empty, or one hover text per point
};

struct PlotOptions {
  std::string title;    // heading and <title>
  std::string x_label;  // with its unit: "micro-batches m", "size (bytes)"
  std::string y_label;  // "bubble (%)"
  double width = 600, height = 330;
  bool log_x = false;   // base-2 ticks for sizes
  bool log_y = false;   // decade ticks
  bool y_from_zero = true;
  bool integer_x = false;  // ticks only at integers (counts such as m or ranks)
};

// Series whose x, y, lo and hi are finite are drawn; points that are not (or not positive on a log
// axis) are skipped. A plot without any point says "no data" instead of an empty frame.
std::string render_plot(const PlotOptions& opt, const std::vector<PlotSeries>& series);

// Grouped vertical bars: one group per category (x axis), one bar per series in each group.
struct BarSeries {
  std::string name, colour;
  std::vector<double> values;  // one per category; NaN: no bar
  std::vector<std::string> colours = {};  // empty, or one per category: that bar's colour
};
std::string render_bars(const PlotOptions& opt, const std::vector<std::string>& categories,
                        const std::vector<BarSeries>& series);

// Stacked horizontal bars: one row per label, one segment per part (values[row][part] >= 0, in the
// unit of opt.x_label), the parts in the legend in order.
struct StackPart {
  std::string name, colour;
};
std::string render_stacked(const PlotOptions& opt, const std::vector<std::string>& rows,
                           const std::vector<StackPart>& parts, const std::vector<std::vector<double>>& values);

// A number with `digits` significant digits, as %g prints it.
std::string short_num(double x, int digits = 4);

}  // namespace pipebench::bench
