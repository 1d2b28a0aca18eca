#include "bench/render/plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "analysis/catalog.hpp"
#include "bench/render/legend.hpp"

namespace pipebench::bench {

namespace {

constexpr double kLeft = 70, kRight = 18, kTop = 34, kAxisBelow = 44, kLegendLine = 18;

std::string px(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", x);
  std::string s = buf;
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s;
}

bool finite(double x) { return std::isfinite(x); }

double nice_step(double span, double target) {
  const double raw = span / std::max(1.0, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double n = raw / mag;
  return (n <= 1 ? 1 : n <= 2 ? 2 : n <= 5 ? 5 : 10) * mag;
}

// "4 KiB", "1 MiB": sizes on a base-2 axis.
std::string bytes_label(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return short_num(b, 4) + " " + units[u];
}

// One axis: data range to pixels, and its ticks.
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  double p0 = 0, p1 = 1;  // pixels of lo and hi
  double map(double v) const {
    const double a = log ? std::log(v) : v, l = log ? std::log(lo) : lo, h = log ? std::log(hi) : hi;
    return p0 + (a - l) / (h - l) * (p1 - p0);
  }
};

struct Tick {
  double v;
  std::string text;
};

std::vector<Tick> linear_ticks(Axis& a, double target, bool integer) {
  double step = nice_step(a.hi - a.lo, target);
  if (integer) step = std::max(1.0, std::round(step));
  a.lo = std::floor(a.lo / step + 1e-9) * step;
  a.hi = std::ceil(a.hi / step - 1e-9) * step;
  if (a.hi <= a.lo) a.hi = a.lo + step;
  std::vector<Tick> t;
  for (double v = a.lo; v <= a.hi + step * 1e-6; v += step) t.push_back({std::abs(v) < step * 1e-9 ? 0.0 : v, ""});
  for (auto& k : t) k.text = short_num(k.v, 6);
  return t;
}

std::vector<Tick> log_ticks(Axis& a, bool base2, double target) {
  const double b = base2 ? 2.0 : 10.0;
  const double e0 = std::floor(std::log(a.lo) / std::log(b) + 1e-9), e1 = std::ceil(std::log(a.hi) / std::log(b) - 1e-9);
  a.lo = std::pow(b, e0);
  a.hi = std::pow(b, std::max(e1, e0 + 1));
  const double n = std::log(a.hi / a.lo) / std::log(b);
  const int every = std::max(1, static_cast<int>(std::ceil(n / target)));
  std::vector<Tick> t;
  for (double e = e0; e <= e0 + n + 1e-9; e += every) {
    const double v = std::pow(b, e);
    t.push_back({v, base2 ? bytes_label(v) : short_num(v, 3)});
  }
  return t;
}

void open_svg(std::ostringstream& o, const PlotOptions& opt, double height) {
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" width=\"" << px(opt.width) << "\" height=\""
    << px(height) << "\" viewBox=\"0 0 " << px(opt.width) << ' ' << px(height)
    << "\" font-family=\"sans-serif\" role=\"img\"><title>" << xml_escape(opt.title) << "</title>\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
    << "<text x=\"" << px(kLeft) << "\" y=\"20\" font-size=\"14\" font-weight=\"bold\">" << xml_escape(opt.title)
    << "</text>\n";
}

// A legend entry: a 20 px line or box and 6 px to its text; 14 px to the next entry.
constexpr double kSwatch = 26, kGap = 14;

void draw_legend(std::ostringstream& o, const std::vector<LegendItem>& items, double y0) {
  o << "<g class=\"legend\" font-size=\"12\">\n";
  for (const auto& it : items) {
    const double y = y0 + it.line * kLegendLine;
    if (it.bar) {
      o << "<rect x=\"" << px(it.x) << "\" y=\"" << px(y - 9) << "\" width=\"18\" height=\"11\" fill=\"" << it.colour
        << "\"/>";
    } else {
      if (it.style != SeriesStyle::points)
        o << "<line x1=\"" << px(it.x) << "\" y1=\"" << px(y - 4) << "\" x2=\"" << px(it.x + 20) << "\" y2=\""
          << px(y - 4) << "\" stroke=\"" << it.colour << "\" stroke-width=\"2\""
          << (it.style == SeriesStyle::dashed ? " stroke-dasharray=\"5 3\"" : "") << "/>";
      if (it.style == SeriesStyle::points || it.style == SeriesStyle::line_points)
        o << "<circle cx=\"" << px(it.x + 10) << "\" cy=\"" << px(y - 4) << "\" r=\"3.5\" fill=\"" << it.colour << "\"/>";
    }
    o << "<text x=\"" << px(it.x + kSwatch) << "\" y=\"" << px(y) << "\">" << xml_escape(it.text) << "</text>\n";
  }
  o << "</g>\n";
}

void draw_frame(std::ostringstream& o, const PlotOptions& opt, const Axis& x, const Axis& y,
                const std::vector<Tick>& xt, const std::vector<Tick>& yt) {
  o << "<g font-size=\"11\" fill=\"#333333\">\n";
  for (const auto& t : yt) {
    const double py = y.map(t.v);
    o << "<line x1=\"" << px(x.p0) << "\" y1=\"" << px(py) << "\" x2=\"" << px(x.p1) << "\" y2=\"" << px(py)
      << "\" stroke=\"#e3e6ea\"/><text x=\"" << px(x.p0 - 6) << "\" y=\"" << px(py + 4) << "\" text-anchor=\"end\">"
      << xml_escape(t.text) << "</text>\n";
  }
  for (const auto& t : xt) {
    const double pxv = x.map(t.v);
    o << "<line x1=\"" << px(pxv) << "\" y1=\"" << px(y.p0) << "\" x2=\"" << px(pxv) << "\" y2=\"" << px(y.p0 + 5)
      << "\" stroke=\"#333333\"/><text x=\"" << px(pxv) << "\" y=\"" << px(y.p0 + 17) << "\" text-anchor=\"middle\">"
      << xml_escape(t.text) << "</text>\n";
  }
  o << "<line x1=\"" << px(x.p0) << "\" y1=\"" << px(y.p0) << "\" x2=\"" << px(x.p1) << "\" y2=\"" << px(y.p0)
    << "\" stroke=\"#333333\"/><line x1=\"" << px(x.p0) << "\" y1=\"" << px(y.p0) << "\" x2=\"" << px(x.p0)
    << "\" y2=\"" << px(y.p1) << "\" stroke=\"#333333\"/>\n"
    << "<text x=\"" << px((x.p0 + x.p1) / 2) << "\" y=\"" << px(y.p0 + 34) << "\" text-anchor=\"middle\" font-size=\"12\">"
    << xml_escape(opt.x_label) << "</text>\n"
    << "<text transform=\"translate(16 " << px((y.p0 + y.p1) / 2) << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">"
    << xml_escape(opt.y_label) << "</text>\n</g>\n";
}

std::string no_data(const PlotOptions& opt) {
  std::ostringstream o;
  open_svg(o, opt, 80);
  o << "<text x=\"" << px(kLeft) << "\" y=\"52\" font-size=\"12\" fill=\"#666666\">no data</text>\n</svg>\n";
  return o.str();
}

}  // namespace

std::string schedule_colour(const std::string& schedule) {
  // Tableau-like palette: distinct on screen and in print, ordered as the catalog lists schedules.
  static const char* const kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1",
                                         "#76b7b2", "#edc948", "#9c755f", "#ff9da7", "#17becf"};
  const auto& cat = analysis::schedule_catalog();
  for (std::size_t i = 0; i < cat.size(); ++i)
    if (cat[i].name == schedule) return kPalette[i % (sizeof kPalette / sizeof *kPalette)];
  return "#7f7f7f";
}

std::string series_colour(int k) {
  static const char* const kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                         "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return kPalette[((k % 10) + 10) % 10];
}

std::string short_num(double x, int digits) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, x);
  return buf;
}

std::string render_plot(const PlotOptions& opt, const std::vector<PlotSeries>& series) {
  // The data's extent, over the points that can be drawn.
  const double inf = std::numeric_limits<double>::infinity();
  double xmin = inf, xmax = -inf, ymin = inf, ymax = -inf;
  auto usable_x = [&](double v) { return finite(v) && (!opt.log_x || v > 0); };
  auto usable_y = [&](double v) { return finite(v) && (!opt.log_y || v > 0); };
  for (const auto& s : series)
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!usable_x(s.x[i]) || !usable_y(s.y[i])) continue;
      xmin = std::min(xmin, s.x[i]);
      xmax = std::max(xmax, s.x[i]);
      double lo = s.y[i], hi = s.y[i];
      if (i < s.lo.size() && usable_y(s.lo[i])) lo = std::min(lo, s.lo[i]);
      if (i < s.hi.size() && usable_y(s.hi[i])) hi = std::max(hi, s.hi[i]);
      ymin = std::min(ymin, lo);
      ymax = std::max(ymax, hi);
    }
  if (!(xmin <= xmax)) return no_data(opt);
  if (opt.y_from_zero && !opt.log_y) ymin = std::min(ymin, 0.0);
  if (xmax == xmin) {
    xmin = opt.log_x ? xmin / 2 : xmin - 1;
    xmax = opt.log_x ? xmax * 2 : xmax + 1;
  }
  if (ymax == ymin) {
    ymin = opt.log_y ? ymin / 10 : ymin - 1;
    ymax = opt.log_y ? ymax * 10 : ymax + 1;
    if (opt.y_from_zero && !opt.log_y) ymin = std::min(0.0, ymin + 1);
  }
  std::vector<LegendItem> legend;
  for (const auto& s : series) legend.push_back({s.colour, s.name, s.style});
  const int lines = layout_legend(legend, kSwatch, kGap, kLeft, opt.width - kRight);
  const double height = opt.height + lines * kLegendLine;
  Axis x{xmin, xmax, opt.log_x, kLeft, opt.width - kRight};
  Axis y{ymin, ymax, opt.log_y, opt.height - kAxisBelow, kTop};
  const double plot_w = x.p1 - x.p0;
  std::vector<Tick> xt = opt.log_x ? log_ticks(x, true, plot_w / 70) : linear_ticks(x, plot_w / 80, opt.integer_x);
  std::vector<Tick> yt = opt.log_y ? log_ticks(y, false, 6) : linear_ticks(y, 5, false);

  std::ostringstream o;
  open_svg(o, opt, height);
  draw_frame(o, opt, x, y, xt, yt);
  for (const auto& s : series) {
    o << "<g class=\"series\">\n";
    std::vector<std::pair<double, double>> pts;
    std::vector<std::size_t> idx;
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i)
      if (usable_x(s.x[i]) && usable_y(s.y[i])) {
        pts.push_back({x.map(s.x[i]), y.map(s.y[i])});
        idx.push_back(i);
      }
    if (s.style != SeriesStyle::points && pts.size() > 1) {
      o << "<polyline fill=\"none\" stroke=\"" << s.colour << "\" stroke-width=\"2\""
        << (s.style == SeriesStyle::dashed ? " stroke-dasharray=\"6 4\"" : "") << " points=\"";
      for (const auto& [a, b] : pts) o << px(a) << ',' << px(b) << ' ';
      o << "\"/>\n";
    }
    for (std::size_t k = 0; k < pts.size(); ++k) {
      const std::size_t i = idx[k];
      if (i < s.lo.size() && i < s.hi.size() && usable_y(s.lo[i]) && usable_y(s.hi[i])) {
        const double a = y.map(s.lo[i]), b = y.map(s.hi[i]), cx = pts[k].first;
        o << "<path d=\"M" << px(cx) << ' ' << px(a) << "V" << px(b) << "M" << px(cx - 4) << ' ' << px(a) << "h8M"
          << px(cx - 4) << ' ' << px(b) << "h8\" stroke=\"" << s.colour << "\" stroke-width=\"1.5\" fill=\"none\"/>\n";
      }
      if (s.style == SeriesStyle::points || s.style == SeriesStyle::line_points || pts.size() == 1) {
        o << "<circle cx=\"" << px(pts[k].first) << "\" cy=\"" << px(pts[k].second) << "\" r=\"3.5\" fill=\"" << s.colour
          << "\">";
        const std::string tip = i < s.tips.size() ? s.tips[i] : s.name + ": " + short_num(s.x[i]) + ", " + short_num(s.y[i]);
        o << "<title>" << xml_escape(tip) << "</title></circle>\n";
      }
    }
    o << "</g>\n";
  }
  draw_legend(o, legend, opt.height + 8);
  o << "</svg>\n";
  return o.str();
}

std::string render_bars(const PlotOptions& opt, const std::vector<std::string>& categories,
                        const std::vector<BarSeries>& series) {
  double ymax = 0;
  bool any = false;
  for (const auto& s : series)
    for (double v : s.values)
      if (finite(v)) {
        ymax = std::max(ymax, v);
        any = true;
      }
  if (!any || categories.empty()) return no_data(opt);
  if (ymax <= 0) ymax = 1;
  std::vector<LegendItem> legend;
  for (const auto& s : series) legend.push_back({s.colour, s.name, SeriesStyle::points, true});
  const int lines = layout_legend(legend, kSwatch, kGap, kLeft, opt.width - kRight);
  const double height = opt.height + lines * kLegendLine;
  Axis y{0, ymax, false, opt.height - kAxisBelow, kTop};
  const std::vector<Tick> yt = linear_ticks(y, 5, false);
  Axis x{0, static_cast<double>(categories.size()), false, kLeft, opt.width - kRight};
  std::ostringstream o;
  open_svg(o, opt, height);
  draw_frame(o, opt, x, y, {}, yt);
  const double group_w = (x.p1 - x.p0) / static_cast<double>(categories.size());
  const double bar_w = group_w * 0.8 / static_cast<double>(std::max<std::size_t>(1, series.size()));
  o << "<g font-size=\"11\" fill=\"#333333\">\n";
  for (std::size_t c = 0; c < categories.size(); ++c)
    o << "<text x=\"" << px(x.p0 + (static_cast<double>(c) + 0.5) * group_w) << "\" y=\"" << px(y.p0 + 17) << "\" text-anchor=\"middle\">"
      << xml_escape(categories[c]) << "</text>\n";
  o << "</g>\n";
  for (std::size_t k = 0; k < series.size(); ++k) {
    o << "<g class=\"series\" fill=\"" << series[k].colour << "\">\n";
    for (std::size_t c = 0; c < categories.size() && c < series[k].values.size(); ++c) {
      const double v = series[k].values[c];
      if (!finite(v)) continue;
      const double x0 = x.p0 + static_cast<double>(c) * group_w + group_w * 0.1 + static_cast<double>(k) * bar_w, top = y.map(std::max(0.0, v));
      o << "<rect x=\"" << px(x0) << "\" y=\"" << px(top) << "\" width=\"" << px(bar_w * 0.95) << "\" height=\""
        << px(y.p0 - top) << '"';
      if (c < series[k].colours.size()) o << " fill=\"" << series[k].colours[c] << '"';
      o << "><title>" << xml_escape(series[k].name + ", " + categories[c] + ": " + short_num(v))
        << "</title></rect>\n";
    }
    o << "</g>\n";
  }
  draw_legend(o, legend, opt.height + 8);
  o << "</svg>\n";
  return o.str();
}

std::string render_stacked(const PlotOptions& opt, const std::vector<std::string>& rows,
                           const std::vector<StackPart>& parts, const std::vector<std::vector<double>>& values) {
  if (rows.empty()) return no_data(opt);
  double xmax = 0;
  for (const auto& r : values) {
    double sum = 0;
    for (double v : r)
      if (finite(v) && v > 0) sum += v;
    xmax = std::max(xmax, sum);
  }
  if (xmax <= 0) xmax = 1;
  std::size_t label_chars = 4;
  for (const auto& r : rows) label_chars = std::max(label_chars, r.size());
  const double left = std::min(opt.width / 2, 12 + kCharWidth * 11 * static_cast<double>(label_chars));
  const double pitch = 20;
  const double plot_h = pitch * static_cast<double>(rows.size());
  std::vector<LegendItem> legend;
  for (const auto& p : parts) legend.push_back({p.colour, p.name, SeriesStyle::points, true});
  const int lines = layout_legend(legend, kSwatch, kGap, left, opt.width - kRight);
  const double height = kTop + plot_h + kAxisBelow + lines * kLegendLine + 8;
  Axis x{0, xmax, false, left, opt.width - kRight};
  Axis y{0, 1, false, kTop + plot_h, kTop};
  const std::vector<Tick> xt = linear_ticks(x, (x.p1 - x.p0) / 80, false);
  std::ostringstream o;
  PlotOptions o2 = opt;
  open_svg(o, o2, height);
  // Vertical grid and x axis.
  o << "<g font-size=\"11\" fill=\"#333333\">\n";
  for (const auto& t : xt) {
    const double pxv = x.map(t.v);
    o << "<line x1=\"" << px(pxv) << "\" y1=\"" << px(kTop) << "\" x2=\"" << px(pxv) << "\" y2=\"" << px(y.p0 + 5)
      << "\" stroke=\"#e3e6ea\"/><text x=\"" << px(pxv) << "\" y=\"" << px(y.p0 + 17) << "\" text-anchor=\"middle\">"
      << xml_escape(t.text) << "</text>\n";
  }
  o << "<line x1=\"" << px(x.p0) << "\" y1=\"" << px(y.p0) << "\" x2=\"" << px(x.p1) << "\" y2=\"" << px(y.p0)
    << "\" stroke=\"#333333\"/>\n<text x=\"" << px((x.p0 + x.p1) / 2) << "\" y=\"" << px(y.p0 + 34)
    << "\" text-anchor=\"middle\" font-size=\"12\">" << xml_escape(opt.x_label) << "</text>\n";
  for (std::size_t r = 0; r < rows.size(); ++r)
    o << "<text x=\"" << px(left - 6) << "\" y=\"" << px(kTop + static_cast<double>(r) * pitch + 14) << "\" text-anchor=\"end\">"
      << xml_escape(rows[r]) << "</text>\n";
  o << "</g>\n";
  for (std::size_t r = 0; r < rows.size() && r < values.size(); ++r) {
    double at = 0;
    o << "<g class=\"series\">\n";
    for (std::size_t k = 0; k < parts.size() && k < values[r].size(); ++k) {
      const double v = values[r][k];
      if (!finite(v) || v <= 0) continue;
      const double x0 = x.map(at), x1 = x.map(at + v);
      o << "<rect x=\"" << px(x0) << "\" y=\"" << px(kTop + static_cast<double>(r) * pitch + 2) << "\" width=\"" << px(std::max(0.5, x1 - x0))
        << "\" height=\"" << px(pitch - 4) << "\" fill=\"" << parts[k].colour << "\"><title>"
        << xml_escape(rows[r] + ": " + parts[k].name + " " + short_num(v) + " (" + opt.x_label + ")") << "</title></rect>\n";
      at += v;
    }
    o << "</g>\n";
  }
  draw_legend(o, legend, y.p0 + kAxisBelow + 8);
  o << "</svg>\n";
  return o.str();
}

}  // namespace pipebench::bench
