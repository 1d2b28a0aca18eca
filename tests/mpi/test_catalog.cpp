// Every row of the schedule catalog end to end on the job's ranks: generated, validated, simulated
// (against the row's formulas where they hold), planned by the performance model and run for real
// with the synthetic workload. A row added to analysis/catalog.cpp is covered without a list of names.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>

#include "analysis/catalog.hpp"
#include "analysis/plan/model.hpp"
#include "analysis/simulate.hpp"
#include "analysis/validate.hpp"
#include "bench/run/configuration.hpp"
#include "bench/run/job.hpp"
#include "world.hpp"

using namespace pipebench;
using namespace pipebench::bench;
using pipebench::testing::world_size;

namespace {

// The smallest m of the form 2kp that the row's m rule accepts (2p for every row today).
int micro_batches(const analysis::ScheduleRow& row, int p) {
  for (int m = 2 * p;; m += 2 * p)
    if (m >= row.m_rule.min_per_rank * p) return m;
}

double idle_in_measure(const analysis::Metrics& mt, analysis::IdleMeasure measure, int rank) {
  switch (measure) {
    case analysis::IdleMeasure::Idle: return mt.ranks[rank].idle;
    case analysis::IdleMeasure::MaxIdle: return mt.max_idle();
    case analysis::IdleMeasure::SpanBubble: return mt.ranks[rank].span_bubble;
    case analysis::IdleMeasure::MaxSpanBubble: return mt.max_span_bubble();
  }
  return -1;
}

// Times (tf, tb, tw) = (1, 2, 1) meet every row's conditions (F = I = W, no overlap gain): the formulas
// that hold must be the simulation's figures.
void simulate_against_formulas(const analysis::Schedule& s) {
  const analysis::SimResult sim = simulate(s, analysis::uniform_costs(s, 1, 2, 1));
  analysis::FormulaParams q;
  q.schedule = s.name, q.p = s.p, q.m = s.m, q.v = s.v();
  const analysis::AnalyticFigures a = analysis::analytic_figures(q);
  const analysis::Metrics& mt = sim.metrics;
  ASSERT_TRUE(a.makespan.value) << a.makespan.reason;
  EXPECT_NEAR(mt.makespan, *a.makespan.value, 1e-9 * mt.makespan);
  if (a.bubble_fraction.value) {
    EXPECT_NEAR(mt.bubble_fraction, *a.bubble_fraction.value, 1e-9);
  }
  ASSERT_TRUE(a.peak_inflight.value) << a.peak_inflight.reason;
  for (int r = 0; r < s.p; ++r) {
    if (a.idle.value) {
      EXPECT_NEAR(idle_in_measure(mt, a.idle_measure, r), *a.idle.value, 1e-9 * mt.makespan);
    }
    EXPECT_EQ(mt.ranks[r].peak_inflight, (*a.peak_inflight.value)[r]) << "rank " << r;
  }
}

// The performance model's prediction for a small transformer on the same pipeline.
void plan_it(const analysis::ScheduleRow& row, int p, int m) {
  namespace plan = analysis::plan;
  plan::Problem pr;
  pr.model.name = "small";
  pr.model.layers = 8, pr.model.hidden = 256, pr.model.heads = 8, pr.model.seq = 128, pr.model.vocab = 1024;
  pr.machine = plan::machine_preset("h100-80gb");
  pr.global_batch = m;
  plan::Layout l;
  l.schedule = row.name, l.p = p;
  ASSERT_EQ(plan::check_layout(pr, l).detail, "");
  const plan::Prediction pd = plan::evaluate(pr, l);
  EXPECT_TRUE(pd.simulated);
  EXPECT_EQ(pd.m, m);
  EXPECT_EQ(pd.v, row.default_v);
  EXPECT_GT(pd.step_time, 0);
  EXPECT_GE(pd.bubble_fraction, 0);
  EXPECT_LT(pd.bubble_fraction, 1);
  EXPECT_TRUE(pd.fits);
  const plan::Screen sc = plan::screen(pr, l, plan::stage_plan(pr, l));
  EXPECT_LE(sc.step_lower_bound, pd.step_time * (1 + 1e-12));
}

RunSettings synthetic_run(const std::string& schedule, int p, int m) {
  RunSettings c;
  c.schedules = {schedule};
  c.mappings = {{1, p, 1}};
  c.microbatches = {m};
  c.synthetic.times.tf = seconds(200e-6);
  c.synthetic.times.tb = seconds(400e-6);
  c.synthetic.times.tw = seconds(200e-6);
  c.synthetic.activation_bytes = 16 << 10;
  c.synthetic.p2p_bytes = 1 << 10;
  c.warmup = 0;
  c.steps = 1;
  c.timeout = seconds(30);
  return c;
}

// Runs it on the ranks as `run` does; on rank 0, each rank recorded exactly its list.
void run_it(const analysis::Schedule& s, int m, comm::Communicator& world) {
  const RunSettings c = synthetic_run(s.name, s.p, m);
  const std::vector<Plan> plans = plan_sweep(c, s.p);
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].schedule.actions, s.actions);  // run plans the schedule that was simulated
  comm::Roll roll(world, host_name());
  SweepComms sweep(c, plans, world, roll);
  start_configuration(sweep, plans[0], false);
  const auto o = run_configuration(c, plans[0], sweep);
  if (world.rank() != 0) return;
  ASSERT_TRUE(o);
  EXPECT_EQ(o->run.config.at("schedule"), s.name);
  for (int r = 0; r < s.p; ++r) {
    std::vector<const ActionRecord*> mine;
    for (const auto& a : o->run.actions)
      if (a.rank == r) mine.push_back(&a);
    std::sort(mine.begin(), mine.end(), [](auto* x, auto* y) { return x->t_start < y->t_start; });
    std::vector<analysis::Action> got;
    for (const auto* a : mine) got.push_back({a->kind, a->stage, a->mb, a->b_stage, a->b_mb});
    EXPECT_EQ(got, s.actions[r]) << "rank " << r;
  }
  for (const auto& rs : o->run.ranks)
    EXPECT_EQ(rs.peak_inflight, rs.predicted_peak_inflight) << "rank " << rs.global_rank;
}

}  // namespace

TEST(Catalog, EveryRowGeneratesSimulatesPlansAndRuns) {
  const int p = world_size();
  auto world = comm::make_communicator("mpi", MPI_COMM_WORLD, "world");
  int ran = 0;
  for (const analysis::ScheduleRow& row : analysis::schedule_catalog()) {
    if (row.m_rule.even && p % 2) continue;  // DualPipe pairs ranks from both ends
    SCOPED_TRACE(row.name);
    const int m = micro_batches(row, p);
    const analysis::Schedule s = analysis::make_schedule({row.name, p, m});
    analysis::validate(s);
    simulate_against_formulas(s);
    plan_it(row, p, m);
    run_it(s, m, *world);
    ++ran;
  }
  if (p % 2 == 0) {
    EXPECT_EQ(ran, static_cast<int>(analysis::schedule_catalog().size()));
  }
}
