// The HTML report and comparison (bench/render/html.hpp, bench/render/plot.hpp, bench/cmd/compare_match.hpp,
// bench/cmd/report_input.hpp) and the variability over timed steps (schema version 3).
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <sstream>

#include "bench/cmd/compare_match.hpp"
#include "bench/render/html.hpp"
#include "bench/render/plot.hpp"
#include "bench/render/report.hpp"
#include "bench/cmd/report_input.hpp"
#include "bench/run/measure.hpp"
#include "sample_run.hpp"

namespace pipebench::bench {
namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The <title> right after each <svg ...> opening tag, in order.
std::vector<std::string> svg_titles(const std::string& html) {
  std::vector<std::string> out;
  const std::regex re("<svg[^>]*>(<title>([^<]*)</title>)?");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[2].str());
  return out;
}

TEST(Variability, MinMaxAndCoefficientOfVariation) {
  RunSummary s;
  set_variability(s, {0.010, 0.012, 0.014}, {0.30, 0.20, 0.25});
  EXPECT_DOUBLE_EQ(*s.step_time_min, 0.010);
  EXPECT_DOUBLE_EQ(*s.step_time_max, 0.014);
  EXPECT_DOUBLE_EQ(*s.bubble_min, 0.20);
  EXPECT_DOUBLE_EQ(*s.bubble_max, 0.30);
  // Sample standard deviation 0.002 over mean 0.012.
  EXPECT_NEAR(*s.step_time_cv, 0.002 / 0.012, 1e-12);
  RunSummary one;
  set_variability(one, {0.01}, {0.2});
  EXPECT_EQ(*one.step_time_cv, 0.0);
  RunSummary none;
  set_variability(none, {}, {});
  EXPECT_FALSE(none.step_time_min);
}

TEST(Variability, SpreadAndItsLine) {
  RunSummary s = testing::sample_run().summary;  // 11.8 / 12.0 / 12.5 ms
  EXPECT_NEAR(*step_time_spread(s), 0.7 / 12.0, 1e-12);
  EXPECT_EQ(variability_line(s),
            "# over timed steps: step time min 11.800 / median 12.000 / max 12.500 ms, cv 3.00 %; bubble min 24.00 / "
            "median 25.00 / max 26.00 %; spread 5.83 % > 5.00 %\n");
  s.step_time_max = 0.0121;
  EXPECT_EQ(variability_line(s).find("spread"), std::string::npos);
  s.step_time_min.reset();
  EXPECT_FALSE(step_time_spread(s));
  EXPECT_EQ(variability_line(s), "# variability over timed steps: unknown (written before schema version 3)\n");
}

TEST(Plot, AxesLegendTitleAndPoints) {
  PlotOptions opt;
  opt.title = "Bubble <m>";
  opt.x_label = "micro-batches m";
  opt.y_label = "bubble (%)";
  PlotSeries s("measured", "#123456", SeriesStyle::points);
  s.x = {4, 8, 16};
  s.y = {40, 25, std::nan("")};  // the NaN point is not drawn
  s.lo = {38, 24, 0};
  s.hi = {42, 27, 0};
  const std::string svg = render_plot(opt, {s});
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("<title>Bubble &lt;m&gt;</title>"), std::string::npos);
  EXPECT_EQ(count(svg, "<circle"), 2 + 1);  // two points and the legend's marker
  EXPECT_EQ(count(svg, "<path d="), 2);     // two min-max bars
  EXPECT_NE(svg.find(">micro-batches m</text>"), std::string::npos);
  EXPECT_NE(svg.find(">bubble (%)</text>"), std::string::npos);
  EXPECT_NE(svg.find(">measured</text>"), std::string::npos);
  EXPECT_NE(render_plot(opt, {}).find(">no data</text>"), std::string::npos);
}

TEST(Plot, LogSizeAxisLabelsBytes) {
  PlotOptions opt;
  opt.title = "busbw";
  opt.log_x = true;
  PlotSeries s("world", "#000000", SeriesStyle::line_points);
  s.x = {1024, 1048576};
  s.y = {0.5, 10};
  const std::string svg = render_plot(opt, {s});
  EXPECT_NE(svg.find(">1 KiB</text>"), std::string::npos);
  EXPECT_NE(svg.find(">1 MiB</text>"), std::string::npos);
}

TEST(Plot, OneColourPerSchedule) {
  EXPECT_EQ(schedule_colour("1f1b"), schedule_colour("1f1b"));
  EXPECT_NE(schedule_colour("1f1b"), schedule_colour("zbv"));
  EXPECT_NE(schedule_colour("zbv"), schedule_colour("dualpipev"));
  EXPECT_EQ(schedule_colour("not a schedule"), "#7f7f7f");
}

RunListing listing_of(std::vector<RunResult> runs) {
  RunListing l;
  l.schema_version = 3;
  int id = 0;
  for (auto& r : runs) {
    l.runs.push_back({++id, std::move(r)});
    l.complete.push_back(id);
  }
  return l;
}

TEST(HtmlReport, SectionsPlotsAndTitles) {
  RunResult a = testing::sample_run();
  a.metadata["slurm_job_id"] = "4242";
  a.metadata["job_id"] = "4242";
  RunResult b = testing::sample_run();
  b.config["schedule"] = "zb-h1";
  b.summary.step_time_min.reset();  // as a version 2 file holds it
  b.summary.step_time_max.reset();
  ReportInput in;
  in.path = "x.h5";
  in.listing = listing_of({a, b});
  in.breakdown[1] = *breakdown_of(a);
  in.timelines.push_back(timeline_of(1, a));
  std::ostringstream o;
  write_html_report(o, in);
  const std::string html = o.str();
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  // The bubble against m is one small-multiples figure, a panel (a group with its own title) per schedule.
  const std::vector<std::string> want = {"Bubble against m, one panel per schedule",
                                         "Step time breakdown per run",
                                         "Timeline measured: run 1 1f1b t=1 p=2 d=1 v=1 m=2",
                                         "Timeline simulated: run 1 1f1b t=1 p=2 d=1 v=1 m=2",
                                         "Peak activation memory per pipeline rank",
                                         "Stage times: run 1 1f1b t=1 p=2 d=1 v=1 m=2"};  // it has a loss
  EXPECT_EQ(svg_titles(html), want);
  EXPECT_NE(html.find("<g transform=\"translate(380,0)\"><title>Bubble against m: zb-h1</title>"), std::string::npos);
  // The headline opens the page: fastest overall (both 12 ms: the first), per schedule, worst gap, cv, flags.
  const std::size_t headline = html.find("<h2 id=\"headline\">Headline</h2>");
  ASSERT_NE(headline, std::string::npos);
  EXPECT_LT(headline, html.find("<h2 id=\"summary\">"));
  EXPECT_NE(html.find("fastest configuration (step time)</th><td class=\"wrap\"><b>run 1 1f1b t=1 p=2 d=1 v=1 m=2</b>: 12.000 ms"),
            std::string::npos);
  EXPECT_NE(html.find("worst gap</th><td class=\"wrap\">0.50 pp in run 1"), std::string::npos);
  EXPECT_NE(html.find("worst cv of the step time</th><td class=\"wrap\">3.00 % in run 1"), std::string::npos);
  EXPECT_NE(html.find("<span class=\"flag\">run(s) 1</span>"), std::string::npos);
  // The runs table: the spread of run 1 flagged, run 2's variability unknown.
  EXPECT_NE(html.find("<td class=\"flag\" title=\"spread above 5 %\">5.83 &#9888;</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"muted\">unknown</td>"), std::string::npos);
  // Metadata: a value with a non-ASCII character and the placement.
  EXPECT_NE(html.find("Café CPU (x 2)"), std::string::npos);
  EXPECT_NE(html.find("node01:0,node02:1"), std::string::npos);
  // Slurm entries in the summary; a value only some runs have names them.
  EXPECT_NE(html.find("<th class=\"t\">slurm_job_id</th><td class=\"wrap\">4242 <span class=\"muted\">(run 1)</span>"),
            std::string::npos);
  EXPECT_NE(html.find("<th class=\"t\">batch job</th>"), std::string::npos);
  // No resource from outside the page.
  EXPECT_EQ(html.find("src=\""), std::string::npos);
  EXPECT_EQ(html.find("href=\"http"), std::string::npos);
}

TEST(HtmlReport, BreakdownAddsUpToTheStepTime) {
  const RunResult run = testing::sample_run();
  const analysis::Breakdown b = *breakdown_of(run);
  EXPECT_DOUBLE_EQ(b.compute, 0.006);  // both ranks busy 6 ms
  EXPECT_DOUBLE_EQ(b.dp, 0.001);
  EXPECT_NEAR(b.compute + b.overhead + b.bubble + b.pp + b.dp, run.summary.step_time, 1e-12);
  EXPECT_EQ(b.tp, 0.0);     // the measured producer leaves the planner's own parts empty
  EXPECT_EQ(b.other, 0.0);
  RunResult no_schedule = run;
  no_schedule.config["schedule"] = "nope";
  EXPECT_FALSE(breakdown_of(no_schedule));
}

TEST(HtmlReport, TimelineOfStoredRunSkipsRecordsThatDoNotFit) {
  RunResult run = testing::sample_run();
  run.actions.push_back(testing::act(0, 0, analysis::Kind::F, 99, 0, 0.0, 0.001));  // stage 99 of 2
  const TimelineView v = timeline_of(1, run);
  EXPECT_EQ(v.schedule.name, "1f1b");
  EXPECT_EQ(v.measured.size(), 7u);  // step 0's actions of pipeline 0, not the stage-99 one
  EXPECT_EQ(v.simulated.size(), v.schedule.num_actions());
}

TEST(Compare, RangesAndPlacement) {
  EXPECT_TRUE(ranges_disjoint(1, 2, 2.5, 3));
  EXPECT_TRUE(ranges_disjoint(2.5, 3, 1, 2));
  EXPECT_FALSE(ranges_disjoint(1, 2, 2, 3));  // touching ranges overlap
  EXPECT_EQ(placement_shape("nodeA:0-3,nodeB:4-7,nodeA:8"), "host1:0-3,host2:4-7,host1:8");
  EXPECT_EQ(placement_shape("a:0-3"), placement_shape("b:0-3"));
  EXPECT_TRUE(metadata_is_noise("date_utc"));
  EXPECT_TRUE(metadata_is_noise("env.SLURM_JOB_ID"));
  EXPECT_TRUE(metadata_is_noise("env.SLURM_TASK_PID"));
  EXPECT_FALSE(metadata_is_noise("env.SLURM_CPUS_PER_TASK"));
  EXPECT_FALSE(metadata_is_noise("build_flags"));
  EXPECT_FALSE(metadata_is_noise("env.OMP_NUM_THREADS"));
}

// Steps for compare's bootstrap: `n` timed steps around `t` (+- 1 %), in `repeats` repeats.
void set_steps(RunResult& r, double t, int n, int repeats = 1) {
  r.steps.clear();
  for (int k = 0; k < repeats; ++k)
    for (int i = 0; i < n; ++i) {
      const double wobble = 1 + 0.01 * ((i * 7 + k * 3) % 5 - 2) / 2.0;
      r.steps.push_back({k, i, t * wobble, t * wobble * 0.9, 0.25 * wobble});
    }
  r.summary.repeats = repeats;
  r.summary.step_time = t;
}

TEST(Compare, MatchesRatiosSignificanceGeomeanAndMetadata) {
  RunResult a1 = testing::sample_run(), a2 = testing::sample_run();
  a2.config["m"] = "4";
  RunResult a3 = testing::sample_run();
  a3.config["m"] = "8";
  set_steps(a1, 0.012, 6);
  set_steps(a2, 0.012, 6);
  RunResult b1 = a1, b2 = a2;
  set_steps(b1, 0.024, 6);  // twice as slow
  set_steps(b2, 0.012, 6);  // the same steps: the interval holds 1
  b1.config["timed_steps"] = "10";  // a measurement setting: still the same configuration
  a1.metadata["date_utc"] = "2026-01-01T00:00:00Z";
  b1.metadata["date_utc"] = "2026-02-01T00:00:00Z";
  b1.metadata["placement"] = "nodeX:0,nodeY:1";  // the same layout on other hosts
  b1.metadata["env.OMP_NUM_THREADS"] = "2";
  b2.metadata["env.OMP_NUM_THREADS"] = "2";
  RunResult b4 = testing::sample_run();
  b4.config["m"] = "32";
  const Comparison c = compare_listings("a.h5", listing_of({a1, a2, a3}), "b.h5", listing_of({b1, b2, b4}));
  ASSERT_EQ(c.matches.size(), 2u);
  const CompareFigure& slow = c.matches[0].figures[0];
  EXPECT_DOUBLE_EQ(*slow.ratio, 2.0);
  EXPECT_TRUE(*slow.significant);
  EXPECT_GT(*slow.ci_lo, 1.9);
  EXPECT_LT(*slow.ci_hi, 2.1);
  EXPECT_EQ(slow.basis, "steps");
  EXPECT_EQ(slow.samples_a, 6);
  EXPECT_DOUBLE_EQ(*c.matches[1].figures[0].ratio, 1.0);
  EXPECT_FALSE(*c.matches[1].figures[0].significant);
  EXPECT_EQ(c.significant, 1);
  EXPECT_EQ(c.insignificant, 1);
  EXPECT_NEAR(*c.geomean_step_ratio, std::sqrt(2.0), 1e-12);
  ASSERT_EQ(c.groups.size(), 1u);
  EXPECT_EQ(c.groups[0].name, "1f1b");
  EXPECT_EQ(c.groups[0].runs, 2);
  ASSERT_EQ(c.only_a.size(), 1u);
  EXPECT_EQ(c.only_a[0].label, "1f1b t=1 p=2 d=1 v=1 m=8");
  ASSERT_EQ(c.only_b.size(), 1u);
  ASSERT_EQ(c.metadata.size(), 1u);  // OMP_NUM_THREADS only: dates and host names are noise
  EXPECT_EQ(c.metadata[0].key, "env.OMP_NUM_THREADS");
  EXPECT_TRUE(c.unlike.empty());
  const auto j = comparison_json(c);
  EXPECT_EQ(j["matches"].size(), 2u);
  EXPECT_EQ(j["matches"][0]["significant"], true);
  EXPECT_EQ(j["matches"][1]["significant"], false);
  EXPECT_EQ(j["matches"][0]["step_time"]["ratio"], 2.0);
  EXPECT_EQ(j["matches"][0]["step_time"]["basis"], "steps");
  EXPECT_EQ(j["method"]["seed"], 20261201);
  EXPECT_EQ(j["like_for_like"], true);
  EXPECT_EQ(j["only_in_a"].size(), 1u);
  EXPECT_EQ(j["metadata_differs"][0]["key"], "env.OMP_NUM_THREADS");
  // The same input, the same interval (fixed seed).
  const Comparison again = compare_listings("a.h5", listing_of({a1, a2, a3}), "b.h5", listing_of({b1, b2, b4}));
  EXPECT_EQ(*again.matches[0].figures[0].ci_lo, *slow.ci_lo);
  std::ostringstream o;
  write_html_compare(o, c);
  EXPECT_EQ(svg_titles(o.str()), (std::vector<std::string>{"Geometric-mean step time B/A per schedule",
                                                           "Step time, B against A (one point per configuration)"}));
}

// With repeats on both sides the verdict rests on the repeats' medians; too few of them: no verdict.
TEST(Compare, RepeatsAreTheSamplesAndTooFewGiveNoVerdict) {
  RunResult a = testing::sample_run(), b = testing::sample_run();
  set_steps(a, 0.010, 3, 5);
  set_steps(b, 0.0103, 3, 5);
  const Comparison c = compare_listings("a", listing_of({a}), "b", listing_of({b}), 0);  // the interval alone
  const CompareFigure& f = c.matches[0].figures[0];
  EXPECT_EQ(f.basis, "repeats");
  EXPECT_EQ(f.samples_a, 5);
  EXPECT_TRUE(*f.significant);  // 3 % slower, repeats within 1 %
  set_steps(b, 0.0103, 3, 4);   // 4 repeats against 5: the steps (12 and 15)
  EXPECT_EQ(compare_listings("a", listing_of({a}), "b", listing_of({b})).matches[0].figures[0].basis, "repeats");
  set_steps(a, 0.010, 4);  // one repeat of 4 steps: too few
  const Comparison few = compare_listings("a", listing_of({a}), "b", listing_of({b}));
  EXPECT_FALSE(few.matches[0].figures[0].significant);
  EXPECT_EQ(few.unknown, 1);
  EXPECT_NE(render_comparison(few).find("0 within the noise, 1 not enough samples"), std::string::npos);
  EXPECT_EQ(comparison_json(few)["matches"][0]["variability_known"], false);
}

TEST(Compare, UnknownVariabilityIsNotSignificant) {
  RunResult a = testing::sample_run(), b = testing::sample_run();
  b.summary.step_time = 1.0;  // no steps recorded (a file before schema version 4)
  const Comparison c = compare_listings("a", listing_of({a}), "b", listing_of({b}));
  EXPECT_EQ(c.unknown, 1);
  EXPECT_FALSE(c.matches[0].figures[0].significant);
  EXPECT_EQ(comparison_json(c)["matches"][0]["variability_known"], false);
}

// --threshold: a significant interval counts only when B/A is also at least the threshold from 1.
TEST(Compare, ThresholdIsThePracticalFloor) {
  RunResult a = testing::sample_run(), b = testing::sample_run();
  set_steps(a, 0.010, 8);
  set_steps(b, 0.01015, 8);  // 1.5 %, steps within +-1 %: the interval excludes 1
  const Comparison stat = compare_listings("a", listing_of({a}), "b", listing_of({b}), 0);
  EXPECT_DOUBLE_EQ(stat.threshold, 0.0);
  EXPECT_TRUE(*stat.matches[0].figures[0].significant);
  EXPECT_NE(render_comparison(stat).find("sig: yes when the interval excludes 1, few:"), std::string::npos);
  const Comparison practical = compare_listings("a", listing_of({a}), "b", listing_of({b}), 0.02);
  EXPECT_FALSE(*practical.matches[0].figures[0].significant);
  EXPECT_EQ(comparison_json(practical)["threshold"], 0.02);
  EXPECT_NE(render_comparison(practical).find("excludes 1 and B/A is 2 % or more from 1 (--threshold 2)"), std::string::npos);
  // The default floor, 5 %: the 1.5 % is within it, a 6 % slowdown with the same spread is not.
  const Comparison floor = compare_listings("a", listing_of({a}), "b", listing_of({b}));
  EXPECT_DOUBLE_EQ(floor.threshold, 0.05);
  EXPECT_FALSE(*floor.matches[0].figures[0].significant);
  EXPECT_NE(render_comparison(floor).find("excludes 1 and B/A is 5 % or more from 1 (--threshold 5)"), std::string::npos);
  RunResult b6 = b;
  set_steps(b6, 0.0106, 8);
  EXPECT_TRUE(*compare_listings("a", listing_of({a}), "b", listing_of({b6})).matches[0].figures[0].significant);
  EXPECT_TRUE(beyond_threshold(std::nullopt, 0, 1, 0.02));  // A is 0: any other B
  EXPECT_FALSE(beyond_threshold(std::nullopt, 0, 0, 0));
  EXPECT_TRUE(beyond_threshold(1.02, 1, 1.02, 0.02));
  EXPECT_FALSE(beyond_threshold(1.0199, 1, 1.0199, 0.02));
  // Communication sizes: busbw B/A against the comm floor (2 % unless --threshold gives one).
  StoredComm ca;
  ca.id = 1;
  ca.result.op = "all_reduce";
  ca.result.rows = {{1024, 256, 0, 10, 9.9, 10, 0.1, 0.1, 0}};
  StoredComm cb = ca;
  cb.result.rows[0].busbw_GBps = 0.101;  // 1 % more, times apart
  cb.result.rows[0].time_us_min = 9.8, cb.result.rows[0].time_us_max = 9.85;
  Comparison c;
  EXPECT_DOUBLE_EQ(c.comm_threshold, kCommThreshold);
  compare_comm(c, {ca}, {cb});
  EXPECT_FALSE(c.comm[0].sizes[0].significant);
  Comparison c0;
  c0.comm_threshold = 0;
  compare_comm(c0, {ca}, {cb});
  EXPECT_TRUE(c0.comm[0].sizes[0].significant);
}

// Like for like: the CPU, commit, library versions and system description decide comparability.
TEST(Compare, LikeForLikeNamesWhatDiffers) {
  RunResult a = testing::sample_run(), b = testing::sample_run();
  a.metadata["nodes"] = "2", a.metadata["ranks"] = "2";
  b.metadata["nodes"] = "1", b.metadata["ranks"] = "2";
  b.metadata["cpu"] = "Other CPU (x 64)";
  b.metadata["system.interconnect"] = "InfiniBand NDR 400";
  const Comparison c = compare_listings("a", listing_of({a}), "b", listing_of({b}));
  std::vector<std::string> keys;
  for (const auto& d : c.unlike) keys.push_back(d.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"CPU", "nodes", "ranks per node", "system.interconnect"}));
  EXPECT_EQ(c.unlike[3].a, "(not recorded)");
  const std::string text = render_comparison(c);
  EXPECT_EQ(text.find("# like for like: NO"), text.find('\n') + 1);  // the first section
  EXPECT_EQ(comparison_json(c)["like_for_like"], false);
}

TEST(Compare, CommBusbwPerSize) {
  StoredComm a;
  a.id = 1;
  a.result.op = "allreduce";
  a.result.group = "dp";
  a.result.groups = 2;
  a.result.group_size = 4;
  a.result.backend = "mpi";
  // bytes count in_place time_us min max algbw busbw wrong: out of place, then in place (ignored)
  a.result.rows = {{1024, 256, 0, 10, 9, 11, 0.1, 0.15, 0},
                   {1024, 256, 1, 90, 89, 91, 0.01, 0.015, 0},
                   {4096, 1024, 0, 20, 19, 21, 0.2, 0.3, 0}};
  StoredComm b = a;
  b.id = 7;
  b.result.rows[1].busbw_GBps = 5;  // in place: not compared
  b.result.rows[2].busbw_GBps = 1.2;  // four times a's
  b.result.rows[2].time_us_min = 4;
  b.result.rows[2].time_us_max = 6;
  StoredComm other = a;
  other.result.op = "allgather";
  Comparison c;
  compare_comm(c, {a, other}, {b});
  ASSERT_EQ(c.comm.size(), 1u);
  EXPECT_EQ(c.comm[0].label, "allreduce dp 2 x 4 mpi");
  EXPECT_EQ(c.comm[0].id_b, 7);
  ASSERT_EQ(c.comm[0].sizes.size(), 2u);
  EXPECT_DOUBLE_EQ(*c.comm[0].sizes[0].ratio, 1.0);
  EXPECT_FALSE(c.comm[0].sizes[0].significant);
  EXPECT_DOUBLE_EQ(*c.comm[0].sizes[1].ratio, 4.0);
  EXPECT_TRUE(c.comm[0].sizes[1].significant);
  EXPECT_DOUBLE_EQ(*c.comm[0].geomean_busbw_ratio, 2.0);
  EXPECT_EQ(c.comm_only_a, std::vector<std::string>{"allgather dp 2 x 4 mpi"});
}

}  // namespace
}  // namespace pipebench::bench
