// ZB-H1 and ZB-H2 (Qi et al. 2023): the lists of the paper's Figure 3, equivalence with torch's
// zero-bubble generator for one stage per rank, idle/span/peak figures and where the paper's formulas
// hold, CSV round trips.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/catalog.hpp"
#include "analysis/csv.hpp"
#include "analysis/error.hpp"
#include "analysis/simulate.hpp"
#include "analysis/validate.hpp"

using namespace pipebench::analysis;

namespace {

// Per-chunk times of one forward, input backward and weight backward (v = 1, so chunk = rank share).
struct Fiw {
  double f, i, w;
};

Metrics run(const Schedule& s, const Fiw& t) { return simulate(s, uniform_costs(s, t.f, t.i + t.w, t.w)).metrics; }

// torch _get_1f1b_rank_ops with enable_zero_bubble for one stage per rank, as
// ScheduleInterleavedZeroBubble calls it: warm-up min(p-r-1, m) forwards, then per op F and I, and a W
// for the oldest I once op - warm-up >= r; cool-down I (and W likewise); then the remaining W.
// A reference model written from the Python source, compute actions only.
std::vector<std::vector<Action>> torch_zero_bubble_one_stage(int p, int m) {
  std::vector<std::vector<Action>> out(p);
  for (int r = 0; r < p; ++r) {
    auto& l = out[r];
    const int warm = std::min(p - r - 1, m);
    int f = 0, i = 0, w = 0;
    for (int op = 0; op < m + warm; ++op) {
      if (op < m) l.push_back(Action::make(Kind::F, r, f++));
      if (op < warm) continue;
      l.push_back(Action::make(Kind::I, r, i++));
      if (op - warm >= r) l.push_back(Action::make(Kind::W, r, w++));
    }
    while (w < i) l.push_back(Action::make(Kind::W, r, w++));
  }
  return out;
}

}  // namespace

TEST(GenZb, H1IsThePapersFigure3) {
  // Qi et al. 2023, Figure 3 top (p = 4, m = 8, 1-based there): device 1 runs F1..F4, then B1 W1 F5
  // B2 W2 F6 ... F8 B5 W5 ... B8 W8; device 4 runs F1 B1 ... F4 B4, then W1 F5 B5 W2 ... F8 B8 W5..W8.
  // The paper's B is pipebench's I.
  const Schedule s = make_schedule({"zb-h1", 4, 8});
  EXPECT_EQ(to_grid(s),
            "rank 0: 0F0 0F1 0F2 0F3 0I0 0W0 0F4 0I1 0W1 0F5 0I2 0W2 0F6 0I3 0W3 0F7 0I4 0W4 0I5 0W5 0I6 0W6 0I7 0W7\n"
            "rank 1: 1F0 1F1 1F2 1I0 1F3 1I1 1W0 1F4 1I2 1W1 1F5 1I3 1W2 1F6 1I4 1W3 1F7 1I5 1W4 1I6 1W5 1I7 1W6 1W7\n"
            "rank 2: 2F0 2F1 2I0 2F2 2I1 2F3 2I2 2W0 2F4 2I3 2W1 2F5 2I4 2W2 2F6 2I5 2W3 2F7 2I6 2W4 2I7 2W5 2W6 2W7\n"
            "rank 3: 3F0 3I0 3F1 3I1 3F2 3I2 3F3 3I3 3W0 3F4 3I4 3W1 3F5 3I5 3W2 3F6 3I6 3W3 3F7 3I7 3W4 3W5 3W6 3W7\n");
}

TEST(GenZb, H2IsThePapersFigure3) {
  // Figure 3 bottom: device 1 runs F1..F7, B1 W1 F8, then B2 W2 ... B8 W8; device 4 runs F1 B1 ... F7
  // B7, W1 F8 B8, then W2..W8: the tail is a parallelogram.
  const Schedule s = make_schedule({"zb-h2", 4, 8});
  EXPECT_EQ(to_grid(s),
            "rank 0: 0F0 0F1 0F2 0F3 0F4 0F5 0F6 0I0 0W0 0F7 0I1 0W1 0I2 0W2 0I3 0W3 0I4 0W4 0I5 0W5 0I6 0W6 0I7 0W7\n"
            "rank 1: 1F0 1F1 1F2 1F3 1F4 1I0 1F5 1I1 1F6 1I2 1W0 1F7 1I3 1W1 1I4 1W2 1I5 1W3 1I6 1W4 1I7 1W5 1W6 1W7\n"
            "rank 2: 2F0 2F1 2F2 2I0 2F3 2I1 2F4 2I2 2F5 2I3 2F6 2I4 2W0 2F7 2I5 2W1 2I6 2W2 2I7 2W3 2W4 2W5 2W6 2W7\n"
            "rank 3: 3F0 3I0 3F1 3I1 3F2 3I2 3F3 3I3 3F4 3I4 3F5 3I5 3F6 3I6 3W0 3F7 3I7 3W1 3W2 3W3 3W4 3W5 3W6 3W7\n");
}

TEST(GenZb, H1MatchesTorchZeroBubbleWithOneStagePerRank) {
  for (int p = 1; p <= 8; ++p)
    for (int m = 1; m <= 24; ++m)
      EXPECT_EQ(make_schedule({"zb-h1", p, m}).actions, torch_zero_bubble_one_stage(p, m)) << "p=" << p << " m=" << m;
}

TEST(GenZb, H1IdleSpanAndPeak) {
  // docs/formulas.md: idle (p-1)(F+B-2W) = (p-1)(F+I-W) on every rank, peak p. Holds for m >= p when
  // W <= F and W <= I; rank r's span bubble is (p-1-r) times the same step, as rank r starts r F late.
  const Fiw times[] = {{1, 1, 1}, {2, 1, 1}, {1, 2, 1}, {1, 1, 0.5}, {3, 2, 1}, {1, 1, 0}};
  for (int p = 1; p <= 8; ++p)
    for (int m = p; m <= 3 * p; ++m)
      for (const Fiw& t : times) {
        const Metrics mt = run(make_schedule({"zb-h1", p, m}), t);
        const double step = t.f + (t.i + t.w) - 2 * t.w;
        for (const RankMetrics& rm : mt.ranks) {
          EXPECT_NEAR(rm.idle, (p - 1) * step, 1e-9) << "p=" << p << " m=" << m << " rank " << rm.rank;
          EXPECT_NEAR(rm.span_bubble, (p - 1 - rm.rank) * step, 1e-9) << "p=" << p << " m=" << m;
          EXPECT_EQ(rm.peak_inflight, p);
        }
      }
  // W > F: the last rank cannot start before (p-1)F, so idle stays (p-1)F, above the formula's 0.
  EXPECT_NEAR(run(make_schedule({"zb-h1", 4, 8}), {1, 1, 2}).max_idle(), 3, 1e-12);
  // Fewer micro-batches than ranks: each rank holds all of them.
  for (const RankMetrics& rm : run(make_schedule({"zb-h1", 6, 4}), {1, 1, 1}).ranks) EXPECT_EQ(rm.peak_inflight, 4);
}

TEST(GenZb, H2SpanBubbleIsZeroWhenFIWEqual) {
  // docs/formulas.md's (p-1)(F+B-3W) is the span bubble of rank 0 (the paper's measure): rank r has
  // (p-1-r)(F+I-2W). Holds for m >= 2p-1 when W <= F and 2W <= F+I. The idle from the step start is
  // (p-1) max(F, F+I-2W): the last rank starts (p-1)F late in any one-stage-per-rank schedule.
  const Fiw times[] = {{1, 1, 1}, {2, 1, 1}, {1, 2, 1}, {1, 3, 1}, {1, 1, 0.5}, {3, 2, 1}, {2, 1, 1.5}};
  for (int p = 1; p <= 8; ++p)
    for (int m = 2 * p - 1; m <= 4 * p; ++m)
      for (const Fiw& t : times) {
        const Metrics mt = run(make_schedule({"zb-h2", p, m}), t);
        const double step = t.f + (t.i + t.w) - 3 * t.w;
        for (const RankMetrics& rm : mt.ranks) {
          EXPECT_NEAR(rm.span_bubble, (p - 1 - rm.rank) * step, 1e-9) << "p=" << p << " m=" << m;
          EXPECT_NEAR(rm.idle, (p - 1) * std::max(t.f, step), 1e-9) << "p=" << p << " m=" << m;
          EXPECT_EQ(rm.peak_inflight, 2 * p - 1);
        }
      }
  const Metrics eq = run(make_schedule({"zb-h2", 4, 12}), {1, 1, 1});
  EXPECT_DOUBLE_EQ(eq.max_span_bubble(), 0);
  EXPECT_DOUBLE_EQ(eq.makespan, 3 + 12 * 3);  // (p-1)F + m(F+I+W)
  for (const RankMetrics& rm : run(make_schedule({"zb-h2", 4, 5}), {1, 1, 1}).ranks) EXPECT_EQ(rm.peak_inflight, 5);
}

TEST(GenZb, OneStagePerRankOnly) {
  EXPECT_THROW(make_schedule({"zb-h1", 4, 8, 2}), pipebench::UsageError);
  EXPECT_THROW(make_schedule({"zb-h2", 4, 8, 2}), pipebench::UsageError);
  EXPECT_THROW(make_schedule({"zb-h2", 4, 8, 1, 4}), pipebench::UsageError);  // no group
  EXPECT_TRUE(schedule_row("zb-h1").split_backward);
  EXPECT_TRUE(schedule_row("zb-h2").fixed_v);
}

TEST(GenZb, CsvRoundTrip) {
  for (const char* name : {"zb-h1", "zb-h2"})
    for (int m : {2, 9}) {
      const Schedule s = make_schedule({name, 4, m});
      std::istringstream in(to_csv(s));
      const Schedule t = from_csv(in);
      EXPECT_EQ(t.m, m);
      EXPECT_EQ(t.stage_rank, s.stage_rank);
      EXPECT_EQ(t.actions, s.actions);
    }
}
