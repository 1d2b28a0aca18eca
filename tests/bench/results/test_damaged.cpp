// Issue 8 items 6, 8 and 9: results files that are damaged or not what pipebench writes. Reading them
// never crashes the reader's caller, a damaged run is skipped while the others are read, text is valid
// UTF-8, and a refused append leaves the file byte for byte as it was.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bench/render/report.hpp"
#include "bench/results/h5.hpp"
#include "bench/results/store.hpp"
#include "sample_run.hpp"
#include "errors.hpp"
#include "scratch.hpp"

namespace pipebench::bench {
namespace {

using testing::sample_run;
using testing::usage_error;

class Damaged : public testing::ScratchDir {};

// The listing as `report --json` prints it.
nlohmann::ordered_json listing_json(const std::string& file, const RunListing& l) {
  std::ostringstream out, err;
  const auto sink = make_sink(Format::json, out, err, listing_document(file, l, nullptr));
  write_listing(*sink, file, l, nullptr);
  sink->finish();
  return nlohmann::ordered_json::parse(out.str());
}

std::string bytes_of(const std::string& file) {
  std::ifstream f(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void write_bytes(const std::string& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

// A run whose ranks table is no longer a dataset: that run is listed as damaged with the reason, the
// runs before and after it are read, and asking for it is one UsageError.
TEST_F(Damaged, ADamagedRunIsSkippedAndTheOthersAreRead) {
  const std::string file = path("r.h5");
  for (const char* key : {"a", "b", "c"}) append_run(file, sample_run(key));
  {
    h5::Id f = h5::open_file(file, true);
    h5::Id g = h5::open_group(f.get(), "runs/000002");
    ASSERT_GE(H5Ldelete(g.get(), "ranks", H5P_DEFAULT), 0);
    h5::create_group(g.get(), "ranks");
    h5::close_file(f);
  }
  const RunListing l = list_runs(file);
  ASSERT_EQ(l.runs.size(), 2u);
  EXPECT_EQ(l.runs[0].run.key, "a");
  EXPECT_EQ(l.runs[1].run.key, "c");
  ASSERT_EQ(l.damaged.size(), 1u);
  EXPECT_EQ(l.damaged[0].id, 2);
  EXPECT_NE(l.damaged[0].reason.find("/runs/000002/ranks' is not a dataset"), std::string::npos) << l.damaged[0].reason;
  EXPECT_EQ(usage_error([&] { read_run(file, 2); }).rfind("run 2 of '" + file + "' is damaged: ", 0), 0u);
  EXPECT_TRUE(read_run(file, 3) == sample_run("c"));
  const std::string listing = render_listing(file, l);
  EXPECT_NE(listing.find("2 complete run(s), damaged run(s) 2 skipped"), std::string::npos) << listing;
  EXPECT_EQ(listing_json(file, l).at("damaged_runs").at(0).at("id"), 2);
}

// Item 6: /runs that is not a group refuses --append and report before anything runs.
TEST_F(Damaged, RunsThatIsNotAGroupIsRefused) {
  const std::string file = path("r.h5");
  {
    h5::Id f = h5::create_file(file);
    h5::write_attr(f.get(), "pipebench_schema_version", kResultsSchemaVersion);
    h5::write_attr(f.get(), "runs", std::int64_t{1});
    const std::int32_t x = 1;
    h5::write_table(f.get(), "runs", H5T_NATIVE_INT32, &x, 1);
    h5::close_file(f);
  }
  const std::string expected = "'" + file + "' is an HDF5 file but not a pipebench results file (its /runs is not a group)";
  EXPECT_EQ(usage_error([&] { list_runs(file); }), expected);
  EXPECT_EQ(usage_error([&] { prepare_results_file(file, true); }), expected);
}

// A FIFO would block the reader forever, /dev/zero would never end.
TEST_F(Damaged, FilesThatAreNotRegularAreRefused) {
  const std::string fifo = path("fifo.h5");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(usage_error([&] { list_runs(fifo); }), "'" + fifo + "' is not a regular file, so not a results file");
  EXPECT_EQ(usage_error([] { list_runs("/dev/zero"); }), "'/dev/zero' is not a regular file, so not a results file");
}

// Item 9: an append that is refused must not touch the file. HDF5 trims a file opened for writing to
// its recorded end when it closes it, so bytes past that end show whether it was opened for writing.
TEST_F(Damaged, ARefusedAppendLeavesTheFileUnchanged) {
  const std::string file = path("v99.h5");
  {
    h5::Id f = h5::create_file(file);
    h5::write_attr(f.get(), "pipebench_schema_version", std::int64_t{99});
    h5::create_group(f.get(), "runs");
    h5::close_file(f);
  }
  write_bytes(file, bytes_of(file) + std::string(100, 'x'));
  const std::string before = bytes_of(file);
  EXPECT_NE(usage_error([&] { prepare_results_file(file, true); }).find("schema version 99"), std::string::npos);
  EXPECT_TRUE(bytes_of(file) == before) << "the refused file was modified";
  EXPECT_NE(usage_error([&] { append_run(file, sample_run()); }).find("schema version 99"), std::string::npos);
  EXPECT_TRUE(bytes_of(file) == before) << "the refused file was modified";
}

// Item 8: text that is not UTF-8 (an environment value, or a file written by another tool) is stored
// and read back escaped, so the run object always prints as JSON.
TEST_F(Damaged, TextThatIsNotUtf8IsEscapedOnWriteAndRead) {
  const std::string file = path("r.h5");
  RunResult run = sample_run("k");
  run.metadata["env.SLURM_BAD"] = "a\xff" "b\xc3";
  append_run(file, run);
  {
    h5::Id f = h5::open_file(file, true);
    h5::Id meta = h5::open_group(f.get(), "runs/000001/metadata");
    h5::write_attr(meta.get(), "raw", std::string("x\xfe\xfd"));  // as a tool that does not escape would
    h5::close_file(f);
  }
  const RunResult back = read_run(file, 1);
  EXPECT_EQ(back.metadata.at("env.SLURM_BAD"), "a\\xFFb\\xC3");
  EXPECT_EQ(back.metadata.at("raw"), "x\\xFE\\xFD");
  EXPECT_EQ(back.metadata.at("cpu"), "Caf\xc3\xa9 CPU (x 2)");  // valid UTF-8 is kept as it is
  EXPECT_NO_THROW(run_json(1, back, true).dump());
  EXPECT_EQ(utf8_escaped("\xed\xa0\x80"), "\\xED\\xA0\\x80");  // a UTF-16 surrogate is not UTF-8
  EXPECT_EQ(utf8_escaped("\xf0\x9f\x98\x80 \\x"), "\xf0\x9f\x98\x80 \\x");
}

// Item 8: byte-flipped copies of a real results file, flipped at offsets spread over the whole file.
// Reading one may fail, but only as a UsageError (exit 2), or list fewer runs; it never crashes this
// process (a crash of libhdf5 stays in the reader's child) and never hangs.
TEST_F(Damaged, ByteFlippedFilesNeverCrashTheReader) {
  const std::string file = path("r.h5");
  append_run(file, sample_run("a"));
  append_run(file, sample_run("b"));
  const std::string good = bytes_of(file);
  const std::string copy = path("flipped.h5");
  int read_whole = 0, refused = 0, partial = 0;
  const auto start = std::chrono::steady_clock::now();
  const std::size_t step = good.size() / 300 + 1;
  for (std::size_t at = 0; at < good.size(); at += step) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ (at % 2 ? 0xff : 0x10));
    write_bytes(copy, bad);
    ReadRequest req;
    req.records = true;
    req.idle_timeout = 10;
    try {
      const RunListing l = read_results(copy, req);
      (l.runs.size() == 2 ? read_whole : partial)++;
      for (const auto& r : l.runs) EXPECT_NO_THROW(run_json(r.id, r.run, true).dump()) << "offset " << at;
    } catch (const UsageError& e) {
      ++refused;
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "offset " << at << ": not a UsageError: " << e.what();
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%d read whole, %d with runs skipped, %d refused in %.1f s\n", read_whole, partial, refused, seconds);
  EXPECT_GT(read_whole, 0);
  EXPECT_GT(refused + partial, 0);
}

}  // namespace
}  // namespace pipebench::bench
