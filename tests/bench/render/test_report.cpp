// Report rendering: the fixed-width table and the rows and JSON that `pipebench report` prints.
#include <gtest/gtest.h>

#include "analysis/error.hpp"
#include "bench/render/report.hpp"
#include "bench/render/table.hpp"
#include "sample_run.hpp"

namespace pipebench::bench {
namespace {

using testing::sample_run;

TEST(Table, HeaderUnitsAndAlignment) {
  Table t({{"run", ""}, {"schedule", "", false}, {"step", "ms"}});
  EXPECT_EQ(t.render({{"1", "gpipe", "12.5"}, {"10", "interleaved", "3.25"}}),
            "#  run  schedule     step\n"
            "#                    (ms)\n"
            "     1  gpipe        12.5\n"
            "    10  interleaved  3.25\n");
}

TEST(Table, RowsPrintedOneAtATimeKeepDeclaredWidths) {
  Table t({{"m", "", true, 4}, {"bubble", "%"}});
  EXPECT_EQ(t.header(), "#     m  bubble\n#           (%)\n");
  EXPECT_EQ(t.row({"16", "9.25"}), "     16    9.25\n");
  EXPECT_THROW(t.row({"16"}), Error);
}

TEST(Table, Fixed) {
  EXPECT_EQ(fixed(0.5, 2), "0.50");
  EXPECT_EQ(fixed(0.5, 2, true), "+0.50");
  EXPECT_EQ(fixed(-0.004, 2, true), "-0.00");
  EXPECT_EQ(fixed(1234.5678, 1), "1234.6");
}

TEST(Report, RunRowFromConfigSummaryAndRanks) {
  RunResult r = sample_run();
  r.ranks[1].peak_activation_bytes = 3 << 20;
  r.ranks[1].predicted_peak_inflight = 3;
  EXPECT_EQ(run_row(7, r), (std::vector<std::string>{"7", "1f1b", "1", "2", "1", "1", "2", "12.000", "25.00", "24.50",
                                                     "33.33", "+0.50", "2", "3", "3.0"}));
  r.config.clear();
  r.ranks.clear();
  r.summary.bubble_formula.reset();
  r.summary.bubble_measured = 0.2;
  EXPECT_EQ(run_row(0, r), (std::vector<std::string>{"-", "-", "-", "-", "-", "-", "-", "12.000", "20.00", "24.50", "-",
                                                     "-4.50", "-", "-", "-"}));
}

TEST(Report, JsonKeepsSecondsAndNullFormula) {
  RunResult r = sample_run();
  r.summary.bubble_formula.reset();
  const auto j = run_json(3, r, true);
  EXPECT_EQ(j.at("id"), 3);
  EXPECT_EQ(j.at("summary").at("step_time"), 0.012);
  EXPECT_TRUE(j.at("summary").at("bubble_formula").is_null());
  EXPECT_EQ(j.at("summary").at("extra").at("loss"), 2.5);
  EXPECT_EQ(j.at("peak_inflight"), 2);
  EXPECT_EQ(j.at("actions"), 9);
  EXPECT_EQ(j.at("ranks").size(), 2u);
  EXPECT_EQ(j.at("ranks")[1].at("clock_offset"), -2.5e-6);
  EXPECT_EQ(j.at("metadata").at("placement"), "node01:0,node02:1");
  EXPECT_FALSE(run_json(3, r, false).contains("ranks"));
}

TEST(Report, ListingNamesIgnoredRuns) {
  RunListing l;
  l.runs.push_back({1, sample_run()});
  l.incomplete = {2, 3};
  const std::string text = render_listing("f.h5", l);
  EXPECT_EQ(text.rfind("# pipebench results f.h5: 1 complete run(s), incomplete run(s) 2-3 ignored", 0), 0u) << text;
  EXPECT_NE(text.find("\n      1  1f1b          1   2   1   1    2     12.000   25.00      24.50    33.33   +0.50         2          2      0.0\n"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace pipebench::bench
