// The analytic figures on hand-computed cases (docs/formulas.md) and the conditions that withhold them.
#include <gtest/gtest.h>

#include "analysis/error.hpp"
#include "analysis/formulas.hpp"

using namespace pipebench::analysis;

namespace {
FormulaParams params(const char* name, int p, int m, int v = 1, double tf = 1, double tb = 2, double tw = 1) {
  FormulaParams q;
  q.schedule = name;
  q.p = p;
  q.m = m;
  q.v = v;
  q.tf = tf;
  q.tb = tb;
  q.tw = tw;
  return q;
}
}  // namespace

TEST(Formulas, GPipeAnd1F1BSeedFigures) {
  // docs/formulas.md: F=1, B=2: p=4, m=4 -> 21, 42.9 %; p=8, m=64 -> 213, 9.9 %; stage 0 holds 64 / 8.
  for (const char* name : {"gpipe", "1f1b"}) {
    const auto a = analytic_figures(params(name, 4, 4));
    EXPECT_DOUBLE_EQ(*a.makespan.value, 21);
    EXPECT_DOUBLE_EQ(*a.bubble_fraction.value, 3.0 / 7.0);
    EXPECT_DOUBLE_EQ(*a.idle.value, 9);
    EXPECT_EQ(a.idle_measure, IdleMeasure::Idle);
    const auto b = analytic_figures(params(name, 8, 64));
    EXPECT_DOUBLE_EQ(*b.makespan.value, 213);
    EXPECT_DOUBLE_EQ(*b.bubble_fraction.value, 7.0 / 71.0);
  }
  EXPECT_EQ(*analytic_figures(params("gpipe", 8, 64)).peak_inflight.value, std::vector<int>(8, 64));
  EXPECT_EQ(*analytic_figures(params("1f1b", 8, 64)).peak_inflight.value, (std::vector<int>{8, 7, 6, 5, 4, 3, 2, 1}));
  EXPECT_EQ(*analytic_figures(params("1f1b", 4, 2)).peak_inflight.value, (std::vector<int>{2, 2, 2, 1}));
}

TEST(Formulas, InterleavedUsesChunkTimesAndGroupSize) {
  // p=4, v=2, tf=1, tb=2: chunk F+B = 1.5, idle (p-1)*1.5 = 4.5; T = m(tf+tb) + 4.5 = 28.5 for m=8.
  auto q = params("interleaved", 4, 8, 2);
  auto a = analytic_figures(q);
  EXPECT_DOUBLE_EQ(*a.idle.value, 4.5);
  EXPECT_DOUBLE_EQ(*a.makespan.value, 28.5);
  EXPECT_DOUBLE_EQ(*a.bubble_fraction.value, 4.5 / 28.5);
  // Peak 2(p-r-1) + (v-1)g + 1 with g = p = 4: 11, 9, 7, 5 chunks; capped at m*v = 16.
  EXPECT_EQ(*a.peak_inflight.value, (std::vector<int>{11, 9, 7, 5}));
  q.group = 8;
  EXPECT_EQ(*analytic_figures(q).peak_inflight.value, (std::vector<int>{15, 13, 11, 9}));
  q.m = 4;
  q.group = 4;
  q.v = 4;  // 6 + 12 + 1 = 19 > m*v = 16
  EXPECT_EQ(analytic_figures(q).peak_inflight.value->front(), 16);
  // v = 1 is 1F1B.
  EXPECT_EQ(*analytic_figures(params("interleaved", 4, 8, 1)).peak_inflight.value, (std::vector<int>{4, 3, 2, 1}));
}

TEST(Formulas, ZeroBubbleFiguresAndTheirConditions) {
  // ZB-H1 with F=1, B=3, W=1: idle (p-1)(F+B-2W) = 3 * 2 = 6 for p=4; W > F withholds it.
  const auto h1 = analytic_figures(params("zb-h1", 4, 8, 1, 1, 3, 1));
  EXPECT_DOUBLE_EQ(*h1.idle.value, 6);
  EXPECT_DOUBLE_EQ(*h1.makespan.value, 8 * 4 + 6);
  const auto h1w = analytic_figures(params("zb-h1", 4, 8, 1, 1, 4, 2));
  EXPECT_FALSE(h1w.idle.value);
  EXPECT_NE(h1w.idle.reason.find("W <= F"), std::string::npos) << h1w.idle.reason;
  // ZB-H2 at F = I = W: the paper's span bubble (p-1)(F+B-3W) = 0 on rank 0, but the last rank
  // still starts p-1 forwards late: T = m(tf+tb) + (p-1)F = 24 + 3.
  const auto h2 = analytic_figures(params("zb-h2", 4, 8));
  EXPECT_EQ(h2.idle_measure, IdleMeasure::MaxSpanBubble);
  EXPECT_DOUBLE_EQ(*h2.idle.value, 0);
  EXPECT_DOUBLE_EQ(*h2.makespan.value, 27);
  EXPECT_DOUBLE_EQ(*h2.bubble_fraction.value, 3.0 / 27);
  // F=1, I=2, W=1: span bubble (p-1)(F+B-3W) = 3, idle (p-1)max(F, F+B-3W) = 3.
  const auto h2i = analytic_figures(params("zb-h2", 4, 8, 1, 1, 3, 1));
  EXPECT_DOUBLE_EQ(*h2i.idle.value, 3);
  EXPECT_DOUBLE_EQ(*h2i.makespan.value, 35);
  const auto h2w = analytic_figures(params("zb-h2", 4, 8, 1, 1, 4, 2));  // W > F
  EXPECT_FALSE(h2w.bubble_fraction.value);
  EXPECT_NE(h2w.bubble_fraction.reason.find("W <= F"), std::string::npos) << h2w.bubble_fraction.reason;
  EXPECT_NE(analytic_figures(params("zb-h2", 4, 6)).idle.reason.find("m >= 2p-1"), std::string::npos);
  // ZB-V: span bubble 0 needs m >= 2p-1 and F = I = W.
  const auto v = analytic_figures(params("zbv", 4, 6, 2));
  EXPECT_EQ(v.idle_measure, IdleMeasure::SpanBubble);
  EXPECT_FALSE(v.idle.value);
  EXPECT_NE(v.idle.reason.find("m >= 2p-1"), std::string::npos) << v.idle.reason;
  EXPECT_NE(analytic_figures(params("zbv", 4, 8, 2, 1, 3, 1)).idle.reason.find("F = I = W"), std::string::npos);
  const auto v7 = analytic_figures(params("zbv", 4, 7, 2));
  EXPECT_DOUBLE_EQ(*v7.idle.value, 0);
  EXPECT_DOUBLE_EQ(*v7.makespan.value, 7 * 3 + 3 * 0.5);
  // Peak min(m, 2p-1-r) + min(m, r+1): 2p = 8 on every rank once m >= 2p-1; fewer below.
  EXPECT_EQ(*v7.peak_inflight.value, std::vector<int>(4, 8));
  EXPECT_EQ(*analytic_figures(params("zbv", 4, 2, 2)).peak_inflight.value, (std::vector<int>{3, 4, 4, 4}));
}

TEST(Formulas, DualPipeFiguresUseTheOverlappedPairTime) {
  // DualPipeV, p=4, v=2, tf=1, tb=2, tw=1: per chunk F=0.5, B=1, W=0.5, F&B = 1.5;
  // max idle (p-1)(F&B + B - 3W) = 3 * 1 = 3; T = m(tf+tb) + 3 = 27.
  auto q = params("dualpipev", 4, 8, 2);
  const auto a = analytic_figures(q);
  EXPECT_EQ(a.idle_measure, IdleMeasure::MaxIdle);
  EXPECT_DOUBLE_EQ(*a.idle.value, 3);
  EXPECT_DOUBLE_EQ(*a.makespan.value, 27);
  EXPECT_EQ(a.idle.formula, "(p-1)(F&B+B-3W)");
  // A cheaper pair (F&B = 1.2 per chunk) lowers the idle to 3 * 0.7; the least busy ranks run
  // 2m-2p-1 = 7 pairs, each 0.3 shorter: T = 24 - 2.1 + 2.1 = 24.
  q.t_overlap = 2.4;
  const auto b = analytic_figures(q);
  EXPECT_NEAR(*b.idle.value, 2.1, 1e-12);
  EXPECT_NEAR(*b.makespan.value, 24, 1e-12);
  // A pair faster than its longer half, or I > F, is outside what the formula covers.
  q.t_overlap = 1.8;  // F&B = 0.9 < B = 1
  EXPECT_NE(analytic_figures(q).idle.reason.find("max(F,B) <= F&B"), std::string::npos);
  EXPECT_NE(analytic_figures(params("dualpipev", 4, 8, 2, 1, 3, 1)).idle.reason.find("W <= I <= F"), std::string::npos);
  // DualPipe: (p/2-1)(F&B + B - 3W) with whole-stage chunks: p=4: 1 * (3 + 2 - 3) = 2.
  EXPECT_DOUBLE_EQ(*analytic_figures(params("dualpipe", 4, 8)).idle.value, 2);
  EXPECT_EQ(*analytic_figures(params("dualpipe", 4, 8)).peak_inflight.value, std::vector<int>(4, 5));
}

TEST(Formulas, NonUniformStagesAndTransfersWithholdTimesButNotMemory) {
  auto q = params("1f1b", 4, 8);
  q.uniform_stages = false;
  auto a = analytic_figures(q);
  EXPECT_FALSE(a.makespan.value);
  EXPECT_FALSE(a.bubble_fraction.value);
  EXPECT_NE(a.bubble_fraction.reason.find("not uniform"), std::string::npos);
  EXPECT_TRUE(a.peak_inflight.value);  // the order alone fixes the peak
  q.uniform_stages = true;
  q.p2p = 0.1;
  a = analytic_figures(q);
  EXPECT_FALSE(a.idle.value);
  EXPECT_NE(a.idle.reason.find("p2p"), std::string::npos);
}

TEST(Formulas, UnknownScheduleHasNoFiguresAndSaysSo) {
  EXPECT_FALSE(has_formula("imported"));
  const auto a = analytic_figures(params("imported", 2, 2));
  EXPECT_FALSE(a.bubble_fraction.value);
  EXPECT_FALSE(a.peak_inflight.value);
  EXPECT_NE(a.bubble_fraction.reason.find("no analytic formula"), std::string::npos);
  EXPECT_TRUE(has_formula("gpipe"));
}

TEST(Formulas, RejectsBadParameters) {
  EXPECT_THROW(analytic_figures(params("1f1b", 0, 4)), pipebench::UsageError);
  EXPECT_THROW(analytic_figures(params("1f1b", 4, 0)), pipebench::UsageError);
  EXPECT_THROW(analytic_figures(params("1f1b", 4, 4, 0)), pipebench::UsageError);
  EXPECT_THROW(analytic_figures(params("1f1b", 4, 4, 1, -1)), pipebench::UsageError);
  EXPECT_THROW(analytic_figures(params("1f1b", 4, 4, 1, 1, 2, 2)), pipebench::UsageError);  // tw must be < tb
}
