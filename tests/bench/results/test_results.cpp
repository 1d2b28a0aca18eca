// The HDF5 results file: round trip, append, resume, incomplete runs and every refusal.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <chrono>
#include <fstream>
#include <thread>

#include "bench/results/h5.hpp"
#include "bench/results/store.hpp"
#include "sample_run.hpp"
#include "errors.hpp"
#include "scratch.hpp"

namespace pipebench::bench {
namespace {

using testing::sample_run;
using testing::usage_error;

class Results : public testing::ScratchDir {};

// Asserts equality record by record first, so a failure names the first differing record.
void expect_same(const RunResult& a, const RunResult& b) {
  EXPECT_EQ(a.key, b.key);
  EXPECT_EQ(a.config, b.config);
  EXPECT_EQ(a.metadata, b.metadata);
  ASSERT_EQ(a.actions.size(), b.actions.size());
  for (std::size_t i = 0; i < a.actions.size(); ++i) EXPECT_TRUE(a.actions[i] == b.actions[i]) << "action " << i;
  ASSERT_EQ(a.comms.size(), b.comms.size());
  for (std::size_t i = 0; i < a.comms.size(); ++i) EXPECT_TRUE(a.comms[i] == b.comms[i]) << "comm " << i;
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (std::size_t i = 0; i < a.ranks.size(); ++i) EXPECT_TRUE(a.ranks[i] == b.ranks[i]) << "rank " << i;
  EXPECT_TRUE(a.summary == b.summary);
  EXPECT_TRUE(a == b);
}

// Writes an HDF5 file with the given root attribute, as another tool (or version) would.
void write_foreign(const std::string& path, std::int64_t version, bool with_version, bool with_runs) {
  h5::Id f = h5::create_file(path);
  if (with_version) h5::write_attr(f.get(), "pipebench_schema_version", version);
  if (with_runs) h5::create_group(f.get(), "runs");
  h5::close_file(f);
}

TEST_F(Results, RoundTripIsIdenticalFieldByField) {
  const std::string file = path("r.h5");
  RunResult run = sample_run();
  RunResult empty = sample_run("empty");
  empty.actions.clear();
  empty.comms.clear();
  empty.ranks.clear();
  empty.summary.bubble_formula.reset();
  empty.summary.extra.clear();
  empty.config.clear();
  EXPECT_EQ(append_run(file, run), 1);
  EXPECT_EQ(append_run(file, empty), 2);
  expect_same(read_run(file, 1), run);
  expect_same(read_run(file, 2), empty);
  EXPECT_FALSE(read_run(file, 2).summary.bubble_formula.has_value());
}

TEST_F(Results, ListingHasSummariesAndRanksButNoRecords) {
  const std::string file = path("r.h5");
  append_run(file, sample_run("a"));
  append_run(file, sample_run("b"));
  const RunListing l = list_runs(file);
  ASSERT_EQ(l.runs.size(), 2u);
  EXPECT_EQ(l.runs[1].id, 2);
  EXPECT_EQ(l.runs[1].run.key, "b");
  EXPECT_EQ(l.runs[1].run.summary.bubble_measured, 0.25);
  EXPECT_EQ(l.runs[1].run.ranks.size(), 2u);
  EXPECT_EQ(l.runs[1].run.config.at("schedule"), "1f1b");
  EXPECT_TRUE(l.runs[1].run.actions.empty());
  EXPECT_TRUE(l.incomplete.empty());
}

TEST_F(Results, IncompleteRunIsIgnoredAndKeepsItsId) {
  const std::string file = path("r.h5");
  append_run(file, sample_run("a"));
  {  // a run cut short: everything but the complete mark
    h5::Id f = h5::open_file(file, true);
    h5::Id g = h5::create_group(f.get(), "runs/000002");
    h5::write_attr(g.get(), "key", std::string("cut"));
  }
  const RunListing l = list_runs(file);
  ASSERT_EQ(l.runs.size(), 1u);
  EXPECT_EQ(l.runs[0].id, 1);
  EXPECT_EQ(l.incomplete, std::vector<int>{2});
  EXPECT_FALSE(has_complete_run(file, "cut"));
  EXPECT_EQ(usage_error([&] { read_run(file, 2); }),
            "run 2 is not a complete run in '" + file + "' (complete runs: 1)");
  EXPECT_EQ(append_run(file, sample_run("c")), 3);  // the cut run's group is left alone
  EXPECT_EQ(list_runs(file).incomplete, std::vector<int>{2});
}

TEST_F(Results, AppendLeavesEarlierRunsIdentical) {
  const std::string file = path("r.h5");
  RunResult first = sample_run("first");
  append_run(file, first);
  const RunResult before = read_run(file, 1);
  RunResult big = sample_run("second");
  for (int i = 0; i < 5000; ++i) big.actions.push_back(big.actions[static_cast<std::size_t>(i % 9)]);
  append_run(file, big);
  append_run(file, sample_run("third"));
  expect_same(read_run(file, 1), before);
  expect_same(read_run(file, 1), first);
  expect_same(read_run(file, 2), big);
}

// SIGKILL cannot be held off: a writer killed at any moment of an append must leave the earlier runs
// readable and identical, and the file listable. The child appends large runs; the parent kills it
// after delays spread over the append (about 20 ms each here).
TEST_F(Results, WriterKilledMidAppendLeavesEarlierRunsReadable) {
  const std::string file = path("r.h5");
  RunResult big = sample_run("big");
  for (int i = 0; i < 200000; ++i) big.actions.push_back(big.actions[static_cast<std::size_t>(i % 9)]);
  for (int delay_us = 0; delay_us < 40000; delay_us += 2000) {
    std::filesystem::remove(file);
    append_run(file, sample_run("first"));
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      try {
        for (;;) append_run(file, big);
      } catch (...) {
      }
      _exit(0);
    }
    usleep(static_cast<useconds_t>(delay_us));
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    EXPECT_TRUE(read_run(file, 1) == sample_run("first")) << "killed after " << delay_us << " us";
    const RunListing l = list_runs(file);
    ASSERT_FALSE(l.runs.empty());
    for (std::size_t i = 1; i < l.runs.size(); ++i) EXPECT_EQ(l.runs[i].run.key, "big");
  }
}

// `pipebench report` holds a shared lock while it reads; an append that comes meanwhile waits for it.
TEST_F(Results, AppendWaitsForAReaderToLetGo) {
  const std::string file = path("r.h5");
  append_run(file, sample_run("a"));
  const int fd = open(file.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(flock(fd, LOCK_SH), 0);  // what HDF5 does for a reader
  std::thread reader([fd] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    close(fd);
  });
  int id = 0;
  EXPECT_NO_THROW(id = append_run(file, sample_run("b")));
  reader.join();
  EXPECT_EQ(id, 2);
  EXPECT_TRUE(has_complete_run(file, "b"));
}

TEST_F(Results, ResumeFindsCompleteRunsByKey) {
  const std::string file = path("r.h5");
  EXPECT_FALSE(has_complete_run(file, "a"));  // no file yet
  append_run(file, sample_run("a"));
  EXPECT_TRUE(has_complete_run(file, "a"));
  EXPECT_FALSE(has_complete_run(file, "b"));
  EXPECT_FALSE(has_complete_run(file, ""));
}

// Issue 8 item 10: the file a sweep will write is created before the sweep, whole (an empty results
// file that reads), and only once: a second sweep naming it is refused then, not after measuring.
TEST_F(Results, NewFileIsCreatedWholeBeforeTheSweepAndOnlyOnce) {
  const std::string file = path("new.h5");
  EXPECT_TRUE(prepare_results_file(file, false).created);
  const RunListing empty = list_runs(file);
  EXPECT_TRUE(empty.runs.empty());
  EXPECT_EQ(empty.schema_version, kResultsSchemaVersion);
  EXPECT_EQ(usage_error([&] { prepare_results_file(file, false); }).rfind("results file '" + file + "' already exists", 0), 0u);
  EXPECT_FALSE(prepare_results_file(file, true).created);
  EXPECT_EQ(append_run(file, sample_run("a")), 1);
  const std::string other = path("other.h5");
  EXPECT_TRUE(prepare_results_file(other, true).created);  // --append onto a missing file creates it
}

// Several processes create the same new file at once: exactly one succeeds, the others are refused
// (exit 2 in `run`), and the file is a whole, readable results file.
TEST_F(Results, OfConcurrentCreatorsExactlyOneWins) {
  const std::string file = path("race.h5");
  std::vector<pid_t> children;
  for (int i = 0; i < 6; ++i) {
    const pid_t c = fork();
    ASSERT_GE(c, 0);
    if (c == 0) {
      int rc = 3;
      try {
        rc = prepare_results_file(file, false).created ? 0 : 1;
      } catch (const UsageError&) {
        rc = 2;
      } catch (...) {
      }
      _exit(rc);
    }
    children.push_back(c);
  }
  int won = 0, refused = 0;
  for (pid_t c : children) {
    int status = 0;
    waitpid(c, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    won += WEXITSTATUS(status) == 0;
    refused += WEXITSTATUS(status) == 2;
  }
  EXPECT_EQ(won, 1);
  EXPECT_EQ(refused, 5);
  EXPECT_TRUE(list_runs(file).runs.empty());
}

TEST_F(Results, DefaultNamesOfTheSameSecondDoNotCollide) {
  const std::string stem = path("pipebench-20260101-000000");
  EXPECT_EQ(create_unique_results_file(stem), stem + ".h5");
  EXPECT_EQ(create_unique_results_file(stem), stem + "-2.h5");
  EXPECT_EQ(create_unique_results_file(stem), stem + "-3.h5");
  EXPECT_TRUE(list_runs(stem + "-2.h5").runs.empty());
}

TEST_F(Results, ExistingFileWithoutAppendIsRefused) {
  const std::string file = path("r.h5");
  append_run(file, sample_run());
  EXPECT_EQ(usage_error([&] { prepare_results_file(file, false); }),
            "results file '" + file +
                "' already exists; pass --append (with --resume to skip runs it holds) to add runs to it, or choose another file name");
  EXPECT_NO_THROW(prepare_results_file(file, true));
}

TEST_F(Results, OtherSchemaVersionIsRefused) {
  const std::string file = path("v99.h5");
  write_foreign(file, 99, true, true);
  const std::string expected = "'" + file +
                               "' holds pipebench results of schema version 99; this pipebench writes version 6 and "
                               "reads versions 1-6: ";
  EXPECT_EQ(usage_error([&] { prepare_results_file(file, true); }), expected + "write to a new file");
  EXPECT_EQ(usage_error([&] { list_runs(file); }), expected + "read it with the pipebench that wrote it");
  EXPECT_EQ(usage_error([&] { append_run(file, sample_run()); }), expected + "write to a new file");
  EXPECT_EQ(usage_error([&] { has_complete_run(file, "x"); }), expected + "read it with the pipebench that wrote it");
}

// A file of schema version 1 (no stages table, no analytic figures but bubble_formula, no pipes) is
// read, with those fields at their defaults; runs are not added to it.
TEST_F(Results, VersionOneFileIsReadButNotAppendedTo) {
  const std::string file = path("v1.h5");
  RunResult run = sample_run();
  append_run(file, run);
  {
    h5::Id f = h5::open_file(file, true);
    ASSERT_GE(H5Adelete(f.get(), "pipebench_schema_version"), 0);
    h5::write_attr(f.get(), "pipebench_schema_version", std::int64_t{1});
    h5::Id g = h5::open_group(f.get(), "runs/000001");
    ASSERT_GE(H5Ldelete(g.get(), "stages", H5P_DEFAULT), 0);
    ASSERT_GE(H5Ldelete(g.get(), "analytic_notes", H5P_DEFAULT), 0);
    ASSERT_GE(H5Ldelete(g.get(), "analytic_peak_inflight", H5P_DEFAULT), 0);
    for (const char* a : {"pipes", "analytic_makespan", "analytic_idle_measure", "analytic_source"})
      ASSERT_GE(H5Adelete(g.get(), a), 0) << a;
    h5::close_file(f);
  }
  const RunResult back = read_run(file, 1);
  EXPECT_TRUE(back.stages.empty());
  EXPECT_EQ(back.summary.pipes, 1);
  EXPECT_FALSE(back.summary.analytic_makespan);
  EXPECT_TRUE(back.summary.analytic_peak_inflight.empty());
  EXPECT_TRUE(back.summary.analytic_notes.empty());
  EXPECT_EQ(back.summary.bubble_formula, run.summary.bubble_formula);
  EXPECT_EQ(back.ranks, run.ranks);
  EXPECT_EQ(back.actions, run.actions);
  EXPECT_EQ(list_runs(file).runs.size(), 1u);
  const std::string refused = "'" + file +
                              "' holds pipebench results of schema version 1; this pipebench writes version 6 and "
                              "reads versions 1-6: write to a new file";
  EXPECT_EQ(usage_error([&] { prepare_results_file(file, true); }), refused);
  EXPECT_EQ(usage_error([&] { append_run(file, sample_run()); }), refused);
}

TEST_F(Results, NonPipebenchFilesAreRefused) {
  const std::string plain = path("plain.h5");
  write_foreign(plain, 0, false, true);
  EXPECT_EQ(usage_error([&] { prepare_results_file(plain, true); }),
            "'" + plain + "' is an HDF5 file but not a pipebench results file (it has no pipebench_schema_version attribute)");
  const std::string no_runs = path("noruns.h5");
  write_foreign(no_runs, kResultsSchemaVersion, true, false);
  EXPECT_EQ(usage_error([&] { list_runs(no_runs); }),
            "'" + no_runs + "' is an HDF5 file but not a pipebench results file (it has no /runs group)");
  const std::string text = path("notes.txt");
  std::ofstream(text) << "not HDF5\n";
  EXPECT_EQ(usage_error([&] { prepare_results_file(text, true); }),
            "'" + text + "' is not an HDF5 file, so not a pipebench results file");
  EXPECT_EQ(usage_error([&] { list_runs(path("missing.h5")); }),
            "results file '" + path("missing.h5") + "' cannot be opened: No such file or directory");
  EXPECT_EQ(usage_error([&] { list_runs(dir_.string()); }), "'" + dir_.string() + "' is a directory, not a results file");
}

TEST_F(Results, UnwritablePathIsRefusedUpFront) {
  // Root may write anywhere, so use paths no one can create: below a regular file and in a missing directory.
  const std::string text = path("notes.txt");
  std::ofstream(text) << "x\n";
  for (const std::string& bad : {text + "/r.h5", path("no/such/dir/r.h5")}) {
    const std::string msg = usage_error([&] { prepare_results_file(bad, false); });
    EXPECT_EQ(msg.rfind("cannot create results file '" + bad + "': HDF5: cannot create file", 0), 0u) << msg;
  }
  EXPECT_EQ(usage_error([] { prepare_results_file("", false); }), "the results file name is empty");
}

TEST_F(Results, FileIsSelfDescribing) {
  const std::string file = path("r.h5");
  append_run(file, sample_run());
  h5::Id f = h5::open_file(file, false);
  EXPECT_EQ(h5::read_int_attr(f.get(), "pipebench_schema_version"), 6);
  EXPECT_NE(h5::read_string_attr(f.get(), "pipebench_schema").find("docs/results-schema.md"), std::string::npos);
  h5::Id run = h5::open_group(f.get(), "runs/000001");
  EXPECT_EQ(h5::read_int_attr(run.get(), "complete"), 1);
  h5::Id meta = h5::open_group(run.get(), "metadata");
  EXPECT_EQ(h5::read_string_attr(meta.get(), "cpu"), "Caf\xc3\xa9 CPU (x 2)");
  EXPECT_EQ(h5::table_size(run.get(), "actions"), 9u);
  EXPECT_EQ(h5::table_size(run.get(), "comms"), 11u);
  EXPECT_EQ(h5::table_size(run.get(), "stages"), 2u);
}

TEST(ResultsText, IdRanges) {
  EXPECT_EQ(id_ranges({}), "");
  EXPECT_EQ(id_ranges({4}), "4");
  EXPECT_EQ(id_ranges({1, 2, 3, 5, 7, 8}), "1-3, 5, 7-8");
}

int g_terms = 0;
void count_term(int) { ++g_terms; }

TEST(ResultsSignals, TerminationWaitsUntilTheWriteIsOver) {
  g_terms = 0;
  struct sigaction mine {}, old {};
  mine.sa_handler = count_term;
  sigemptyset(&mine.sa_mask);
  ASSERT_EQ(sigaction(SIGTERM, &mine, &old), 0);
  {
    SignalDeferral hold;
    raise(SIGTERM);
    raise(SIGTERM);
    EXPECT_EQ(g_terms, 0);
  }
  EXPECT_EQ(g_terms, 1);  // delivered once, to the handler that was there before
  struct sigaction now {};
  sigaction(SIGTERM, &old, &now);
  EXPECT_EQ(now.sa_handler, count_term);
}

}  // namespace
}  // namespace pipebench::bench
