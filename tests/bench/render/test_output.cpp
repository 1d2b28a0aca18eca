// bench/render/output: checked, all-or-nothing output files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "analysis/error.hpp"
#include "analysis/text.hpp"
#include "bench/render/output.hpp"
#include "scratch.hpp"

namespace pipebench::bench {
namespace {

using Output = testing::ScratchDir;

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

int files_in(const std::filesystem::path& dir) {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

TEST_F(Output, WritesAndRefusesToReplaceUnlessAsked) {
  const auto p = path("a.svg");
  write_output(p, "--out", [](std::ostream& o) { o << "one"; }, false);
  EXPECT_EQ(read(p), "one");
  EXPECT_THROW(write_output(p, "--out", [](std::ostream& o) { o << "two"; }, false), UsageError);
  EXPECT_EQ(read(p), "one");
  write_output(p, "--out", [](std::ostream& o) { o << "two"; }, true);
  EXPECT_EQ(read(p), "two");
  EXPECT_EQ(files_in(dir_), 1);
}

TEST_F(Output, AFailingWriterLeavesNothingBehind) {
  const auto p = path("b.json");
  EXPECT_THROW(write_output(p, "--out", [](std::ostream& o) { o << "half"; throw std::bad_alloc(); }, false),
               std::bad_alloc);
  EXPECT_EQ(files_in(dir_), 0);
  write_output(p, "--out", [](std::ostream& o) { o << "old"; }, false);
  EXPECT_THROW(write_output(p, "--out", [](std::ostream&) { throw Error("render failed"); }, true), Error);
  EXPECT_EQ(read(p), "old");
  EXPECT_EQ(files_in(dir_), 1);
}

TEST_F(Output, AFailedStreamIsAnErrorAndLeavesNoFile) {
  // What a full disk does to the stream: it goes bad; no file may appear.
  const auto p = path("c.txt");
  EXPECT_THROW(write_output(p, "--out", [](std::ostream& o) { o << "x"; o.setstate(std::ios::badbit); }, false), Error);
  EXPECT_EQ(files_in(dir_), 0);
}

TEST_F(Output, BadPathsAreUsageErrorsUpFront) {
  EXPECT_THROW(check_output_path("", "--svg", false), UsageError);
  EXPECT_THROW(check_output_path(dir_.string(), "--svg", true), UsageError);
  EXPECT_THROW(check_output_path(dir_.string() + "/", "--svg", true), UsageError);
  EXPECT_THROW(check_output_path(path("no/such/dir.svg"), "--svg", false), UsageError);
  EXPECT_THROW(check_output_path(path(std::string(300, 'x')), "--svg", false), UsageError);
  try {
    check_output_path(path("missing\n/x.svg"), "--svg", false);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(check_output_path(path("fine.svg"), "--svg", false));
}

TEST(Quoted, EscapesControlBytesAndCuts) {
  EXPECT_EQ(quoted("a\nb\x01'"), "'a\\nb\\x01\\''");
  EXPECT_EQ(quoted(std::string(100, 'x'), 4), "'xxxx...'");
  EXPECT_EQ(quoted("\xff"), "'\\xFF'");
}

}  // namespace
}  // namespace pipebench::bench
