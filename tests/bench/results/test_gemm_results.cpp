// The /gemm groups of the results file (bench/results/gemm_results.hpp): exact round trips beside runs and
// comm results, the grid they hold, and what plan --calibrate takes from them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench/results/calibration.hpp"
#include "bench/results/gemm_results.hpp"
#include "bench/results/h5.hpp"
#include "bench/results/store.hpp"
#include "bench/results/comm_results.hpp"
#include "sample_run.hpp"
#include "scratch.hpp"

using namespace pipebench::bench;
using pipebench::bench::testing::ScratchDir;

namespace {

GemmResult sample(const std::string& precision = "fp32") {
  GemmResult r;
  r.precision = precision;
  for (std::int64_t m : {16, 32})
    for (std::int64_t n : {16, 32})
      for (std::int64_t k : {16, 32}) {
        const double t = 1e-6 * double(m + n + k);
        r.rows.push_back({m, n, k, t, 2.0 * double(m * n * k) / t});
      }
  r.elementwise_Bps = 2.5e10;
  r.elementwise_elements = 4096;
  r.config = {{"sizes", "16,32"}, {"precision", precision}};
  r.metadata = {{"date_utc", "2026-01-01T00:00:00Z"}};
  return r;
}

class GemmResults : public ScratchDir {};

}  // namespace

TEST_F(GemmResults, RoundTripIsExactBesideComm) {
  const std::string file = path("g.h5");
  prepare_results_file(file, false);
  EXPECT_TRUE(read_gemms(file).empty());
  const GemmResult one = sample(), two = sample("fp64");
  EXPECT_EQ(append_gemm(file, one), 1);
  EXPECT_EQ(append_gemm(file, two), 2);
  const auto back = read_gemms(file);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].id, 2);
  EXPECT_TRUE(back[0].result == one);
  EXPECT_TRUE(back[1].result == two);
  EXPECT_TRUE(list_runs(file).runs.empty());
}

TEST_F(GemmResults, GridComesBackInTheTablesOrder) {
  std::vector<double> seconds;
  const GemmResult r = sample();
  EXPECT_EQ(gemm_grid(r, seconds), (std::vector<double>{16, 32}));
  ASSERT_EQ(seconds.size(), 8u);
  EXPECT_DOUBLE_EQ(seconds[3], 1e-6 * (16 + 32 + 32));  // (i_m, i_n, i_k) = (0, 1, 1)
  GemmResult swapped = r;
  std::swap(swapped.rows[1], swapped.rows[2]);
  EXPECT_THROW(gemm_grid(swapped, seconds), pipebench::Error);
  GemmResult short_one = r;
  short_one.rows.pop_back();
  EXPECT_THROW(gemm_grid(short_one, seconds), pipebench::Error);
}

TEST_F(GemmResults, DamagedPrecisionIsRefusedByName) {
  const std::string file = path("g.h5");
  prepare_results_file(file, false);
  append_gemm(file, sample("bf16"));
  EXPECT_THROW(read_gemms(file), pipebench::Error);
}

namespace {

CommResult fit_of(const std::string& spans, double alpha, double beta) {
  CommResult r;
  r.op = "sendrecv";
  r.group = "pp";
  r.backend = "mpi";
  r.mapping = "1x2x1";
  r.groups = 1, r.group_size = 2;
  r.metadata = {{"groups_span_nodes", spans}};
  r.fit = {alpha, beta, 0.01, 5};
  return r;
}

}  // namespace

// plan --calibrate's links: a fit whose groups all stay in one node is the intra-node tier's, one whose
// groups all cross nodes the inter-node tier's; the GEMM sweep of the runs' precision gives the rates.
TEST_F(GemmResults, CalibrationTakesEachTiersLinkAndTheSweep) {
  const std::string file = path("cal.h5");
  prepare_results_file(file, false);
  RunResult run = pipebench::bench::testing::sample_run();
  run.config["workload"] = "transformer";
  run.config["precision"] = "fp32";
  append_run(file, run);
  append_comm(file, fit_of("all", 2e-5, 1e8));
  append_comm(file, fit_of("none", 1e-6, 1e10));
  append_gemm(file, sample("fp64"));  // not the runs' precision: not taken
  Calibration c = read_calibration(file);
  EXPECT_EQ(c.gemm_id, 0);
  EXPECT_DOUBLE_EQ(c.intra.alpha, 1e-6);
  EXPECT_DOUBLE_EQ(c.intra.beta, 1e10);
  EXPECT_EQ(c.intra.source, "comm fit /comm/000002 (op sendrecv)");
  EXPECT_DOUBLE_EQ(c.inter.alpha, 2e-5);
  EXPECT_DOUBLE_EQ(c.inter.beta, 1e8);
  append_gemm(file, sample("fp32"));
  c = read_calibration(file);
  EXPECT_EQ(c.gemm_id, 2);
  EXPECT_DOUBLE_EQ(c.gemm.peak_flops, 2.0 * 32 * 32 * 32 / (1e-6 * 96));
  EXPECT_DOUBLE_EQ(c.elementwise_Bps, 2.5e10);
}
