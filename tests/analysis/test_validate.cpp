// The validator rejects each kind of broken schedule with the rank, step and rule, and accepts good ones.
#include <gtest/gtest.h>

#include <sstream>

#include "analysis/catalog.hpp"
#include "analysis/csv.hpp"
#include "analysis/validate.hpp"

using namespace pipebench::analysis;

namespace {

Schedule from_text(const std::string& csv) {
  std::istringstream in(csv);
  return from_csv(in, "test");
}

// Returns the validator's message, or "" if the schedule is valid.
std::string problem(const Schedule& s) {
  try {
    validate(s);
  } catch (const ScheduleError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Validate, AcceptsGeneratedGpipeAnd1F1B) {
  for (const char* name : {"gpipe", "1f1b"})
    for (int p = 1; p <= 8; ++p)
      for (int m = 1; m <= 12; ++m) EXPECT_EQ(problem(make_schedule({name, p, m})), "") << name << " p=" << p << " m=" << m;
}

TEST(Validate, AcceptsSplitBackwardAndOverlappedPairs) {
  EXPECT_EQ(problem(from_text("0F0,0F1,0I0,0W0,0I1,0W1\n1F0,1I0,1F1,1I1,1W1,1W0\n")), "");
  // Two stages on one rank in a V, with an overlapped pair: F of stage 0 mb 1 with B of stage 1 mb 0.
  EXPECT_EQ(problem(from_text("0F0,1F0,(0F1;1B0),1F1,1B1,0B1,0B0\n")), "");
}

TEST(Validate, RejectsMissingAction) {
  const std::string msg = problem(from_text("0F0,0F1,0B0\n1F0,1B0,1F1,1B1\n"));
  EXPECT_NE(msg.find("missing B (or I and W) of stage 0 (rank 0), micro-batch 1"), std::string::npos) << msg;
}

TEST(Validate, RejectsDuplicateWithBothPlaces) {
  const std::string msg = problem(from_text("0F0,0F0,0B0\n1F0,1B0\n"));
  EXPECT_NE(msg.find("rank 0, step 1 (0F0): duplicate F of stage 0, micro-batch 0 (first at rank 0, step 0)"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("[0F0]"), std::string::npos) << "grid window marks the cell: " << msg;
}

TEST(Validate, RejectsMixedFullAndSplitBackward) {
  // The CSV import reads a B followed by a W of the same stage and micro-batch as I (torch's older
  // zero-bubble CSVs), so the full B is put back by hand: the validator itself still rejects the mix.
  Schedule s = from_text("0F0,0B0,0W0\n1F0,1B0\n");
  s.actions[0][1] = Action::make(Kind::B, 0, 0);
  const std::string msg = problem(s);
  EXPECT_NE(msg.find("rank 0, step 2 (0W0): stage 0 (rank 0), micro-batch 0 has both a full B and a split W"),
            std::string::npos)
      << msg;
  // W before the B is not the old convention and stays a full B.
  EXPECT_NE(problem(from_text("0F0,0W0,0B0\n1F0,1B0\n")).find("has both a full B and a split W"), std::string::npos);
}

TEST(Validate, RejectsDependencyOnLaterActionOfSameRank) {
  // W before its I on the same rank can never run.
  const std::string msg = problem(from_text("0F0,0W0,0I0\n1F0,1B0\n"));
  EXPECT_NE(msg.find("rank 0, step 1 (0W0) waits for I/B of stage 0, micro-batch 0, which this rank runs later, at step 2"),
            std::string::npos)
      << msg;
}

TEST(Validate, RejectsCrossRankDeadlock) {
  // Rank 0 waits for mb 0's gradient before sending mb 1, which rank 1 needs first: a cycle.
  const std::string msg = problem(from_text("0F0,0B0,0F1,0B1\n1F0,1F1,1B0,1B1\n"));
  EXPECT_NE(msg.find("deadlock"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rank 0, step 1 (0B0) waits for I/B of stage 1, micro-batch 0, which rank 1 runs at step 2"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("also blocked: rank 1, step 1 (1F1) waits for F of stage 0, micro-batch 1"), std::string::npos) << msg;
}

TEST(Validate, RejectsStageOnWrongRankAndOutOfRange) {
  Schedule s = make_schedule({"gpipe", 2, 2});
  s.actions[0][1] = Action::make(Kind::F, 1, 1);  // stage 1 belongs to rank 1
  EXPECT_NE(problem(s).find("stage 1 is held by rank 1"), std::string::npos) << problem(s);
  s = make_schedule({"gpipe", 2, 2});
  s.actions[1][0] = Action::make(Kind::F, 1, 5);
  EXPECT_NE(problem(s).find("micro-batch 5 out of range 0..1"), std::string::npos) << problem(s);
}

TEST(Validate, RejectsMicroBatchOfTheOtherModelCopy) {
  // Two copies (DualPipe-style): stages 0-1 carry micro-batches 0-1, stages 2-3 carry 2-3.
  Schedule s;
  s.name = "test";
  s.p = 2;
  s.m = 4;
  s.pipes = 2;
  s.stage_rank = {0, 1, 1, 0};
  s.actions = {{Action::make(Kind::F, 0, 2)}, {}};
  EXPECT_NE(problem(s).find("micro-batch 2 belongs to model copy 1, stage 0 to copy 0"), std::string::npos) << problem(s);
}

TEST(Replay, UnitTimesGiveTheSeedFigures) {
  // The seed's unit-time check: F = 1, B = 2, p = 4, m = 4 -> step time 21 for GPipe and 1F1B.
  for (const char* name : {"gpipe", "1f1b"}) {
    const Schedule s = make_schedule({name, 4, 4});
    const auto tl = replay(s, [](int, const Action& a) { return a.kind == Kind::F ? 1.0 : 2.0; });
    double end = 0;
    for (const auto& op : tl) end = std::max(end, op.end);
    EXPECT_DOUBLE_EQ(end, 21.0) << name;
    EXPECT_EQ(tl.size(), s.num_actions());
  }
}

TEST(Replay, CrossRankInputsPayThePointToPointCost) {
  const Schedule s = make_schedule({"gpipe", 2, 1});
  const auto tl = replay(s, [](int, const Action&) { return 1.0; }, 0.5);
  // 0F0 [0,1], 1F0 [1.5,2.5], 1B0 [2.5,3.5], 0B0 [4,5]
  double end = 0;
  for (const auto& op : tl) end = std::max(end, op.end);
  EXPECT_DOUBLE_EQ(end, 5.0);
}

TEST(Replay, GapSeparatesConsecutiveActionsOfARank) {
  const Schedule s = make_schedule({"gpipe", 2, 1});
  // 0F0 [0,1]; 1F0 [1,2]; 1B0 after the gap [2.25,3.25]; 0B0 [3.25,4.25] (rank 0 was free at 1.25).
  const auto tl = replay(s, [](int, const Action&) { return 1.0; }, 0, 0.25);
  double end = 0;
  for (const auto& op : tl) end = std::max(end, op.end);
  EXPECT_DOUBLE_EQ(end, 4.25);
}
