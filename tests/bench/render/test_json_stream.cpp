// write_timeline_json() prints, as it goes, the text dump(2) gives for the timeline_json() tree: the
// contract (docs/json.md) is that text, and the tree of a large timeline does not fit in memory.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "analysis/catalog.hpp"
#include "analysis/simulate.hpp"
#include "bench/render/json.hpp"

using namespace pipebench;

namespace {

std::string indented(const std::string& text, int indent) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '\n') out += std::string(indent, ' ');
  }
  return out;
}

}  // namespace

TEST(JsonStream, TimelineMatchesTheTreeDumpedWithIndentTwo) {
  // dualpipe has F&B pairs (b_stage, b_mb); odd times give long shortest-round-trip decimals.
  for (const char* name : {"1f1b", "zbv", "dualpipe"}) {
    const auto s = analysis::make_schedule({name, 4, 8});
    auto costs = analysis::uniform_costs(s, 1.1, 2.3, 0.7, 3.1, {}, 0.013);
    const auto tl = analysis::simulate(s, costs, analysis::SimOptions{true}).timeline;
    for (int indent : {0, 4}) {
      std::ostringstream os;
      bench::write_timeline_json(os, tl, indent);
      EXPECT_EQ(os.str(), indented(bench::timeline_json(tl).dump(2), indent)) << name << " indent " << indent;
    }
  }
  std::ostringstream empty;
  bench::write_timeline_json(empty, {}, 4);
  EXPECT_EQ(empty.str(), bench::timeline_json({}).dump(2));
}
