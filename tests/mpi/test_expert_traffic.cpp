// The synthetic stage's expert traffic (docs/run.md "Expert traffic") on 4 ranks, 1x2x2 with ep 2: every
// chunk's F and backward exchange exactly the formula's bytes with every member (uneven: member 0 takes
// --routing-imbalance times the mean), and DualPipeV's overlapped pairs keep each exchange in flight
// while the other micro-batch computes, so that less of it is exposed than without the overlap; the
// simulated makespan, which charges each action its exposed exchanges, is the measured one's.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "bench/run/configuration.hpp"
#include "bench/run/job.hpp"
#include "comm/bench_ops.hpp"
#include "world.hpp"

using namespace pipebench;
using namespace pipebench::bench;

namespace {

constexpr std::uint64_t kBytes = 256 << 10;

RunSettings traffic_config(const std::string& schedule, double imbalance, bool overlap) {
  RunSettings c;
  c.schedules = {schedule};
  c.mappings = {{1, 2, 2}};
  c.microbatches = {4};
  c.ep = 2;
  c.synthetic.times.tf = seconds(2e-3);
  c.synthetic.times.tb = seconds(4e-3);
  c.synthetic.times.tw = seconds(2e-3);
  c.synthetic.activation_bytes = 64 << 10;
  c.synthetic.p2p_bytes = 1 << 10;
  c.synthetic.ep_alltoall_bytes = kBytes;
  c.synthetic.routing_imbalance = imbalance;
  c.synthetic.ep_overlap = overlap;
  c.synthetic.ep_flags = {"--ep-alltoall-bytes"};
  c.warmup = 1;
  c.steps = 2;
  c.timeout = seconds(60);
  return c;
}

std::optional<Measurement> run_one(const RunSettings& c, comm::Communicator& world) {
  const auto plans = plan_sweep(c, world.size());
  EXPECT_EQ(plans.size(), 1u);
  comm::Roll roll(world, host_name());
  SweepComms sweep(c, plans, world, roll);
  start_configuration(sweep, plans.at(0), false);
  return run_configuration(c, plans.at(0), sweep);
}

// Exchanges of one rank's actions in a step: two in an F, a B or an I, four in an F&B pair, none in a W.
int exchanges_of(const std::vector<analysis::Action>& actions) {
  int n = 0;
  for (const auto& a : actions) n += a.kind == analysis::Kind::FB ? 4 : a.kind == analysis::Kind::W ? 0 : 2;
  return n;
}

}  // namespace

TEST(ExpertTraffic, ExchangesAndTheirBytesAreTheFormula) {
  if (pipebench::testing::world_size() != 4) GTEST_SKIP() << "1x2x2 with ep 2 needs 4 ranks";
  auto world = comm::make_communicator("mpi", MPI_COMM_WORLD, "world");
  for (const char* schedule : {"1f1b", "zb-h1", "dualpipev"})
    for (double x : {1.0, 1.5}) {
      const RunSettings c = traffic_config(schedule, x, true);
      const auto o = run_one(c, *world);
      if (world->rank() != 0) continue;
      ASSERT_TRUE(o);
      SCOPED_TRACE(std::string(schedule) + " imbalance " + std::to_string(x));
      const topology::Grid grid = run_grid(c, c.mappings[0]);
      const auto blocks = comm::bench::uneven_blocks(kBytes / 2, 2, x);
      const analysis::Schedule s = plan_sweep(c, 4).at(0).schedule;
      // (step, rank) -> (stage, mb, exchange) -> count
      std::map<std::pair<int, int>, std::map<std::tuple<int, int, int>, int>> seen;
      for (const CommRecord& r : o->run.comms) {
        if (r.group != CommGroup::ep) continue;
        EXPECT_EQ(r.kind, CommKind::AllToAll);
        const int member = grid.coords(r.global_rank).ep;
        // The expert side: what this member's experts take from both members, and send back.
        EXPECT_EQ(r.bytes, static_cast<std::int64_t>(2 * blocks[static_cast<std::size_t>(member)])) << "rank " << r.global_rank;
        EXPECT_LE(r.t_posted, r.t_done);
        ++seen[{r.step, r.global_rank}][{r.stage, r.mb, r.tag}];
      }
      for (int step = 0; step < c.steps; ++step)
        for (int g = 0; g < 4; ++g) {
          const auto& mine = seen[{step, g}];
          int total = 0;
          for (const auto& [key, n] : mine) {
            EXPECT_EQ(n, 1) << "rank " << g << " stage " << std::get<0>(key) << " mb " << std::get<1>(key) << " exchange "
                            << std::get<2>(key);
            total += n;
          }
          EXPECT_EQ(total, exchanges_of(s.actions[static_cast<std::size_t>(grid.coords(g).pp)])) << "rank " << g;
          // Each (chunk, micro-batch) of the rank: its F's dispatch and combine, its backward's two.
          for (const auto& a : s.actions[static_cast<std::size_t>(grid.coords(g).pp)])
            if (a.kind == analysis::Kind::F || a.kind == analysis::Kind::FB) {
              for (int e : {0, 1}) EXPECT_EQ(mine.count({a.stage, a.mb, e}), 1u) << "rank " << g << " " << a.stage << "F" << a.mb;
            }
        }
    }
}

TEST(ExpertTraffic, DualPipeVOverlapKeepsEachExchangeInFlightDuringCompute) {
  if (pipebench::testing::world_size() != 4) GTEST_SKIP() << "1x2x2 with ep 2 needs 4 ranks";
  auto world = comm::make_communicator("mpi", MPI_COMM_WORLD, "world");
  double exposed[2] = {0, 0};
  for (bool overlap : {true, false}) {
    const RunSettings c = traffic_config("dualpipev", 1, overlap);
    const auto o = run_one(c, *world);
    if (world->rank() != 0) continue;
    ASSERT_TRUE(o);
    // The overlapped pairs' exchanges: (step, rank, stage, mb, exchange) of the FB actions.
    std::map<std::tuple<int, int, int, int>, bool> in_pair;
    for (const ActionRecord& a : o->run.actions)
      if (a.kind == analysis::Kind::FB) {
        for (int e : {1, 0}) in_pair[{a.step, a.global_rank, a.stage, a.mb * 4 + e}] = true;
        for (int e : {2, 3}) in_pair[{a.step, a.global_rank, a.b_stage, a.b_mb * 4 + e}] = true;
      }
    ASSERT_FALSE(in_pair.empty());
    // A piece of the pair's compute: half a chunk's F (tf / v / 2 = 0.5 ms), the shortest of the four.
    const double piece = 0.5e-3;
    int checked = 0;
    for (const CommRecord& r : o->run.comms) {
      if (r.group != CommGroup::ep || !in_pair.count({r.step, r.global_rank, r.stage, r.mb * 4 + r.tag})) continue;
      const double waited = std::max(0.0, r.t_done - r.t_wait), in_flight = r.t_done - r.t_posted;
      EXPECT_LE(waited, in_flight + 1e-9);  // the exposed part is part of the transfer
      if (overlap) {
        EXPECT_GE(r.t_wait - r.t_posted, 0.9 * piece) << "the wait began before a piece of compute ran";
      } else {
        // Only the post lies between t_posted and t_wait (no compute): 5 ms covers a rank descheduled
        // on the oversubscribed cores in the middle of it.
        EXPECT_GE(waited, in_flight - 5e-3) << "without overlap the whole exchange is waited for";
      }
      exposed[overlap ? 0 : 1] += waited;
      ++checked;
    }
    EXPECT_GT(checked, 0);
    // The prediction charges each action what it took, exposed exchanges included (replay_steps):
    // dropping them from it would miss by about the exposed time on the critical path.
    const RunSummary& sum = o->run.summary;
    const double ep_exposed = sum.extra.at("ep_exposed");
    EXPECT_GT(ep_exposed, 0.0);
    EXPECT_LT(std::abs(sum.makespan - sum.simulated_makespan), std::min(0.5 * ep_exposed, 0.1 * sum.makespan))
        << "measured makespan " << sum.makespan << " s, simulated " << sum.simulated_makespan << " s, exposed a2a "
        << ep_exposed << " s per step";
  }
  if (world->rank() == 0) {
    EXPECT_LT(exposed[0], exposed[1]) << "exposed with overlap " << exposed[0] << " s, without " << exposed[1];
  }
}
