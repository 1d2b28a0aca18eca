// The analytic figures on hand-computed cases (REFERENCE.md) and the conditions that withhold them.
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
  // REFERENCE.md: F=1, B=2: p=4, m=4 -> 21, 42.9 %; p=8, m=64 -> 213, 9.9 %; stage 0 holds 64 / 8.
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
  // ZB-H1 with F=1, B=3, W=1: idle (p-1)(F+B-2W) = 3 * 2 = 6 for p=4.
  const auto h1 = analytic_figures(params("zb-h1", 4, 8, 1, 1, 3, 1));
  EXPECT_DOUBLE_EQ(*h1.idle.value, 6);
  EXPECT_DOUBLE_EQ(*h1.makespan.value, 8 * 4 + 6);
  // ZB-H2 is zero-bubble only at F = I = W; elsewhere it claims nothing and says why.
  const auto h2 = analytic_figures(params("zb-h2", 4, 8));
  EXPECT_DOUBLE_EQ(*h2.idle.value, 0);
  EXPECT_DOUBLE_EQ(*h2.bubble_fraction.value, 0);
  const auto h2b = analytic_figures(params("zb-h2", 4, 8, 1, 1, 3, 1));
  EXPECT_FALSE(h2b.bubble_fraction.value);
  EXPECT_NE(h2b.bubble_fraction.reason.find("F = I = W"), std::string::npos) << h2b.bubble_fraction.reason;
  // ZB-V: span bubble 0 needs m >= 2p.
  const auto v = analytic_figures(params("zbv", 4, 7, 2));
  EXPECT_EQ(v.idle_measure, IdleMeasure::SpanBubble);
  EXPECT_FALSE(v.idle.value);
  EXPECT_NE(v.idle.reason.find("m >= 2p"), std::string::npos) << v.idle.reason;
  EXPECT_DOUBLE_EQ(*analytic_figures(params("zbv", 4, 8, 2)).idle.value, 0);
}

TEST(Formulas, DualPipeFiguresUseTheOverlappedPairTime) {
  // DualPipeV, p=4, v=2, tf=1, tb=2, tw=1: per chunk F=0.5, B=1, W=0.5, F&B = 1.5;
  // max idle (p-1)(F&B + B - 3W) = 3 * 1 = 3.
  auto q = params("dualpipev", 4, 8, 2);
  const auto a = analytic_figures(q);
  EXPECT_EQ(a.idle_measure, IdleMeasure::MaxIdle);
  EXPECT_DOUBLE_EQ(*a.idle.value, 3);
  // A cheaper pair lowers the idle, but then the busy time differs between ranks: no makespan claim.
  q.t_overlap = 2.4;  // F&B = 1.2 per chunk
  const auto b = analytic_figures(q);
  EXPECT_NEAR(*b.idle.value, 3 * 0.7, 1e-12);
  EXPECT_FALSE(b.makespan.value);
  EXPECT_FALSE(b.bubble_fraction.value);
  // DualPipe: (p/2-1)(F&B + B - 3W) with whole-stage chunks: p=4: 1 * (3 + 2 - 3) = 2.
  EXPECT_DOUBLE_EQ(*analytic_figures(params("dualpipe", 4, 8)).idle.value, 2);
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
