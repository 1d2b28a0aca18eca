#include "bench/render/svg.hpp"

#include "analysis/error.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "analysis/metrics.hpp"
#include "analysis/text.hpp"
#include "bench/render/legend.hpp"

namespace pipebench::bench {

using namespace analysis;  // the schedule and timeline types it draws

namespace {

constexpr double kRight = 24;
constexpr double kAxisHeight = 40;
constexpr double kLegendLine = 20;
constexpr double kMaxLabel = 11, kMinLabel = 5;

struct Rgb {
  int r, g, b;
};

// Distinct on screen and in grey-scale print; W is light, so it gets dark text.
Rgb kind_colour(Kind k) {
  switch (k) {
    case Kind::F: return {0x4C, 0x78, 0xA8};
    case Kind::B: return {0xE4, 0x57, 0x56};
    case Kind::I: return {0x54, 0xA2, 0x4B};
    case Kind::W: return {0xEC, 0xA8, 0x2C};
    case Kind::FB: return {0x8E, 0x6C, 0xBF};
  }
  return {0x80, 0x80, 0x80};
}

// Later chunks of a rank are tinted towards white so a V or an interleaved schedule reads at a glance.
Rgb tint(Rgb c, double t) {
  auto mix = [t](int x) { return static_cast<int>(std::lround(x + (255 - x) * t)); };
  return {mix(c.r), mix(c.g), mix(c.b)};
}

std::string hex(Rgb c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c.r, c.g, c.b);
  return buf;
}

bool light(Rgb c) { return 0.299 * c.r + 0.587 * c.g + 0.114 * c.b > 160; }

// Pixel coordinates: two decimals keep files small and boxes exact enough.
std::string px(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", x);
  std::string s = buf;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

// How times are shown: seconds are scaled to the unit that keeps the makespan's digits short.
struct Display {
  double factor = 1;
  std::string unit;
};
Display display_unit(const std::string& unit, double makespan) {
  if (unit != "s") return {1, unit};
  if (makespan < 1e-3) return {1e6, "\xC2\xB5s"};  // µs
  if (makespan < 1) return {1e3, "ms"};
  return {1, "s"};
}

// Tick step of 1, 2 or 5 times a power of ten giving about `target` ticks over `span`.
double nice_step(double span, double target) {
  const double raw = span / std::max(1.0, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double n = raw / mag;
  return (n <= 1 ? 1 : n <= 2 ? 2 : n <= 5 ? 5 : 10) * mag;
}

// Largest font size (<= kMaxLabel) at which `text` fits in `width` pixels, or 0 if below kMinLabel.
double fit(const std::string& text, double width, double max_size = kMaxLabel) {
  const double size = std::min(max_size, (width - 2) / (kCharWidth * static_cast<double>(text.size())));
  return size >= kMinLabel ? size : 0;
}

std::string label_of(const Action& a) {
  if (a.kind == Kind::FB) return std::to_string(a.mb) + "|" + std::to_string(a.b_mb);
  return std::to_string(a.mb);
}

std::string stage_label_of(const Action& a) {
  if (a.kind == Kind::FB) return "s" + std::to_string(a.stage) + "|s" + std::to_string(a.b_stage);
  return "s" + std::to_string(a.stage);
}

int max_actions_per_rank(const Schedule& s) {
  std::size_t n = 1;
  for (const auto& list : s.actions) n = std::max(n, list.size());
  return static_cast<int>(n);
}

// A legend entry: a 14 px box and 5 px to its text; 16 px to the next entry.
constexpr double kSwatch = 19, kGap = 16;

}  // namespace

double svg_plot_width(const Schedule& s, const SvgOptions& opt) {
  if (opt.plot_width > 0) return opt.plot_width;
  // About 22 px per action leaves room for two-digit labels; very long schedules get smaller boxes
  // (and smaller or hidden labels) rather than an unbounded picture.
  return std::clamp(22.0 * max_actions_per_rank(s), 720.0, 4000.0);
}

namespace {

// Everything the parts of the picture share: sizes, scale, each stage's chunk on its rank, the legend.
struct Picture {
  Picture(const Schedule& sched, const Timeline& ops) : s(sched), timeline(ops), metrics(compute_metrics(sched, ops)) {}
  const Schedule& s;
  const Timeline& timeline;
  Metrics metrics;
  double makespan = 1, plot_w = 0, scale = 0, rows_bottom = 0, width = 0, height = 0, step = 0;
  std::vector<int> chunk, held;  // per stage: its chunk index on its rank; per rank: chunks it holds
  std::vector<LegendItem> legend;
  Display disp;
};

Picture layout(const Schedule& s, const Timeline& timeline, const SvgOptions& opt) {
  Picture pic(s, timeline);
  pic.makespan = pic.metrics.makespan > 0 ? pic.metrics.makespan : 1;
  pic.plot_w = svg_plot_width(s, opt);
  pic.scale = pic.plot_w / pic.makespan;
  pic.rows_bottom = kSvgTop + s.p * kSvgRowPitch - (kSvgRowPitch - kSvgRowHeight);
  pic.width = kSvgLeft + pic.plot_w + kRight;
  pic.chunk.assign(s.num_stages(), 0);
  pic.held.assign(s.p, 0);
  for (int st = 0; st < s.num_stages(); ++st) {
    const int r = s.stage_rank[st];
    if (r >= 0 && r < s.p) pic.chunk[st] = pic.held[r]++;
  }
  // Legend: the kinds that occur, idle, and the chunk tint where it applies.
  std::array<bool, kNumKinds> used{};
  for (const TimedOp& op : timeline) used[static_cast<int>(op.action.kind)] = true;
  const char* names[kNumKinds] = {"F forward", "B backward", "I backward (input)", "W backward (weight)",
                                  "F&B overlapped pair"};
  for (Kind k : {Kind::F, Kind::B, Kind::I, Kind::W, Kind::FB})
    if (used[static_cast<int>(k)]) pic.legend.push_back({hex(kind_colour(k)), names[static_cast<int>(k)]});
  pic.legend.push_back({"url(#idle)", "idle"});
  if (!pic.held.empty() && *std::max_element(pic.held.begin(), pic.held.end()) > 1)
    pic.legend.push_back({"", "lighter tint: later chunk of the rank; sN: stage N"});
  const int legend_lines = layout_legend(pic.legend, kSwatch, kGap, kSvgLeft, pic.width - kRight);
  pic.height = pic.rows_bottom + kAxisHeight + legend_lines * kLegendLine + 12;
  pic.disp = display_unit(opt.time_unit, pic.makespan);
  pic.step = nice_step(pic.makespan * pic.disp.factor, pic.plot_w / 90);
  return pic;
}

// The document's start, the idle pattern, the background and the title with the headline figures.
void draw_head(std::ostream& o, const Picture& pic, const SvgOptions& opt) {
  const Schedule& s = pic.s;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" << px(pic.width) << "\" height=\""
    << px(pic.height) << "\" viewBox=\"0 0 " << px(pic.width) << ' ' << px(pic.height) << "\" font-family=\"sans-serif\">\n"
    << "<defs><pattern id=\"idle\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
       "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#f4f5f7\"/>"
       "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#d5d9de\" stroke-width=\"2\"/></pattern></defs>\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  const std::string head = opt.title.empty() ? s.name + ": p=" + std::to_string(s.p) + ", m=" + std::to_string(s.m) +
                                                   ", v=" + std::to_string(s.v())
                                             : opt.title;
  o << "<text x=\"" << px(kSvgLeft) << "\" y=\"22\" font-size=\"15\" font-weight=\"bold\">" << xml_escape(head)
    << "</text>\n"
    << "<text x=\"" << px(kSvgLeft) << "\" y=\"40\" font-size=\"12\" fill=\"#444444\">"
    << fmt("bubble %.1f %%", 100 * pic.metrics.bubble_fraction) << ", makespan "
    << num(pic.metrics.makespan * pic.disp.factor, 5) << ' ' << xml_escape(pic.disp.unit) << "</text>\n";
}

// The time grid behind the rows, then each rank's label and the idle background its boxes cover.
void draw_rows(std::ostream& o, const Picture& pic) {
  const double end = pic.makespan * pic.disp.factor * (1 + 1e-9);
  o << "<g stroke=\"#e3e6ea\" stroke-width=\"1\">\n";
  for (double t = pic.step; t < end; t += pic.step) {
    const double x = kSvgLeft + t / pic.disp.factor * pic.scale;
    o << "<line x1=\"" << px(x) << "\" y1=\"" << px(kSvgTop - 4) << "\" x2=\"" << px(x) << "\" y2=\""
      << px(pic.rows_bottom) << "\"/>\n";
  }
  o << "</g>\n";
  for (int r = 0; r < pic.s.p; ++r) {
    const double y = kSvgTop + r * kSvgRowPitch;
    o << "<text x=\"" << px(kSvgLeft - 8) << "\" y=\"" << px(y + kSvgRowHeight / 2 + 4)
      << "\" font-size=\"12\" text-anchor=\"end\">rank " << r << "</text>\n"
      << "<rect class=\"idle\" x=\"" << px(kSvgLeft) << "\" y=\"" << px(y) << "\" width=\"" << px(pic.plot_w)
      << "\" height=\"" << px(kSvgRowHeight) << "\" fill=\"url(#idle)\"/>\n";
  }
}

// One action's box with its tooltip and its labels: the micro-batch, and below it the stage where the
// rank holds several; smaller text where the box is narrow, none where even the smallest does not fit
// (the tooltip still tells).
void draw_op(std::ostream& o, const Picture& pic, const TimedOp& op) {
  const Action& a = op.action;
  const int nchunks = pic.held[op.rank];
  const bool valid_stage = a.stage >= 0 && a.stage < pic.s.num_stages();
  const double t = nchunks > 1 && valid_stage ? 0.45 * pic.chunk[a.stage] / (nchunks - 1) : 0.0;
  const Rgb fill = tint(kind_colour(a.kind), t);
  const double x = kSvgLeft + op.start * pic.scale, w = (op.end - op.start) * pic.scale;
  const double y = kSvgTop + op.rank * kSvgRowPitch;
  o << "<rect class=\"op\" x=\"" << px(x) << "\" y=\"" << px(y) << "\" width=\"" << px(w) << "\" height=\""
    << px(kSvgRowHeight) << "\" fill=\"" << hex(fill) << "\"><title>rank " << op.rank << ": "
    << xml_escape(to_string(a)) << "  [" << num(op.start * pic.disp.factor) << ", " << num(op.end * pic.disp.factor)
    << "] " << xml_escape(pic.disp.unit) << "</title></rect>\n";
  const std::string text_fill = light(fill) ? "#222222" : "#ffffff";
  const std::string mb = label_of(a);
  const double size = fit(mb, w);
  if (size == 0) return;
  const std::string stage = stage_label_of(a);
  const double stage_size = nchunks > 1 ? fit(stage, w, 8.5) : 0;
  const double cx = x + w / 2;
  if (stage_size > 0) {
    o << "<text x=\"" << px(cx) << "\" y=\"" << px(y + 11) << "\" font-size=\"" << px(size)
      << "\" text-anchor=\"middle\" fill=\"" << text_fill << "\" stroke=\"none\">" << mb << "</text>"
      << "<text x=\"" << px(cx) << "\" y=\"" << px(y + 22) << "\" font-size=\"" << px(stage_size)
      << "\" text-anchor=\"middle\" fill=\"" << text_fill << "\" stroke=\"none\">" << stage << "</text>\n";
  } else {
    o << "<text x=\"" << px(cx) << "\" y=\"" << px(y + kSvgRowHeight / 2 + size * 0.36) << "\" font-size=\""
      << px(size) << "\" text-anchor=\"middle\" fill=\"" << text_fill << "\" stroke=\"none\">" << mb << "</text>\n";
  }
}

// The time axis with its ticks and unit, then the legend, and the document's end.
void draw_axis_and_legend(std::ostream& o, const Picture& pic) {
  const double ay = pic.rows_bottom + 6;
  o << "<g font-size=\"11\" fill=\"#333333\">\n"
    << "<line x1=\"" << px(kSvgLeft) << "\" y1=\"" << px(ay) << "\" x2=\"" << px(kSvgLeft + pic.plot_w) << "\" y2=\""
    << px(ay) << "\" stroke=\"#333333\"/>\n";
  for (double tick = 0; tick < pic.makespan * pic.disp.factor * (1 + 1e-9); tick += pic.step) {
    const double x = kSvgLeft + tick / pic.disp.factor * pic.scale;
    o << "<line x1=\"" << px(x) << "\" y1=\"" << px(ay) << "\" x2=\"" << px(x) << "\" y2=\"" << px(ay + 5)
      << "\" stroke=\"#333333\"/><text x=\"" << px(x) << "\" y=\"" << px(ay + 17) << "\" text-anchor=\"middle\">"
      << num(tick, 4) << "</text>\n";
  }
  o << "<text x=\"" << px(kSvgLeft + pic.plot_w) << "\" y=\"" << px(ay + 32) << "\" text-anchor=\"end\">time ("
    << xml_escape(pic.disp.unit) << ")</text>\n</g>\n";
  const double ly = pic.rows_bottom + kAxisHeight + 6;
  o << "<g font-size=\"12\">\n";
  for (const auto& it : pic.legend) {
    const double y = ly + it.line * kLegendLine;
    if (it.colour.empty()) {
      o << "<text x=\"" << px(it.x) << "\" y=\"" << px(y + 11) << "\" fill=\"#444444\">" << xml_escape(it.text)
        << "</text>\n";
      continue;
    }
    o << "<rect class=\"legend\" x=\"" << px(it.x) << "\" y=\"" << px(y) << "\" width=\"14\" height=\"14\" fill=\""
      << it.colour << "\" stroke=\"#999999\" stroke-width=\"0.5\"/><text x=\"" << px(it.x + kSwatch) << "\" y=\""
      << px(y + 11) << "\">" << xml_escape(it.text) << "</text>\n";
  }
  o << "</g>\n</svg>\n";
}

}  // namespace

void write_svg(std::ostream& o, const Schedule& s, const Timeline& timeline, const SvgOptions& opt) {
  const Picture pic = layout(s, timeline, opt);
  draw_head(o, pic, opt);
  draw_rows(o, pic);
  o << "<g stroke=\"#ffffff\" stroke-width=\"0.5\">\n";
  for (const TimedOp& op : timeline)
    if (op.rank >= 0 && op.rank < s.p) draw_op(o, pic, op);
  o << "</g>\n";
  draw_axis_and_legend(o, pic);
}

std::string render_svg(const Schedule& s, const Timeline& timeline, const SvgOptions& opt) {
  std::ostringstream o;
  write_svg(o, s, timeline, opt);
  // A stream that failed to grow (no memory) stops writing without an exception: never return the
  // picture cut off.
  if (!o) throw Error("cannot render the SVG timeline of '" + s.name + "': out of memory");
  return o.str();
}

}  // namespace pipebench::bench
