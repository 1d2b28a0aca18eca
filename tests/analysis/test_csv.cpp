#include <gtest/gtest.h>

#include <sstream>

#include "analysis/catalog.hpp"
#include "analysis/csv.hpp"
#include "analysis/error.hpp"
#include "analysis/validate.hpp"

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

// torch's `_Action.from_str` reads `(0F7;7B3)OVERLAP_F_B` and refuses `(0F7;7B3)` (no computation type
// after the parentheses), and its `_dump_csv` writes the former: so does to_csv, and the text comes back.
TEST(Csv, OverlappedPairsCarryTorchsOverlapSuffixAndRoundTrip) {
  for (const char* name : {"dualpipe", "dualpipev"}) {
    const Schedule s = make_schedule({name, 4, 8});
    const std::string csv = to_csv(s);
    std::size_t pairs = 0;
    for (const auto& row : s.actions)
      for (const auto& a : row)
        if (a.kind == Kind::FB) {
          ++pairs;
          EXPECT_NE(csv.find(to_string(a) + "OVERLAP_F_B"), std::string::npos) << name << ": " << to_string(a);
        }
    ASSERT_GT(pairs, 0u) << name;
    std::size_t suffixes = 0;
    for (auto at = csv.find(")OVERLAP_F_B"); at != std::string::npos; at = csv.find(")OVERLAP_F_B", at + 1)) ++suffixes;
    EXPECT_EQ(suffixes, pairs) << name;
    std::istringstream in(csv);
    CsvImportNotes notes;
    const Schedule t = from_csv(in, name, &notes);
    EXPECT_EQ(notes.b_read_as_i, 0) << name;
    EXPECT_EQ(t.pipes, s.pipes);
    EXPECT_EQ(t.m, s.m);
    EXPECT_EQ(t.stage_rank, s.stage_rank);
    EXPECT_EQ(t.actions, s.actions) << name;
    EXPECT_NO_THROW(validate(t)) << name;
  }
}

// torch's older zero-bubble CSVs wrote I as B: a B that a W of the same stage and micro-batch follows
// is read as I, and counted for the warning.
TEST(Csv, OldZeroBubbleBFollowedByWIsReadAsI) {
  const Schedule t = read_csv_file(std::string(PIPEBENCH_TEST_DATA) + "/import_zb_old.csv");
  CsvImportNotes notes;
  const Schedule s = read_csv_file(std::string(PIPEBENCH_TEST_DATA) + "/import_zb_old.csv", &notes);
  EXPECT_EQ(notes.b_read_as_i, 12);
  EXPECT_EQ(s.actions, make_schedule({"zb-h1", 3, 4}).actions);
  EXPECT_EQ(t.actions, s.actions);  // read the same way without notes
  EXPECT_NO_THROW(validate(s));
}

TEST(Csv, BWithoutALaterWStaysB) {
  // 0B0 has no W of (0, 0) after it (the W comes first); 0B1 has no W at all; 0B2 is followed by 0W2.
  std::istringstream in("0F0,0F1,0F2,0W0,0B0,0B1,0B2,0W2\n");
  CsvImportNotes notes;
  const Schedule s = from_csv(in, "t", &notes);
  EXPECT_EQ(notes.b_read_as_i, 1);
  EXPECT_EQ(s.actions[0][4], Action::make(Kind::B, 0, 0));
  EXPECT_EQ(s.actions[0][5], Action::make(Kind::B, 0, 1));
  EXPECT_EQ(s.actions[0][6], Action::make(Kind::I, 0, 2));
  EXPECT_EQ(s.actions[0][7], Action::make(Kind::W, 0, 2));
  // A modern CSV with every backward full is read as written.
  std::istringstream plain(to_csv(make_schedule({"1f1b", 3, 5})));
  CsvImportNotes none;
  EXPECT_EQ(from_csv(plain, "p", &none).actions, make_schedule({"1f1b", 3, 5}).actions);
  EXPECT_EQ(none.b_read_as_i, 0);
}
