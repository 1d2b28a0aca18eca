// The SVG timeline: well-formed XML, one box per action at the right place, legend and title.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "analysis/catalog.hpp"
#include "analysis/simulate.hpp"
#include "bench/render/legend.hpp"
#include "bench/render/svg.hpp"
#include "analysis/validate.hpp"

using namespace pipebench::analysis;
using namespace pipebench::bench;

namespace {

// Checks that tags balance and that every '&' starts an entity; returns "" or what is wrong.
std::string xml_problem(const std::string& x) {
  std::vector<std::string> open;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (x[i] == '&') {
      static const std::regex entity("^&(amp|lt|gt|quot|apos|#[0-9]+);");
      if (!std::regex_search(x.substr(i, 8), entity)) return "bare '&' at " + std::to_string(i);
      continue;
    }
    if (x[i] != '<') continue;
    const std::size_t close = x.find('>', i);
    if (close == std::string::npos) return "unterminated tag at " + std::to_string(i);
    const std::string tag = x.substr(i + 1, close - i - 1);
    i = close;
    if (tag.empty()) return "empty tag";
    if (tag[0] == '?' || tag[0] == '!') continue;
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return "unbalanced </" + tag.substr(1) + ">";
      open.pop_back();
      continue;
    }
    if (tag.back() == '/') continue;
    open.push_back(tag.substr(0, tag.find_first_of(" \n")));
  }
  return open.empty() ? "" : "unclosed <" + open.back() + ">";
}

struct Box {
  double x, y, w;
};

std::vector<Box> op_boxes(const std::string& svg) {
  static const std::regex rect(R"re(<rect class="op" x="([0-9.]+)" y="([0-9.]+)" width="([0-9.]+)")re");
  std::vector<Box> out;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), rect); it != std::sregex_iterator(); ++it)
    out.push_back({std::stod((*it)[1]), std::stod((*it)[2]), std::stod((*it)[3])});
  return out;
}

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (auto pos = s.find(what); pos != std::string::npos; pos = s.find(what, pos + 1)) ++n;
  return n;
}

}  // namespace

TEST(Svg, OneBoxPerActionAtItsTime) {
  // 1F1B p=2 m=2, F=1 B=2: rank 0 0F0 [0,1] 0F1 [1,2] 0B0 [4,6] 0B1 [7,9]; rank 1 1F0 [1,2] 1B0 [2,4]
  // 1F1 [4,5] 1B1 [5,7]; makespan 9, so 100 px per time unit on a 900 px axis.
  const Schedule s = make_schedule({"1f1b", 2, 2});
  const SimResult r = simulate(s, uniform_costs(s, 1, 2, 1));
  SvgOptions opt;
  opt.plot_width = 900;
  const std::string svg = render_svg(s, r.timeline, opt);
  EXPECT_EQ(xml_problem(svg), "");
  const auto boxes = op_boxes(svg);
  ASSERT_EQ(boxes.size(), r.timeline.size());
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    const TimedOp& op = r.timeline[i];
    EXPECT_NEAR(boxes[i].x, kSvgLeft + 100 * op.start, 0.01) << to_string(op.action);
    EXPECT_NEAR(boxes[i].w, 100 * (op.end - op.start), 0.01) << to_string(op.action);
    EXPECT_NEAR(boxes[i].y, kSvgTop + op.rank * kSvgRowPitch, 0.01);
  }
  EXPECT_NEAR(boxes.back().x + boxes.back().w, kSvgLeft + 900, 0.01);  // 0B1 ends at the makespan
  // Title with the schedule, its parameters and the bubble (1 - 12/18); a legend for F, B and idle.
  EXPECT_NE(svg.find(">1f1b: p=2, m=2, v=1<"), std::string::npos);
  EXPECT_NE(svg.find("bubble 33.3 %"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"legend\""), 3);
  EXPECT_NE(svg.find(">F forward<"), std::string::npos);
  EXPECT_NE(svg.find(">B backward<"), std::string::npos);
  EXPECT_EQ(svg.find(">W backward"), std::string::npos);  // only kinds that occur
  EXPECT_NE(svg.find(">time (units)<"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"idle\""), 2);  // one hatched background per rank
  EXPECT_EQ(svg.rfind("<?xml version=\"1.0\"", 0), 0u);
}

TEST(Svg, SecondsAreShownInAReadableUnit) {
  const Schedule s = make_schedule({"gpipe", 2, 2});
  const SimResult r = simulate(s, uniform_costs(s, 1e-3, 2e-3, 1e-3));  // makespan 9 ms
  SvgOptions opt;
  opt.time_unit = "s";
  const std::string svg = render_svg(s, r.timeline, opt);
  EXPECT_NE(svg.find(">time (ms)<"), std::string::npos);
  EXPECT_NE(svg.find("bubble 33.3 %, makespan 9 ms<"), std::string::npos);
}

TEST(Svg, StagesAreLabelledWhereARankHoldsSeveralAndOverlappedPairsEscaped) {
  // A hand-made V: rank 0 holds stages 0 and 3, rank 1 stages 1 and 2; rank 0's backward of stage 3
  // overlaps the forward of micro-batch 1 on stage 0.
  Schedule s;
  s.name = "hand-v";
  s.p = 2;
  s.m = 2;
  s.stage_rank = {0, 1, 1, 0};
  s.actions = {
      {Action::make(Kind::F, 0, 0), Action::make(Kind::F, 3, 0), Action::overlapped(0, 1, 3, 0),
       Action::make(Kind::F, 3, 1), Action::make(Kind::B, 3, 1), Action::make(Kind::B, 0, 0),
       Action::make(Kind::B, 0, 1)},
      {Action::make(Kind::F, 1, 0), Action::make(Kind::F, 2, 0), Action::make(Kind::F, 1, 1),
       Action::make(Kind::B, 2, 0), Action::make(Kind::F, 2, 1), Action::make(Kind::B, 1, 0),
       Action::make(Kind::B, 2, 1), Action::make(Kind::B, 1, 1)},
  };
  validate(s);
  const SimResult r = simulate(s, uniform_costs(s, 1, 2, 1));
  const std::string svg = render_svg(s, r.timeline);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(op_boxes(svg).size(), s.num_actions());
  EXPECT_NE(svg.find(">s3<"), std::string::npos);
  EXPECT_NE(svg.find(">1|0<"), std::string::npos);  // the pair's micro-batches, forward|backward
  EXPECT_NE(svg.find(">F&amp;B overlapped pair<"), std::string::npos);
  EXPECT_NE(svg.find("(0F1;3B0)"), std::string::npos);  // in the box's tooltip
  EXPECT_NE(svg.find("lighter tint: later chunk"), std::string::npos);
}

TEST(Svg, LongSchedulesShrinkOrDropLabelsThatDoNotFit) {
  const Schedule s = make_schedule({"1f1b", 16, 256});
  const SimResult r = simulate(s, uniform_costs(s, 1, 2, 1));
  const std::string svg = render_svg(s, r.timeline);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(op_boxes(svg).size(), s.num_actions());
  EXPECT_DOUBLE_EQ(svg_plot_width(s, {}), 4000);  // capped
  // Every label fits its box: font size within [5, 11] px and fewer labels than boxes.
  static const std::regex label(R"re(<text x="[0-9.]+" y="[0-9.]+" font-size="([0-9.]+)" text-anchor="middle")re");
  int labels = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), label); it != std::sregex_iterator(); ++it) {
    const double size = std::stod((*it)[1]);
    EXPECT_GE(size, 5);
    EXPECT_LE(size, 11);
    ++labels;
  }
  EXPECT_GT(labels, 0);
  EXPECT_LT(labels, static_cast<int>(s.num_actions()));
}

// The legend of timelines and plots: swatch + text (7.2 px a glyph at 12 px) + gap per entry, wrapped
// before an entry that would pass the right edge; a note has no swatch; an entry alone stays.
TEST(Legend, EntriesWrapWhenTheLineIsFull) {
  std::vector<LegendItem> items = {{"#ff0000", "abcde"}, {"", "note"}, {"#00ff00", "x"}, {"#0000ff", std::string(40, 'w')}};
  // widths with swatch 19, gap 16: 19 + 36 + 16 = 71; 0 + 28.8 + 16 = 44.8; 19 + 7.2 + 16 = 42.2; 19 + 288 + 16
  EXPECT_EQ(layout_legend(items, 19, 16, 10, 160), 3);
  EXPECT_DOUBLE_EQ(items[0].x, 10);
  EXPECT_DOUBLE_EQ(items[1].x, 81);
  EXPECT_EQ(items[1].line, 0);
  EXPECT_DOUBLE_EQ(items[2].x, 10);  // 125.8 + 42.2 > 160
  EXPECT_EQ(items[2].line, 1);
  EXPECT_DOUBLE_EQ(items[3].x, 10);  // wider than the line: alone on its own
  EXPECT_EQ(items[3].line, 2);
  std::vector<LegendItem> none;
  EXPECT_EQ(layout_legend(none, 26, 14, 0, 100), 0);
}
