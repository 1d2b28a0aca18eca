// pipebench run on real ranks: what the executor records is exactly the schedule, its measured peaks
// are the simulated ones, a t x p x d mapping has the right groups, and a stored run reads back equal.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "analysis/catalog.hpp"
#include "bench/results/store.hpp"
#include "bench/run/configuration.hpp"
#include "bench/run/job.hpp"
#include "kernels/transformer_workload.hpp"
#include "topology/grid.hpp"
#include "world.hpp"

using namespace pipebench;
using namespace pipebench::bench;
using pipebench::testing::world_size;

namespace {

RunSettings small_config() {
  RunSettings c;
  c.synthetic.times.tf = seconds(300e-6);
  c.synthetic.times.tb = seconds(600e-6);
  c.synthetic.times.tw = seconds(300e-6);
  c.warmup = 0;
  c.steps = 2;
  c.synthetic.activation_bytes = 64 << 10;
  c.synthetic.p2p_bytes = 1 << 10;
  c.timeout = seconds(30);
  return c;
}

// The one configuration of a sweep of one schedule, mapping and m.
Plan plan_of(RunSettings c, const std::string& schedule, Mapping mp, int m) {
  c.schedules = {schedule};
  c.mappings = {mp};
  c.microbatches = {m};
  auto plans = plan_sweep(c, mp.t * mp.p * mp.d);
  EXPECT_EQ(plans.size(), 1u);
  return plans.at(0);
}

// A results file name every rank agrees on (rank 0's pid).
std::string temp_file(const char* tag) {
  int pid = getpid();
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return "/tmp/pipebench_test_run_" + std::string(tag) + "_" + std::to_string(pid) + ".h5";
}

// One configuration as `run` executes it: the sweep's communicators, the start meeting, the run.
std::optional<Measurement> run_one(const RunSettings& c, const Plan& pl, comm::Communicator& world) {
  comm::Roll roll(world, host_name());
  SweepComms sweep(c, {pl}, world, roll);
  start_configuration(sweep, pl, false);
  return run_configuration(c, pl, sweep);
}

}  // namespace

TEST(Run, EveryScheduleRecordsItsOwnActionsAndPeaks) {
  const int p = world_size();
  const int m = 2 * p;
  auto world = comm::make_communicator("mpi", MPI_COMM_WORLD, "world");
  const std::string file = temp_file("all");
  for (const auto& info : analysis::schedule_catalog()) {
    if (info.name == "dualpipe" && p % 2) continue;
    RunSettings c = small_config();
    const Plan pl = plan_of(c, info.name, {1, p, 1}, m);
    const auto o = run_one(c, pl, *world);
    if (world->rank() != 0) continue;
    ASSERT_TRUE(o);
    const analysis::Schedule& s = pl.schedule;
    SCOPED_TRACE(info.name);
    // Per step and rank, the recorded actions in time order are exactly the rank's list.
    for (int step = 0; step < c.steps; ++step) {
      for (int r = 0; r < p; ++r) {
        std::vector<const ActionRecord*> mine;
        for (const auto& a : o->run.actions)
          if (a.step == step && a.rank == r) mine.push_back(&a);
        std::sort(mine.begin(), mine.end(), [](auto* x, auto* y) { return x->t_start < y->t_start; });
        std::vector<analysis::Action> got;
        for (const auto* a : mine) got.push_back({a->kind, a->stage, a->mb, a->b_stage, a->b_mb});
        EXPECT_EQ(got, s.actions[r]) << "rank " << r << " step " << step;
      }
    }
    for (const auto& rs : o->run.ranks) {
      EXPECT_EQ(rs.peak_inflight, rs.predicted_peak_inflight) << "rank " << rs.global_rank;
      // Every in-flight chunk holds activation_bytes / v.
      EXPECT_EQ(rs.peak_activation_bytes, static_cast<std::int64_t>(rs.peak_inflight) *
                                              static_cast<std::int64_t>(c.synthetic.activation_bytes / s.v()))
          << "rank " << rs.global_rank;
    }
    EXPECT_EQ(o->run.config.at("schedule"), info.name);
    EXPECT_GT(o->run.summary.makespan, 0);
    // Stored and read back: the same run, records included.
    const int id = append_run(file, o->run);
    EXPECT_EQ(read_run(file, id), o->run);
  }
  if (world->rank() == 0) std::remove(file.c_str());
}

TEST(Run, ThreeDMappingHasItsGroupsAndCollectives) {
  if (world_size() != 8) GTEST_SKIP() << "needs 8 ranks";
  auto world = comm::make_communicator("mpi", MPI_COMM_WORLD, "world");
  RunSettings c = small_config();
  c.order = "tp-pp-dp";
  c.synthetic.tp_allreduce_bytes = 4096;
  c.synthetic.dp_grad_bytes = 1 << 16;
  c.dp_buckets = 2;
  const auto o = run_one(c, plan_of(c, "1f1b", {2, 2, 2}, 4), *world);
  if (world->rank() != 0) return;
  ASSERT_TRUE(o);
  const topology::Grid grid(2, 2, 2, 1, "tp-pp-dp");
  ASSERT_EQ(o->run.ranks.size(), 8u);
  EXPECT_EQ(o->run.metadata.at("group_placement").rfind(
                "1 node(s); tp groups spanning nodes 0/4, pp groups spanning nodes 0/4, dp groups spanning nodes 0/4,", 0),
            0u)
      << o->run.metadata.at("group_placement");
  for (const auto& rs : o->run.ranks) {
    const auto want = grid.coords(rs.global_rank);
    EXPECT_EQ(rs.tp, want.tp);
    EXPECT_EQ(rs.pp, want.pp);
    EXPECT_EQ(rs.dp, want.dp);
  }
  // Per rank and step: 2 TP all-reduces in each F and each B (1F1B: 2m actions), and the DP
  // gradient in 2 buckets for its one chunk.
  std::map<std::pair<int, int>, int> tp, dp;
  for (const auto& cr : o->run.comms) {
    if (cr.kind != CommKind::AllReduce) continue;
    (cr.group == CommGroup::tp ? tp : dp)[{cr.global_rank, cr.step}]++;
    if (cr.group == CommGroup::dp) {
      EXPECT_EQ(cr.bytes, (1 << 16) / 2);
    }
  }
  for (int r = 0; r < 8; ++r)
    for (int step = 0; step < c.steps; ++step) {
      EXPECT_EQ((tp[{r, step}]), 2 * 2 * 4) << "rank " << r;
      EXPECT_EQ((dp[{r, step}]), 2) << "rank " << r;
    }
  // Pipelines run between the ranks the grid pairs: every message goes to the pp neighbour.
  for (const auto& cr : o->run.comms)
    if (cr.kind == CommKind::Send) {
      const auto a = grid.coords(cr.global_rank), b = grid.coords(cr.peer);
      EXPECT_EQ(a.tp, b.tp);
      EXPECT_EQ(a.dp, b.dp);
      EXPECT_EQ(std::abs(a.pp - b.pp), 1);
    }
}

TEST(Run, TransformerMemoryMatchesItsFormulaAndLossIsScheduleIndependent) {
  const int p = world_size();
  const kernels::KokkosSession kokkos(1);
  auto world = comm::make_communicator("mpi", MPI_COMM_WORLD, "world");
  RunSettings c = small_config();
  c.workload = WorkloadKind::transformer;
  c.steps = 1;
  c.model.hidden = 16;
  c.model.heads = 2;
  c.model.seq = 8;
  c.model.micro_batch = 1;
  c.model.vocab = 32;
  c.model.layers = 2 * p;
  c.model.fp64 = true;
  double first_loss = 0;
  for (const char* name : {"1f1b", "interleaved", "zb-h1", "zbv", "dualpipev"}) {
    for (auto recompute : {kernels::Recompute::none, kernels::Recompute::full}) {
      c.model.recompute = recompute;
      const auto o = run_one(c, plan_of(c, name, {1, p, 1}, 2 * p), *world);
      if (world->rank() != 0) continue;
      ASSERT_TRUE(o);
      SCOPED_TRACE(std::string(name) + " recompute " + analysis::recompute_name(recompute));
      for (const auto& rs : o->run.ranks) {
        EXPECT_GT(rs.peak_activation_bytes, 0);
        EXPECT_EQ(rs.peak_activation_bytes, rs.predicted_activation_bytes) << "rank " << rs.global_rank;
        EXPECT_GT(rs.flop_rate, 0);
      }
      const auto& x = o->run.summary.extra;
      ASSERT_TRUE(x.count("loss"));
      if (first_loss == 0) first_loss = x.at("loss");
      EXPECT_NEAR(x.at("loss"), first_loss, 1e-12 * first_loss);
      EXPECT_TRUE(x.count("mfu"));
      EXPECT_TRUE(x.count("grad_norm.0"));
    }
  }
}
