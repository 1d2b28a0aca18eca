// Every schedule of the catalog, simulated over a grid of p, m, v and times, against its analytic
// figures wherever they claim to hold (exactly, 1e-9 relative). A schedule without a formula entry
// fails here, so a new generator cannot land without one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "analysis/catalog.hpp"
#include "analysis/error.hpp"
#include "analysis/formulas.hpp"
#include "analysis/simulate.hpp"

using namespace pipebench::analysis;

namespace {

struct Times {
  const char* what;
  double tf, tb, tw, t_overlap;
};

// Whole-share times (docs/design.md "Vocabulary"). The first is F = I = W per chunk; the others break that equality
// both ways, put W above F or I, and make an overlapped F&B pair cheaper than F + B (or even cheaper
// than its longer half), so that every condition of the schedules' figures (analysis/schedules/) is met somewhere and
// missed somewhere.
const Times kTimes[] = {
    {"F=1 B=2 W=1 (F=I=W)", 1, 2, 1, -1},
    {"F=1 B=3 W=1", 1, 3, 1, -1},
    {"F=3 B=2 W=0.5", 3, 2, 0.5, -1},
    {"F=1 B=2 W=1 F&B=2.4", 1, 2, 1, 2.4},
    {"F=1 B=4 W=2 (W>F)", 1, 4, 2, -1},
    {"F=2 B=3 W=2 (W>I)", 2, 3, 2, -1},
    {"F=2 B=3 W=1 F&B=3.5 (I=F)", 2, 3, 1, 3.5},
    {"F=1 B=2 W=0.5 F&B=1.8 (F&B<B)", 1, 2, 0.5, 1.8},
    {"F=1.3 B=2.1 W=0.4 F&B=2.9", 1.3, 2.1, 0.4, 2.9},
    {"F=1.7 B=2.3 W=0.9 F&B=3.1 (W<I<F)", 1.7, 2.3, 0.9, 3.1},
};

const int kP[] = {1, 2, 3, 4, 5, 6, 8, 16};
const int kM[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17, 24, 32, 64};
const int kV[] = {1, 2, 3, 4};

bool close(double a, double b, double scale) {
  return std::abs(a - b) <= 1e-9 * std::max({std::abs(a), std::abs(b), scale});
}

// How many comparisons were made per schedule, so a grid that silently checks nothing fails.
struct Checked {
  int configs = 0, makespan = 0, bubble = 0, idle = 0, peak = 0;
};

void compare(const Schedule& s, const ScheduleParams& sp, const Times& t, Checked& n) {
  const SimResult sim = simulate(s, uniform_costs(s, t.tf, t.tb, t.tw, t.t_overlap));
  FormulaParams q;
  q.schedule = s.name;
  q.p = s.p;
  q.m = s.m;
  q.v = s.v();
  q.group = sp.group;
  q.tf = t.tf;
  q.tb = t.tb;
  q.tw = t.tw;
  q.t_overlap = t.t_overlap;
  const AnalyticFigures a = analytic_figures(q);
  const Metrics& mt = sim.metrics;
  const double T = mt.makespan;
  const std::string where = s.name + " p=" + std::to_string(s.p) + " m=" + std::to_string(s.m) +
                            " v=" + std::to_string(s.v()) + " g=" + std::to_string(sp.group) + ", " + t.what;
  ++n.configs;
  if (a.makespan.value) {
    ++n.makespan;
    EXPECT_TRUE(close(T, *a.makespan.value, T)) << where << ": makespan " << T << ", formula " << a.makespan.formula
                                                << " = " << *a.makespan.value;
  }
  if (a.bubble_fraction.value) {
    ++n.bubble;
    EXPECT_TRUE(close(mt.bubble_fraction, *a.bubble_fraction.value, 1))
        << where << ": bubble " << mt.bubble_fraction << ", formula " << *a.bubble_fraction.value;
  }
  if (a.idle.value) {
    ++n.idle;
    const double want = *a.idle.value;
    switch (a.idle_measure) {
      case IdleMeasure::Idle:
        for (const auto& r : mt.ranks)
          EXPECT_TRUE(close(r.idle, want, T)) << where << ": rank " << r.rank << " idle " << r.idle << ", formula "
                                              << a.idle.formula << " = " << want;
        break;
      case IdleMeasure::MaxIdle:
        EXPECT_TRUE(close(mt.max_idle(), want, T))
            << where << ": max idle " << mt.max_idle() << ", formula " << a.idle.formula << " = " << want;
        break;
      case IdleMeasure::SpanBubble:
        for (const auto& r : mt.ranks)
          EXPECT_TRUE(close(r.span_bubble, want, T)) << where << ": rank " << r.rank << " span bubble " << r.span_bubble
                                                     << ", formula " << a.idle.formula << " = " << want;
        break;
      case IdleMeasure::MaxSpanBubble:
        EXPECT_TRUE(close(mt.max_span_bubble(), want, T)) << where << ": max span bubble " << mt.max_span_bubble()
                                                          << ", formula " << a.idle.formula << " = " << want;
        break;
    }
  }
  if (a.peak_inflight.value) {
    ++n.peak;
    const auto& want = *a.peak_inflight.value;
    ASSERT_EQ(want.size(), mt.ranks.size()) << where;
    for (const auto& r : mt.ranks)
      EXPECT_EQ(r.peak_inflight, want[r.rank]) << where << ": rank " << r.rank << " peak in-flight, formula "
                                               << a.peak_inflight.formula;
  }
}

}  // namespace

TEST(FormulaGrid, EveryCatalogScheduleHasAFormulaEntry) {
  for (const auto& info : schedule_catalog())
    EXPECT_TRUE(has_formula(info.name)) << "schedule '" << info.name
                                        << "' has a catalog row (analysis/catalog.cpp) without figures";
}

TEST(FormulaGrid, SimulationMatchesEveryFormulaWhereItHolds) {
  std::map<std::string, Checked> checked;
  for (const auto& info : schedule_catalog()) {
    if (!has_formula(info.name)) continue;  // reported by the test above
    Checked& n = checked[info.name];
    for (int p : kP)
      for (int m : kM)
        for (int v : kV)
          for (int group : {0, p + 1}) {
            const ScheduleParams sp{info.name, p, m, v, group};
            Schedule s;
            try {
              s = make_schedule(sp);
            } catch (const pipebench::UsageError&) {
              continue;  // a combination the schedule rejects
            }
            for (const auto& t : kTimes) compare(s, sp, t, n);
            if (::testing::Test::HasFatalFailure()) return;
          }
  }
  for (const auto& [name, n] : checked) {
    SCOPED_TRACE(name);
    EXPECT_GT(n.configs, 0) << "no configuration of the grid was accepted";
    EXPECT_GT(n.bubble, 0) << "the bubble formula never claimed to hold on the grid";
    EXPECT_GT(n.idle, 0) << "the idle formula never claimed to hold on the grid";
    EXPECT_GT(n.peak, 0) << "the peak in-flight formula never claimed to hold on the grid";
    std::cout << "[ figures  ] " << name << ": " << n.configs << " runs, checked makespan " << n.makespan
              << ", bubble " << n.bubble << ", idle " << n.idle << ", peak " << n.peak << '\n';
  }
}
