// The /comm groups of the results file (bench/results/comm_results.hpp) and their text, JSON and CSV
// (bench/render/comm_text.hpp): exact round trips, the append discipline, older files.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "bench/render/comm_text.hpp"
#include "bench/results/comm_results.hpp"
#include "bench/results/h5.hpp"
#include "bench/results/store.hpp"
#include "errors.hpp"
#include "scratch.hpp"

using namespace pipebench::bench;
using pipebench::bench::testing::ScratchDir;
using pipebench::bench::testing::usage_error;

namespace {

CommResult sample(const std::string& op = "all_reduce") {
  CommResult r;
  r.op = op;
  r.group = "tp";
  r.backend = "mpi";
  r.mapping = "2x2x1";
  r.groups = 2;
  r.group_size = 2;
  r.one_group = 0;
  r.config = {{"dtype", "float"}, {"redop", "sum"}, {"root", "-1"}};
  r.metadata = {{"date_utc", "2026-01-01T00:00:00Z"}, {"ranks", "4"}};
  CommBenchRow a;
  a.bytes = 8, a.count = 2, a.in_place = 0, a.time_us = 1.5, a.time_us_min = 1.25, a.time_us_max = 1.5;
  a.algbw_GBps = 8 / 1.5e-6 / 1e9, a.busbw_GBps = a.algbw_GBps, a.wrong = 0;
  CommBenchRow b = a;
  b.in_place = 1, b.time_us = 1.75, b.wrong = 3;
  r.rows = {a, b};
  r.fit = {1.5e-6, 2.5e9, 0.125, 1};
  return r;
}

class CommResults : public ScratchDir {};

}  // namespace

TEST_F(CommResults, RoundTripIsExactAndIdsCount) {
  const std::string file = path("c.h5");
  prepare_results_file(file, false);
  EXPECT_TRUE(read_comms(file).empty());  // no /comm yet
  const CommResult one = sample(), two = sample("latency");
  EXPECT_EQ(append_comm(file, one), 1);
  EXPECT_EQ(append_comm(file, two), 2);
  const auto back = read_comms(file);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].id, 1);
  EXPECT_EQ(back[1].id, 2);
  EXPECT_TRUE(back[0].result == one);
  EXPECT_TRUE(back[1].result == two);
  EXPECT_TRUE(list_runs(file).runs.empty());  // runs and comm results share the file
}

TEST_F(CommResults, IncompleteGroupIsSkipped) {
  const std::string file = path("c.h5");
  prepare_results_file(file, false);
  append_comm(file, sample());
  {
    h5::Id f = h5::open_file(file, true);
    h5::Id g = h5::open_group(f.get(), "comm/000001");
    H5Adelete(g.get(), "complete");
    h5::close_file(f);
  }
  EXPECT_TRUE(read_comms(file).empty());
  EXPECT_EQ(append_comm(file, sample()), 2);  // the cut-short id is not reused
  EXPECT_EQ(read_comms(file).size(), 1u);
}

TEST_F(CommResults, VersionTwoFileIsReadWithoutComm) {
  const std::string file = path("v2.h5");
  {
    h5::Id f = h5::create_file(file);
    h5::write_attr(f.get(), "pipebench_schema_version", std::int64_t{2});
    h5::create_group(f.get(), "runs");
    h5::close_file(f);
  }
  EXPECT_TRUE(read_comms(file).empty());
  EXPECT_EQ(usage_error([&] { append_comm(file, sample()); }),
            "'" + file + "' holds pipebench results of schema version 2; this pipebench writes version 6 and reads "
            "versions 1-6: write to a new file");
}

// A group whose operation has no row in comm/bench_ops.cpp (a damaged file, a newer pipebench's) is
// refused by name, as is such a result in the renderer: nothing guesses its columns.
TEST_F(CommResults, OperationWithoutARowIsRefused) {
  const std::string file = path("c.h5");
  prepare_results_file(file, false);
  append_comm(file, sample("allreduce"));
  try {
    read_comms(file);
    ADD_FAILURE() << "read_comms accepted operation 'allreduce'";
  } catch (const pipebench::UsageError& e) {
    ADD_FAILURE() << "a usage error: " << e.what();
  } catch (const pipebench::Error& e) {
    // read in the reading process, which names the group before HDF5's words (bench/results/reader.cpp)
    EXPECT_EQ(std::string(e.what()), "/comm/000001 of '" + file + "': HDF5: '" + file + ":/comm/000001' holds results of operation 'allreduce', which this pipebench does "
                                     "not know: expected one of all_reduce, all_gather, reduce_scatter, broadcast, reduce, "
                                     "alltoall, sendrecv, latency, bw, bibw, alltoallv");
  }
  const CommResult unknown = sample("allreduce");
  EXPECT_THROW(comm_rows_text(unknown), pipebench::Error);
  EXPECT_THROW(comm_record(unknown, unknown.rows[0], &unknown.rows[1]), pipebench::Error);
  EXPECT_THROW(comm_columns(unknown), pipebench::Error);
}

TEST_F(CommResults, TextHasNcclTestsColumnsAndTheFit) {
  const CommResult r = sample();
  const std::string rows = comm_rows_text(r);
  EXPECT_EQ(rows,
            "           8             2     float     sum      -1     1.50    0.01    0.01       0     1.75    0.01    0.01"
            "       3     1.25     1.50\n");
  EXPECT_EQ(comm_footer(r),
            "# Out of bounds values : 3 FAILED\n# Avg bus bandwidth    : 0.00533333\n"
            "# fit all_reduce over tp: t(bytes) = 1.500 us + bytes / 2.5 GB/s (worst relative error 12.5 % over 1 sizes)\n");
  const auto j = comm_record(r, r.rows[0], &r.rows[1]).objects;
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[1]["in_place"], true);
  EXPECT_EQ(j[1]["wrong"], 3);
  EXPECT_EQ(j[0]["op"], "all_reduce");
  EXPECT_FALSE(j[0].contains("latency_us"));
}

TEST_F(CommResults, PointToPointRowsAreOsuColumns) {
  CommResult r = sample("latency");
  r.rows.resize(1);
  r.rows[0].latency_us = 1.5;
  EXPECT_EQ(comm_table_head(r), "# Size       Latency (us)     Min (us)     Max (us)\n");
  EXPECT_EQ(comm_rows_text(r), "8                       1.50         1.25         1.50\n");
  EXPECT_EQ(comm_record(r, r.rows[0], nullptr).objects.at(0)["latency_us"], 1.5);
}

// -I: nccl-tests' i_min, i_max, i_p99, i_cv% after each variant's columns (analysis::iteration_stats of
// the row's times), the four as CSV columns, and the raw times in JSON's per_iter object alone.
// -I's raw times are stored with the rows and read back exactly, row by row.
TEST_F(CommResults, PerIterationTimesRoundTrip) {
  const std::string file = path("i.h5");
  prepare_results_file(file, false);
  CommResult r = sample();
  r.config["per_iter_timing"] = "1";
  r.iter_us = {{1.0, 2.5, 3.0}, {4.0, 4.25, 0.5}};
  ASSERT_EQ(append_comm(file, r), 1);
  ASSERT_EQ(append_comm(file, sample()), 2);
  const auto back = read_comms(file);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].result.iter_us, r.iter_us);
  EXPECT_TRUE(back[0].result == r);
  EXPECT_TRUE(back[1].result.iter_us.empty());
}

TEST_F(CommResults, PerIterationColumnsAndRawTimes) {
  CommResult r = sample();
  r.groups = 1;
  r.config["per_iter_timing"] = "1";
  r.iter_us = {{1.0, 2.0, 3.0, 2.0}, {4.0, 4.0}};
  EXPECT_EQ(comm_rows_text(r),
            "           8             2     float     sum      -1     1.50    0.01    0.01       0     1.00     3.00     3.00"
            "    35.36     1.75    0.01    0.01       3     4.00     4.00     4.00     0.00\n");
  const std::string head = comm_table_head(r);
  EXPECT_NE(head.find("#wrong    i_min    i_max    i_p99    i_cv%     time"), std::string::npos) << head;
  const Record rec = comm_record(r, r.rows[0], &r.rows[1]);
  EXPECT_EQ(rec.objects[0]["i_p99_us"], 3.0);
  EXPECT_EQ(rec.objects[0]["per_iter"]["times_us"], nlohmann::ordered_json::parse("[1.0, 2.0, 3.0, 2.0]"));
  EXPECT_EQ(rec.objects[0]["per_iter"]["avg_us"], 2.0);
  EXPECT_EQ(rec.objects[1]["per_iter"]["max_us"], 4.0);
  const Table columns = comm_columns(r);
  EXPECT_EQ(columns.columns().back().name, "i_cv");
  EXPECT_EQ(rec.cells.size(), columns.columns().size());
  EXPECT_EQ(rec.cells.back(), nlohmann::ordered_json(100 * std::sqrt(0.5) / 2).dump());
  // Without -I: no columns, no per_iter.
  EXPECT_FALSE(comm_record(sample(), sample().rows[0], nullptr).objects[0].contains("per_iter"));
}

// A size is one text row, a JSON object per variant (out of place, in place) and a CSV line per
// object, whose columns are the objects' keys with their units apart and whose cells are their values.
TEST_F(CommResults, RecordIsTheTextRowTheObjectsAndACsvLineEach) {
  const CommResult r = sample();
  const Record rec = comm_record(r, r.rows[0], &r.rows[1]);
  EXPECT_EQ(rec.text, comm_rows_text(r));
  ASSERT_EQ(rec.objects.size(), 2u);
  EXPECT_EQ(rec.objects[1]["in_place"], true);
  std::vector<std::string> names;
  const Table columns = comm_columns(r);  // held: a range over a temporary's columns() would dangle
  for (const auto& c : columns.columns()) names.push_back(c.unit.empty() ? c.name : c.name + " (" + c.unit + ")");
  EXPECT_EQ(names, (std::vector<std::string>{"op", "group", "groups", "group_size", "backend", "bytes (B)",
                                             "count (elements)", "dtype", "redop", "in_place", "time (us)", "time_min (us)",
                                             "time_max (us)", "algbw (GB/s)", "busbw (GB/s)", "wrong"}));
  const std::string algbw = nlohmann::ordered_json(r.rows[0].algbw_GBps).dump();
  EXPECT_EQ(rec.cells, (std::vector<std::string>{"all_reduce", "tp", "2", "2", "mpi", "8", "2", "float", "sum", "false", "1.5",
                                                 "1.25", "1.5", algbw, algbw, "0"}));
  ASSERT_EQ(rec.more_cells.size(), 1u);
  EXPECT_EQ(rec.more_cells[0].at(9), "true");
  EXPECT_EQ(rec.more_cells[0].at(10), "1.75");
  EXPECT_EQ(rec.more_cells[0].at(15), "3");
  // No in-place form: one object, one line; an unchecked row's wrong is null in JSON, empty in CSV.
  CommResult bw = sample("bw");
  bw.rows[0].wrong = -1, bw.rows[0].bandwidth_MBps = 5.5;
  const Record one = comm_record(bw, bw.rows[0], nullptr);
  EXPECT_EQ(one.objects.size(), 1u);
  EXPECT_TRUE(one.more_cells.empty());
  EXPECT_TRUE(one.objects[0]["wrong"].is_null());
  EXPECT_EQ(comm_columns(bw).columns().back().name, "bandwidth");
  EXPECT_EQ(comm_columns(bw).columns().back().unit, "MB/s");
  ASSERT_EQ(one.cells.size(), comm_columns(bw).columns().size());
  EXPECT_EQ(one.cells[15], "");
  EXPECT_EQ(one.cells[16], "5.5");
}

// nccl-tests ends each of its tests, sendrecv included, with the mean busbw; OSU's point-to-point tests
// print bandwidth per size only: no "Avg bus bandwidth" under latency, bw and bibw.
TEST_F(CommResults, AvgBusBandwidthOnlyUnderNcclTestsOperations) {
  for (const char* op : {"latency", "bw", "bibw"}) {
    CommResult r = sample(op);
    r.rows.resize(1);
    EXPECT_EQ(comm_footer(r), std::string("# Out of bounds values : 0 OK\n# fit ") + op +
                                  " over tp: t(bytes) = 1.500 us + bytes / 2.5 GB/s (worst relative error 12.5 % over 1 sizes)\n")
        << op;
  }
  CommResult r = sample("sendrecv");
  r.rows.resize(1);
  EXPECT_EQ(comm_footer(r),
            "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.00533333\n"
            "# fit sendrecv over tp: t(bytes) = 1.500 us + bytes / 2.5 GB/s (worst relative error 12.5 % over 1 sizes)\n");
}

// The header's "# Using devices" lines as nccl-tests prints them: each rank's device index, PCI
// address and name under NCCL; host memory under MPI.
TEST_F(CommResults, DeviceLinesNameEachRanksDevice) {
  const std::vector<RankPlace> gpus = {{0, 0, 4242, "node01", 0, "0000:04:00", "NVIDIA H100 80GB HBM3"},
                                       {1, 0, 4243, "node01", 1, "0000:05:00", "NVIDIA H100 80GB HBM3"},
                                       {2, 1, 77, "node02", 3, "0000:8c:00", "NVIDIA H100 80GB HBM3"}};
  EXPECT_EQ(comm_device_lines(gpus),
            "#  Rank  0 Group  0 Pid   4242 on     node01 device  0 [0000:04:00] NVIDIA H100 80GB HBM3\n"
            "#  Rank  1 Group  0 Pid   4243 on     node01 device  1 [0000:05:00] NVIDIA H100 80GB HBM3\n"
            "#  Rank  2 Group  1 Pid     77 on     node02 device  3 [0000:8c:00] NVIDIA H100 80GB HBM3\n");
  const std::vector<RankPlace> host = {{0, 0, 12, "vm", -1, "", ""}, {11, 5, 123456, "a-longer-host", -1, "", ""}};
  EXPECT_EQ(comm_device_lines(host),
            "#  Rank  0 Group  0 Pid     12 on         vm device host memory (MPI)\n"
            "#  Rank 11 Group  5 Pid 123456 on a-longer-host device host memory (MPI)\n");
}
