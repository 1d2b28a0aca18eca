#include <gtest/gtest.h>

#include "analysis/error.hpp"
#include "analysis/schedule.hpp"

using namespace pipebench::analysis;

TEST(ActionText, RoundTripsSimpleAndOverlapped) {
  for (const char* t : {"3F0", "7I2", "0W5", "12B103", "(0F7;7B3)"}) EXPECT_EQ(to_string(parse_action(t)), t) << t;
  const Action a = parse_action("(0F7;7B3)");
  EXPECT_EQ(a.kind, Kind::FB);
  EXPECT_EQ(a.stage, 0);
  EXPECT_EQ(a.mb, 7);
  EXPECT_EQ(a.b_stage, 7);
  EXPECT_EQ(a.b_mb, 3);
  EXPECT_EQ(parse_action(" 2W4 "), Action::make(Kind::W, 2, 4));
  EXPECT_EQ(parse_action("(0F7;7B3)OVERLAP_F_B"), a);  // as torch's _dump_csv writes it
}

TEST(ActionText, RejectsMalformed) {
  for (const char* t : {"", "F0", "3F", "3X0", "-1F0", "3F0x", "(0F7)", "(0B7;7F3)", "(0F7;7I3)", "3 F0", "3F0OVERLAP_F_B"})
    EXPECT_THROW(parse_action(t), pipebench::UsageError) << "'" << t << "'";
}

TEST(Schedule, ChunkAndPipeArithmetic) {
  Schedule s;
  s.p = 2;
  s.m = 4;
  s.stage_rank = {0, 1, 1, 0};  // V shape: rank 0 holds stages 0 and 3
  EXPECT_EQ(s.v(), 2);
  EXPECT_EQ(s.chunk_of_stage(3), 1);
  EXPECT_EQ(s.chunk_of_stage(1), 0);
  EXPECT_EQ(s.stages_of_rank(0), (std::vector<int>{0, 3}));
  s.pipes = 2;  // DualPipe-style: two chains of 2 stages, micro-batches 0-1 and 2-3
  EXPECT_EQ(s.v(), 1);
  EXPECT_EQ(s.pipe_of_stage(2), 1);
  EXPECT_TRUE(s.is_first_stage(2));
  EXPECT_EQ(s.pipe_of_mb(3), 1);
}
