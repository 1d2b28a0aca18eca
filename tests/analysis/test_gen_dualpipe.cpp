// DualPipeV and DualPipe generators: DeepSeek's order, validity over the grid, bubble and memory.
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

// Per-chunk times: forward, input backward, weight backward, overlapped F&B pair.
struct Parts {
  double f, i, w, fb;
};

Metrics run(const Schedule& s, Parts t) {
  const double v = s.v();  // uniform_costs takes a rank's whole share
  return simulate(s, uniform_costs(s, t.f * v, (t.i + t.w) * v, t.w * v, t.fb * v)).metrics;
}

// m values for a schedule that needs m >= 2p (and even m when `even`): the smallest few and 64.
std::vector<int> some_m(int p, bool even) {
  std::vector<int> out;
  const int step = even ? 2 : 1;
  for (int m = 2 * p; m <= 2 * p + 6 * step && m <= 64; m += step) out.push_back(m);
  if (out.back() != 64) out.push_back(64);
  return out;
}

int count_pairs(const std::vector<Action>& list) {
  int n = 0;
  for (const auto& a : list) n += a.kind == Kind::FB;
  return n;
}

std::string message_of(const ScheduleParams& q) {
  try {
    make_schedule(q);
  } catch (const pipebench::UsageError& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

// Hand-derived from DualPipeV.step in deepseek-ai/DualPipe (dualpipe/dualpipev.py), num_ranks = 2,
// num_chunks = 4; torch ScheduleDualPipeV gives the same list. Rank 1 is the last rank: its first
// F0 and B1 are not overlapped.
TEST(GenDualPipe, DualPipeVMatchesReference) {
  EXPECT_EQ(to_grid(make_schedule({"dualpipev", 2, 4})),
            "rank 0: 0F0 0F1 0F2 3F0 3I0 3W0 3F1 (0F3;3B1) (3F2;0B0) 3B2 (3F3;0B1) 3B3 0I2 0W2 0I3 0W3\n"
            "rank 1: 1F0 2F0 1F1 2F1 1F2 2B0 (2F2;1B0) (1F3;2B1) (2F3;1B1) 2B2 1B2 2I3 1I3 2W3 1W3\n");
}

// Hand-derived from DualPipe.step in deepseek-ai/DualPipe (dualpipe/dualpipe.py), num_ranks = 4,
// num_chunks = 8: ranks 0-1 meet copy 0 (micro-batches 0-3) first, ranks 2-3 copy 1 (4-7); ranks 1 and
// 2 are the middle ranks.
TEST(GenDualPipe, DualPipeMatchesReference) {
  const Schedule s = make_schedule({"dualpipe", 4, 8});
  EXPECT_EQ(to_grid(s),
            "rank 0: 0F0 0F1 0F2 7F4 7I4 7W4 7F5 (0F3;7B5) (7F6;0B0) 7B6 (7F7;0B1) 7B7 0I2 0W2 0I3 0W3\n"
            "rank 1: 1F0 6F4 1F1 6F5 1F2 6B4 (6F6;1B0) (1F3;6B5) (6F7;1B1) 6B6 1B2 6I7 1I3 6W7 1W3\n"
            "rank 2: 5F4 2F0 5F5 2F1 5F6 2B0 (2F2;5B4) (5F7;2B1) (2F3;5B5) 2B2 5B6 2I3 5I7 2W3 5W7\n"
            "rank 3: 4F4 4F5 4F6 3F0 3I0 3W0 3F1 (4F7;3B1) (3F2;4B4) 3B2 (3F3;4B5) 3B3 4I6 4W6 4I7 4W7\n");
  EXPECT_EQ(s.pipes, 2);
  EXPECT_EQ(s.v(), 1);
  EXPECT_EQ(s.stage_rank, (std::vector<int>{0, 1, 2, 3, 3, 2, 1, 0}));
  EXPECT_EQ(s.pipe_of_mb(3), 0);
  EXPECT_EQ(s.pipe_of_mb(4), 1);
}

// The number of overlapped pairs on rank r follows from the reference's step counts (steps 4 and 5):
// DualPipeV 2m - 3p + r + 1, one fewer on the last rank; DualPipe the same with p/2 ranks per half,
// m/2 micro-batches per direction and h = min(r, p-1-r).
TEST(GenDualPipe, ValidOverTheGrid) {
  for (int p = 1; p <= 16; ++p) {
    for (int m = 2 * p; m <= 64; ++m) {
      const Schedule s = make_schedule({"dualpipev", p, m});
      ASSERT_NO_THROW(validate(s)) << "dualpipev p=" << p << " m=" << m;
      for (int r = 0; r < p; ++r)
        ASSERT_EQ(count_pairs(s.actions[r]), 2 * m - 3 * p + r + 1 - (r == p - 1)) << "p=" << p << " m=" << m;
    }
  }
  for (int p = 2; p <= 16; p += 2) {
    for (int m = 2 * p; m <= 64; m += 2) {
      const Schedule s = make_schedule({"dualpipe", p, m});
      ASSERT_NO_THROW(validate(s)) << "dualpipe p=" << p << " m=" << m;
      for (int r = 0; r < p; ++r) {
        const int h = std::min(r, p - 1 - r);
        ASSERT_EQ(count_pairs(s.actions[r]), m - 3 * p / 2 + h + 1 - (h == p / 2 - 1)) << "p=" << p << " m=" << m;
      }
    }
  }
}

// docs/formulas.md: max rank idle (P-1)(F&B + B - 3W), P = p for DualPipeV, p/2 for DualPipe, times per
// chunk. The simulator shows it exact when I = F and W <= I (with max(F, B) <= F&B <= F + B), for
// every m the schedules accept. More generally, for W <= I <= F the max idle is (P-1)(F&B + F - 2W),
// which is the same figure when I = F (then B = F + W).
TEST(GenDualPipe, MaxIdleFormula) {
  const Parts equal_fi[] = {{1, 1, 1, 3}, {1, 1, 0.5, 2}, {2, 2, 1, 4}, {1, 1, 0.25, 1.5}};
  const Parts smaller_i[] = {{2, 1, 0.5, 2.5}, {1, 0.5, 0.25, 1.25}};
  for (const char* name : {"dualpipev", "dualpipe"}) {
    const bool dual = std::string(name) == "dualpipe";
    for (int p = dual ? 2 : 1; p <= 16; p += dual ? 2 : 1) {
      const double k = dual ? p / 2 - 1 : p - 1;
      for (int m : some_m(p, dual)) {
        const Schedule s = make_schedule({name, p, m});
        for (const Parts& t : equal_fi)
          ASSERT_NEAR(run(s, t).max_idle(), k * (t.fb + (t.i + t.w) - 3 * t.w), 1e-9) << name << " p=" << p << " m=" << m;
        for (const Parts& t : smaller_i)
          ASSERT_NEAR(run(s, t).max_idle(), k * (t.fb + t.f - 2 * t.w), 1e-9) << name << " p=" << p << " m=" << m;
      }
    }
  }
}

TEST(GenDualPipe, MaxIdleFormulaFailsWhenInputBackwardExceedsForward) {
  // F = 1, I = 2, W = 1, F&B = 3.5: the formula says 3.5, the schedule idles 2.5 (simulated).
  EXPECT_NEAR(run(make_schedule({"dualpipev", 2, 4}), {1, 2, 1, 3.5}).max_idle(), 2.5, 1e-9);
  EXPECT_NEAR(run(make_schedule({"dualpipe", 4, 8}), {1, 2, 1, 3.5}).max_idle(), 2.5, 1e-9);
}

TEST(GenDualPipe, UnitTimeFigures) {
  // F = I = W = 1 per chunk and no overlap gain (F&B = 3): idle (P-1)(3 + 2 - 3) = 2(P-1).
  const Metrics v = run(make_schedule({"dualpipev", 4, 8}), {1, 1, 1, 3});
  EXPECT_DOUBLE_EQ(v.makespan, 54);  // busy 48 = 8 micro-batches x 2 chunks x (F + I + W) per rank
  EXPECT_DOUBLE_EQ(v.max_idle(), 6);
  const Metrics d = run(make_schedule({"dualpipe", 4, 8}), {1, 1, 1, 3});
  EXPECT_DOUBLE_EQ(d.makespan, 26);  // busy 24 = 8 micro-batches x 1 chunk x 3
  EXPECT_DOUBLE_EQ(d.max_idle(), 2);
  EXPECT_DOUBLE_EQ(run(make_schedule({"dualpipe", 2, 4}), {1, 1, 1, 3}).max_idle(), 0);
  // With overlap gain (F&B = 2.5) ranks differ: rank 0 has the fewest pairs, so the most busy time.
  const Metrics g = run(make_schedule({"dualpipev", 3, 6}), {1, 1, 1, 2.5});
  EXPECT_NEAR(g.makespan, 36.5, 1e-9);
  EXPECT_NEAR(g.ranks[0].idle, 2.5, 1e-9);
  EXPECT_NEAR(g.max_idle(), 3, 1e-9);  // (p-1)(F&B + B - 3W) = 2 (2.5 + 2 - 3)
}

// docs/formulas.md: DualPipeV 2p+1 chunks, DualPipe p+1 "in its own units", which are chunks too: a
// DualPipe chunk is 1/p of the model, the same unit as a 1F1B stage. Both hold it on every rank
// (the overlapped pair's forward counts before its backward releases).
TEST(GenDualPipe, PeakInFlightOnEveryRank) {
  for (int p = 1; p <= 16; ++p)
    for (int m : some_m(p, false))
      for (const auto& rm : run(make_schedule({"dualpipev", p, m}), {1, 1, 1, 3}).ranks)
        ASSERT_EQ(rm.peak_inflight, 2 * p + 1) << "dualpipev p=" << p << " m=" << m << " rank " << rm.rank;
  for (int p = 2; p <= 16; p += 2)
    for (int m : some_m(p, true))
      for (const auto& rm : run(make_schedule({"dualpipe", p, m}), {1, 1, 1, 3}).ranks)
        ASSERT_EQ(rm.peak_inflight, p + 1) << "dualpipe p=" << p << " m=" << m << " rank " << rm.rank;
}

TEST(GenDualPipe, RejectsWhatTheReferenceRejects) {
  const std::string few = message_of({"dualpipev", 4, 7});
  EXPECT_NE(few.find("m >= 2p = 8"), std::string::npos) << few;
  EXPECT_NE(few.find("m = 7"), std::string::npos) << few;
  EXPECT_NE(message_of({"dualpipe", 3, 12}).find("even p"), std::string::npos);
  EXPECT_NE(message_of({"dualpipe", 4, 9}).find("even m"), std::string::npos);
  EXPECT_NE(message_of({"dualpipe", 4, 6}).find("m >= 2p = 8"), std::string::npos);
  EXPECT_NE(message_of({"dualpipev", 4, 8, 1}).find("got v = 1"), std::string::npos);
  EXPECT_NE(message_of({"dualpipe", 4, 8, 2}).find("got v = 2"), std::string::npos);
  EXPECT_EQ(message_of({"dualpipev", 1, 2}), "accepted");
  EXPECT_EQ(message_of({"dualpipe", 2, 4}), "accepted");
}

TEST(GenDualPipe, CsvRoundTrip) {
  for (const ScheduleParams& q : {ScheduleParams{"dualpipev", 4, 9}, ScheduleParams{"dualpipe", 6, 14}}) {
    const Schedule s = make_schedule(q);
    std::istringstream in(to_csv(s));
    const Schedule t = from_csv(in, q.name);
    EXPECT_EQ(t.p, s.p);
    EXPECT_EQ(t.m, s.m);
    EXPECT_EQ(t.pipes, s.pipes);
    EXPECT_EQ(t.stage_rank, s.stage_rank);
    EXPECT_EQ(t.actions, s.actions);
    EXPECT_NO_THROW(validate(t));
  }
}
