#include <gtest/gtest.h>

#include <sstream>

#include "analysis/csv.hpp"
#include "analysis/error.hpp"
#include "analysis/generators.hpp"

using namespace pipebench::analysis;

TEST(Csv, RoundTripsGeneratedSchedules) {
  for (const char* name : {"gpipe", "1f1b"}) {
    const Schedule s = make_schedule({name, 4, 6});
    std::istringstream in(to_csv(s));
    const Schedule t = from_csv(in, name);
    EXPECT_EQ(t.p, s.p);
    EXPECT_EQ(t.m, s.m);
    EXPECT_EQ(t.stage_rank, s.stage_rank);
    EXPECT_EQ(t.actions, s.actions);
  }
}

TEST(Csv, PlainSchedulesHaveNoHeaderSoPyTorchCanLoadThem) {
  const std::string csv = to_csv(make_schedule({"1f1b", 2, 2}));
  EXPECT_EQ(csv, "0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n");
}

TEST(Csv, HeaderCarriesPipesAndMicroBatches) {
  std::istringstream in("# pipebench: pipes=2 m=4 name=mine\n0F0,0B0\r\n\n1F0, ,1B0\n");
  const Schedule s = from_csv(in);
  EXPECT_EQ(s.pipes, 2);
  EXPECT_EQ(s.m, 4);
  EXPECT_EQ(s.name, "mine");
  EXPECT_EQ(s.p, 3);  // the empty line is a rank with no actions; validate() reports it
  EXPECT_EQ(s.actions[2], (std::vector<Action>{Action::make(Kind::F, 1, 0), Action::make(Kind::B, 1, 0)}));
}

TEST(Csv, RejectsMalformedCellsWithLineAndCell) {
  std::istringstream in("0F0,0B0\n1F0,1X0\n");
  try {
    from_csv(in);
    FAIL() << "accepted a malformed cell";
  } catch (const pipebench::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2, cell 2: invalid action '1X0'"), std::string::npos) << e.what();
  }
}

TEST(Csv, RejectsStageOnTwoRanks) {
  std::istringstream in("0F0,0B0\n0F1,0B1\n");
  try {
    from_csv(in);
    FAIL();
  } catch (const pipebench::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("stage 0 appears on rank 0 and rank 1"), std::string::npos) << e.what();
  }
}

TEST(Csv, RejectsEmptyGappedAndUnreadable) {
  std::istringstream empty("");
  EXPECT_THROW(from_csv(empty), pipebench::UsageError);
  std::istringstream gap("0F0,0B0\n2F0,2B0\n");
  EXPECT_THROW(from_csv(gap), pipebench::UsageError);  // stage 1 missing
  std::istringstream bad_header("# pipebench: pipes=zero\n0F0,0B0\n");
  EXPECT_THROW(from_csv(bad_header), pipebench::UsageError);
  EXPECT_THROW(read_csv_file("/nonexistent/dir/schedule.csv"), pipebench::UsageError);
}
