// Issue 8 items 3 and 4: every size in a schedule CSV and every generated size is checked against
// analysis/limits.hpp before anything of that size is allocated, and zbv is built in linear time.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "analysis/catalog.hpp"
#include "analysis/csv.hpp"
#include "analysis/error.hpp"
#include "analysis/limits.hpp"

using namespace pipebench::analysis;

namespace {

// The UsageError message of reading `text` as a schedule CSV ("" when it is accepted).
std::string csv_error(const std::string& text) {
  std::istringstream in(text);
  try {
    from_csv(in, "t");
  } catch (const pipebench::UsageError& e) {
    return e.what();
  }
  return "";
}

std::string temp_dir() {
  const auto dir = std::filesystem::temp_directory_path() / ("pipebench_limits_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace

TEST(CsvLimits, MicroBatchBeyondTheLimitIsRefusedBeforeAllocating) {
  // 24 bytes that used to make a schedule of m = 200000001 (9.4 GB at the peak).
  const std::string e = csv_error("0F200000000,0B200000000\n");
  EXPECT_NE(e.find("line 1, cell 1: micro-batch 200000000 is not allowed: at most 16777215"), std::string::npos) << e;
}

TEST(CsvLimits, StageNear2To31IsAUsageErrorNotALengthError) {
  const std::string e = csv_error("2147483647F0\n");
  EXPECT_NE(e.find("stage 2147483647 is not allowed: at most 16777215"), std::string::npos) << e;
  const std::string fb = csv_error("(0F0;2147483647B0)\n");
  EXPECT_NE(fb.find("stage 2147483647 is not allowed"), std::string::npos) << fb;
}

TEST(CsvLimits, MicroBatch2To31Minus1DoesNotOverflowM) {
  const std::string e = csv_error("0F2147483647\n");
  EXPECT_NE(e.find("micro-batch 2147483647 is not allowed"), std::string::npos) << e;
  EXPECT_EQ(e.find("-2147483648"), std::string::npos) << e;
}

TEST(CsvLimits, HeaderNumbersAreBounded) {
  const std::string m = csv_error("# pipebench: m=2000000000\n0F0,0B0\n");
  EXPECT_NE(m.find("m='2000000000' is not allowed: expected an integer from 1 to 16777216"), std::string::npos) << m;
  const std::string pipes = csv_error("# pipebench: pipes=3\n0F0,0B0\n");
  EXPECT_NE(pipes.find("pipes='3' is not allowed: expected an integer from 1 to 2"), std::string::npos) << pipes;
}

TEST(CsvLimits, PairsOfStagesAndMicroBatchesAreBounded) {
  // Two numbers each within the limit whose product is not: 4097 stages x 4097 micro-batches.
  std::string row;
  for (int st = 0; st <= 4096; ++st) row += (st ? "," : "") + std::to_string(st) + "F" + (st == 4096 ? "4096" : "0");
  const std::string e = csv_error(row + "\n");
  EXPECT_NE(e.find("stages*m/pipes = 4097*4097/1 = 16785409 (stage, micro-batch) pairs is not allowed"),
            std::string::npos) << e;
}

TEST(CsvLimits, RowsAreBounded) {
  const std::string e = csv_error(std::string(static_cast<std::size_t>(kMaxPipelineRanks) + 1, '\n'));
  EXPECT_NE(e.find("rows = 1048577 pipeline ranks is not allowed: at most 1048576"), std::string::npos) << e;
}

TEST(CsvLimits, NameMustBePrintableUtf8) {
  const std::string e = csv_error("# pipebench: name=\xff\xfe\n0F0,0B0\n");
  EXPECT_NE(e.find("name='\\xFF\\xFE' is not allowed: expected printable UTF-8"), std::string::npos) << e;
  std::istringstream ok("# pipebench: name=gr\xc3\xbc\xc3\x9f\n0F0,0B0\n");
  EXPECT_EQ(from_csv(ok).name, "gr\xc3\xbc\xc3\x9f");
}

TEST(CsvLimits, FileNameBytesThatAreNotUtf8BecomeQuestionMarks) {
  const std::string path = temp_dir() + "/n\xff\x01.csv";
  std::ofstream(path) << "0F0,0B0\n";
  EXPECT_EQ(read_csv_file(path).name, "n??");
  std::remove(path.c_str());
}

TEST(CsvLimits, OnlyRegularFilesOfAtMost64MiBAreRead) {
  try {
    read_csv_file("/dev/zero");
    ADD_FAILURE() << "/dev/zero was read";
  } catch (const pipebench::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read schedule CSV '/dev/zero': not a regular file"),
              std::string::npos) << e.what();
  }
  const std::string big = temp_dir() + "/big.csv";
  std::ofstream(big).close();
  std::filesystem::resize_file(big, static_cast<std::uintmax_t>(kMaxInputBytes) + 1);  // sparse: no disk used
  try {
    read_csv_file(big);
    ADD_FAILURE() << "a file over the limit was read";
  } catch (const pipebench::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("it has 67108865 bytes; at most 67108864 bytes are read"), std::string::npos)
        << e.what();
  }
  std::remove(big.c_str());
}

TEST(CsvLimits, ParseCsvIsFromCsvOfTheText) {
  const std::string text = to_csv(make_schedule({"zbv", 3, 5}));
  std::istringstream in(text);
  EXPECT_EQ(parse_csv(text, "x").actions, from_csv(in, "x").actions);
  EXPECT_THROW(parse_csv(std::string(static_cast<std::size_t>(kMaxInputBytes) + 1, ' ')), pipebench::UsageError);
}

TEST(GeneratorLimits, ZbvWithFewMicroBatchesIsLinearInP) {
  // torch's order is built for 2p-1 micro-batches; building the dropped ones took O(p^2): p = 2^17
  // ran past the test's time limit (6 minutes; now 0.1 s), p = 8e6 for days.
  const Schedule s = make_schedule({"zbv", 131072, 1});
  EXPECT_EQ(s.num_actions(), 6u * 131072);
}

TEST(GeneratorLimits, PipelineRanksAndPairsAreCheckedBeforeBuilding) {
  try {
    make_schedule({"zbv", 8000000, 1});
    ADD_FAILURE() << "p = 8000000 was built";
  } catch (const pipebench::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("p = 8000000 pipeline ranks is not allowed: at most 1048576"),
              std::string::npos) << e.what();
  }
  EXPECT_THROW(make_schedule({"1f1b", 4096, 4097}), pipebench::UsageError);
}

TEST(GeneratorLimits, InterleavedGroupMessageStaysShort) {
  // m = 4000001, g = 4 leaves 1 micro-batch in the last group; the message lists the groups that work,
  // which used to be every one of about 4 million.
  try {
    make_schedule({"interleaved", 2, 4000001, 2, 4});
    ADD_FAILURE() << "accepted";
  } catch (const pipebench::UsageError& e) {
    const std::string msg = e.what();
    EXPECT_LT(msg.size(), 600u) << msg.substr(0, 600);
    EXPECT_NE(msg.find("groups that work: 3, 6, 7, 9, 11, 12, 13, 14, ..."), std::string::npos) << msg;
  }
}
