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

void write_svg(std::ostream& o, const Schedule& s, const Timeline& timeline, const SvgOptions& opt) {
  const Metrics metrics = compute_metrics(s, timeline);
  const double makespan = metrics.makespan > 0 ? metrics.makespan : 1;
  const double plot_w = svg_plot_width(s, opt);
  const double scale = plot_w / makespan;
  const int p = s.p;
  const double rows_bottom = kSvgTop + p * kSvgRowPitch - (kSvgRowPitch - kSvgRowHeight);
  const double width = kSvgLeft + plot_w + kRight;
  // Per stage: its chunk index on its rank and how many chunks that rank holds.
  std::vector<int> chunk(s.num_stages(), 0), held(p, 0);
  for (int st = 0; st < s.num_stages(); ++st) {
    const int r = s.stage_rank[st];
    if (r >= 0 && r < p) chunk[st] = held[r]++;
  }
  // Legend: the kinds that occur, idle, and the chunk tint where it applies.
  std::array<bool, kNumKinds> used{};
  for (const TimedOp& op : timeline) used[static_cast<int>(op.action.kind)] = true;
  const char* names[kNumKinds] = {"F forward", "B backward", "I backward (input)", "W backward (weight)",
                                  "F&B overlapped pair"};
  std::vector<LegendItem> legend;
  for (Kind k : {Kind::F, Kind::B, Kind::I, Kind::W, Kind::FB})
    if (used[static_cast<int>(k)]) legend.push_back({hex(kind_colour(k)), names[static_cast<int>(k)]});
  legend.push_back({"url(#idle)", "idle"});
  if (!held.empty() && *std::max_element(held.begin(), held.end()) > 1)
    legend.push_back({"", "lighter tint: later chunk of the rank; sN: stage N"});
  const int legend_lines = layout_legend(legend, kSwatch, kGap, kSvgLeft, width - kRight);
  const double height = rows_bottom + kAxisHeight + legend_lines * kLegendLine + 12;
  const Display disp = display_unit(opt.time_unit, makespan);

  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" << px(width) << "\" height=\""
    << px(height) << "\" viewBox=\"0 0 " << px(width) << ' ' << px(height) << "\" font-family=\"sans-serif\">\n"
    << "<defs><pattern id=\"idle\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
       "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#f4f5f7\"/>"
       "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#d5d9de\" stroke-width=\"2\"/></pattern></defs>\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";

  // Title: what it is, then the headline figures.
  const std::string head = opt.title.empty() ? s.name + ": p=" + std::to_string(p) + ", m=" + std::to_string(s.m) +
                                                   ", v=" + std::to_string(s.v())
                                             : opt.title;
  char bubble[64];
  std::snprintf(bubble, sizeof bubble, "bubble %.1f %%", 100 * metrics.bubble_fraction);
  o << "<text x=\"" << px(kSvgLeft) << "\" y=\"22\" font-size=\"15\" font-weight=\"bold\">" << xml_escape(head)
    << "</text>\n"
    << "<text x=\"" << px(kSvgLeft) << "\" y=\"40\" font-size=\"12\" fill=\"#444444\">" << bubble
    << ", makespan " << num(metrics.makespan * disp.factor, 5) << ' ' << xml_escape(disp.unit) << "</text>\n";

  // Time grid behind the rows.
  const double step = nice_step(makespan * disp.factor, plot_w / 90);
  o << "<g stroke=\"#e3e6ea\" stroke-width=\"1\">\n";
  for (double t = step; t < makespan * disp.factor * (1 + 1e-9); t += step) {
    const double x = kSvgLeft + t / disp.factor * scale;
    o << "<line x1=\"" << px(x) << "\" y1=\"" << px(kSvgTop - 4) << "\" x2=\"" << px(x) << "\" y2=\""
      << px(rows_bottom) << "\"/>\n";
  }
  o << "</g>\n";

  // Rows: the rank label and the idle background the boxes are drawn over.
  for (int r = 0; r < p; ++r) {
    const double y = kSvgTop + r * kSvgRowPitch;
    o << "<text x=\"" << px(kSvgLeft - 8) << "\" y=\"" << px(y + kSvgRowHeight / 2 + 4)
      << "\" font-size=\"12\" text-anchor=\"end\">rank " << r << "</text>\n"
      << "<rect class=\"idle\" x=\"" << px(kSvgLeft) << "\" y=\"" << px(y) << "\" width=\"" << px(plot_w)
      << "\" height=\"" << px(kSvgRowHeight) << "\" fill=\"url(#idle)\"/>\n";
  }

  // One box per action.
  o << "<g stroke=\"#ffffff\" stroke-width=\"0.5\">\n";
  for (const TimedOp& op : timeline) {
    if (op.rank < 0 || op.rank >= p) continue;
    const Action& a = op.action;
    const int nchunks = held[op.rank];
    const bool valid_stage = a.stage >= 0 && a.stage < s.num_stages();
    const double t = nchunks > 1 && valid_stage ? 0.45 * chunk[a.stage] / (nchunks - 1) : 0.0;
    const Rgb fill = tint(kind_colour(a.kind), t);
    const double x = kSvgLeft + op.start * scale, w = (op.end - op.start) * scale;
    const double y = kSvgTop + op.rank * kSvgRowPitch;
    o << "<rect class=\"op\" x=\"" << px(x) << "\" y=\"" << px(y) << "\" width=\"" << px(w) << "\" height=\""
      << px(kSvgRowHeight) << "\" fill=\"" << hex(fill) << "\"><title>rank " << op.rank << ": "
      << xml_escape(to_string(a)) << "  [" << num(op.start * disp.factor) << ", " << num(op.end * disp.factor) << "] "
      << xml_escape(disp.unit) << "</title></rect>\n";
    // The micro-batch, and below it the stage where the rank holds several; smaller text where the box
    // is narrow, none where even the smallest does not fit (the tooltip still tells).
    const std::string text_fill = light(fill) ? "#222222" : "#ffffff";
    const std::string mb = label_of(a);
    const double size = fit(mb, w);
    if (size == 0) continue;
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
        << px(size) << "\" text-anchor=\"middle\" fill=\"" << text_fill << "\" stroke=\"none\">" << mb
        << "</text>\n";
    }
  }
  o << "</g>\n";

  // Time axis with ticks and unit.
  const double ay = rows_bottom + 6;
  o << "<g font-size=\"11\" fill=\"#333333\">\n"
    << "<line x1=\"" << px(kSvgLeft) << "\" y1=\"" << px(ay) << "\" x2=\"" << px(kSvgLeft + plot_w) << "\" y2=\""
    << px(ay) << "\" stroke=\"#333333\"/>\n";
  for (double tick = 0; tick < makespan * disp.factor * (1 + 1e-9); tick += step) {
    const double x = kSvgLeft + tick / disp.factor * scale;
    o << "<line x1=\"" << px(x) << "\" y1=\"" << px(ay) << "\" x2=\"" << px(x) << "\" y2=\"" << px(ay + 5)
      << "\" stroke=\"#333333\"/><text x=\"" << px(x) << "\" y=\"" << px(ay + 17) << "\" text-anchor=\"middle\">"
      << num(tick, 4) << "</text>\n";
  }
  o << "<text x=\"" << px(kSvgLeft + plot_w) << "\" y=\"" << px(ay + 32) << "\" text-anchor=\"end\">time ("
    << xml_escape(disp.unit) << ")</text>\n</g>\n";

  const double ly = rows_bottom + kAxisHeight + 6;
  o << "<g font-size=\"12\">\n";
  for (const auto& it : legend) {
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

std::string render_svg(const Schedule& s, const Timeline& timeline, const SvgOptions& opt) {
  std::ostringstream o;
  write_svg(o, s, timeline, opt);
  // A stream that failed to grow (no memory) stops writing without an exception: never return the
  // picture cut off.
  if (!o) throw Error("cannot render the SVG timeline of '" + s.name + "': out of memory");
  return o.str();
}

}  // namespace pipebench::bench
