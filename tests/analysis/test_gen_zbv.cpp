// ZB-V generator: torch's order, validity over the whole grid, zero span bubble, in-flight counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "analysis/catalog.hpp"
#include "analysis/csv.hpp"
#include "analysis/error.hpp"
#include "analysis/simulate.hpp"
#include "analysis/validate.hpp"

using namespace pipebench::analysis;

namespace {

// Chunk times F = I = W = 1: a rank's whole share (v = 2) is tf = 2, tb = 4, tw = 2.
SimResult equal_parts(const Schedule& s) { return simulate(s, uniform_costs(s, 2, 4, 2)); }

}  // namespace

// Hand-derived from torch ScheduleZBVZeroBubble._calculate_single_rank_operations (pytorch/pytorch
// torch/distributed/pipelining/schedules.py) with pp_group_size = 2, n_microbatches = 4, leaving out
// the idle slot torch puts at the start of rank 1.
TEST(GenZbv, MatchesTorchOrder) {
  EXPECT_EQ(to_grid(make_schedule({"zbv", 2, 4})),
            "rank 0: 0F0 0F1 0F2 3F0 3I0 3W0 3F1 3I1 3W1 0F3 0I0 0W0 3F2 3I2 3W2 0I1 0W1 3F3 3I3 3W3 0I2 0W2 0I3 0W3\n"
            "rank 1: 1F0 2F0 1F1 2F1 2I0 2W0 1F2 1I0 1W0 2F2 2I1 2W1 1F3 1I1 1W1 2F3 2I2 2W2 1I2 2I3 1I3 1W2 2W3 1W3\n");
}

// torch builds the order for max(2p-1, m) micro-batches and blanks the actions of the ones that do
// not exist; here they are left out. Same reference, p = 2, m = 1.
TEST(GenZbv, FewerMicroBatchesThanRanksDropTheMissingOnes) {
  EXPECT_EQ(to_grid(make_schedule({"zbv", 2, 1})),
            "rank 0: 0F0 3F0 3I0 3W0 0I0 0W0\n"
            "rank 1: 1F0 2F0 2I0 2W0 1I0 1W0\n");
}

TEST(GenZbv, VLayoutWithTwoChunks) {
  const Schedule s = make_schedule({"zbv", 4, 8});
  EXPECT_EQ(s.stage_rank, (std::vector<int>{0, 1, 2, 3, 3, 2, 1, 0}));
  EXPECT_EQ(s.v(), 2);
  EXPECT_EQ(s.pipes, 1);
  EXPECT_TRUE(schedule_row("zbv").split_backward);
  EXPECT_EQ(make_schedule({"zbv", 4, 8, 2}).actions, s.actions);  // v = 2 may be given explicitly
}

TEST(GenZbv, ValidOverTheWholeGrid) {
  for (int p = 1; p <= 16; ++p) {
    for (int m = 1; m <= 64; ++m) {
      const Schedule s = make_schedule({"zbv", p, m});
      ASSERT_NO_THROW(validate(s)) << "p=" << p << " m=" << m;
      // One F, I and W per micro-batch on each of a rank's two chunks, and no B.
      for (int r = 0; r < p; ++r) {
        ASSERT_EQ(s.actions[r].size(), static_cast<std::size_t>(6 * m)) << "p=" << p << " m=" << m << " r=" << r;
        ASSERT_TRUE(std::none_of(s.actions[r].begin(), s.actions[r].end(), [](const Action& a) { return a.kind == Kind::B; }));
      }
    }
  }
}

// docs/formulas.md: zero span bubble when F = I = W per chunk and m >= 2p. It holds from m = 2p-1 on
// (the count torch builds the order for at least). Every rank then starts at
// (rank) F and ends (p-1-rank) F before the end: idle p-1 chunk forwards, makespan 6m + p - 1.
TEST(GenZbv, ZeroSpanBubbleWhenPartsAreEqual) {
  for (int p = 1; p <= 16; ++p) {
    for (int m = 2 * p - 1; m <= 64; ++m) {
      const Metrics r = equal_parts(make_schedule({"zbv", p, m})).metrics;
      ASSERT_DOUBLE_EQ(r.makespan, 6.0 * m + p - 1) << "p=" << p << " m=" << m;
      for (const auto& rm : r.ranks) {
        ASSERT_DOUBLE_EQ(rm.span_bubble, 0) << "p=" << p << " m=" << m << " rank " << rm.rank;
        ASSERT_DOUBLE_EQ(rm.idle, p - 1) << "p=" << p << " m=" << m << " rank " << rm.rank;
      }
    }
  }
}

TEST(GenZbv, SpanBubbleBelowTwoPMinusOneMicroBatches) {
  // p = 4, m = 6 (simulated): rank 0 idles for 2 chunk forwards inside its span, rank 3 not at all.
  const Metrics r = equal_parts(make_schedule({"zbv", 4, 6})).metrics;
  EXPECT_DOUBLE_EQ(r.ranks[0].span_bubble, 2);
  EXPECT_DOUBLE_EQ(r.ranks[3].span_bubble, 0);
  EXPECT_DOUBLE_EQ(r.makespan, 39);
}

// Rank r runs 2p-1-r forwards of chunk 0 and r+1 of chunk 1 before its first W frees anything, so it
// holds min(m, 2p-1-r) + min(m, r+1) chunks: 2p (= p full-stage micro-batches) once m >= 2p-1.
TEST(GenZbv, PeakInFlightPerRank) {
  for (int p = 1; p <= 16; ++p) {
    for (int m = 1; m <= 64; ++m) {
      const Metrics r = equal_parts(make_schedule({"zbv", p, m})).metrics;
      for (const auto& rm : r.ranks) {
        const int expected = std::min(m, 2 * p - 1 - rm.rank) + std::min(m, rm.rank + 1);
        ASSERT_EQ(rm.peak_inflight, expected) << "p=" << p << " m=" << m << " rank " << rm.rank;
        if (m >= 2 * p - 1) {
          ASSERT_EQ(rm.peak_inflight, 2 * p);
        }
      }
    }
  }
}

TEST(GenZbv, RejectsOtherChunkCounts) {
  try {
    make_schedule({"zbv", 4, 8, 3});
    FAIL() << "v = 3 accepted";
  } catch (const pipebench::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("v = 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("got v = 3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(make_schedule({"zbv", 4, 8, 1}), pipebench::UsageError);
}

TEST(GenZbv, CsvRoundTrip) {
  for (const auto& [p, m] : {std::pair{4, 8}, {3, 2}, {1, 5}}) {
    const Schedule s = make_schedule({"zbv", p, m});
    std::istringstream in(to_csv(s));
    const Schedule t = from_csv(in, "zbv");
    EXPECT_EQ(t.p, s.p);
    EXPECT_EQ(t.m, s.m);
    EXPECT_EQ(t.pipes, 1);
    EXPECT_EQ(t.stage_rank, s.stage_rank);
    EXPECT_EQ(t.actions, s.actions);
  }
}
