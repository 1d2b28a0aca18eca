#pragma once
// From the records of every rank to the figures of one run (docs/design.md "Metrics"): clocks aligned to
// rank 0, the metrics of each timed step per pipeline, medians over steps, and the prediction: the
// simulator fed with the measured median duration of each action kind on each stage and the measured
// point-to-point time, and the analytic formula.
#include <optional>
#include <string>
#include <vector>

#include "analysis/formulas.hpp"
#include "analysis/memory.hpp"
#include "analysis/schedule.hpp"
#include "analysis/simulate.hpp"
#include "bench/run/clock_sync.hpp"
#include "bench/run/executor.hpp"
#include "bench/results/records.hpp"
#include "bench/results/steps.hpp"
#include "kernels/workload.hpp"
#include "topology/grid.hpp"

namespace pipebench::bench {

struct MeasureInput {
  std::vector<ActionRecord> actions;  // every rank's timed steps, local clocks
  std::vector<CommRecord> comms;
  std::vector<ClockOffset> clocks;              // per global rank
  std::vector<std::vector<StepTiming>> timing;  // per global rank, per timed step, local clocks
  std::vector<std::string> hosts;               // per global rank
  std::vector<std::string> affinities;          // per global rank: cpu_affinity()
  int group = 0;                                // interleaved micro-batch group, for the formula
  // The formula's inputs where the workload has configured times (synthetic): whole-share tf, tb, tw,
  // t_overlap (< 0: tf + tb) and whether the stages are uniform. Without them the formula is fed the
  // measured medians, and its conditions (say W <= F) would hinge on microseconds of noise.
  struct Nominal {
    double tf = 0, tb = 0, tw = 0, t_overlap = -1;
    bool uniform = true;
  };
  std::optional<Nominal> nominal;
  std::vector<analysis::StashBytes> stash;  // per stage, for the predicted activation memory
  std::vector<std::vector<kernels::Workload::Figure>> figures;  // per global rank
  std::vector<double> blas_rate;                                // per global rank, 0: not measured
};

// The simulator's replay of a measured configuration: what it was fed (the measured op times, p2p time
// and executor overhead) and what it predicted, for the table, the report and the tests. (The planner's
// analysis::plan::Prediction predicts a configuration that has not run.)
struct Simulation {
  analysis::SimCosts costs;
  // Fed each action's median duration over steps and pipelines: the drawn timeline and the predicted
  // peaks. The summary's simulated makespan and bubble are the medians of replay_steps() instead.
  analysis::SimResult sim;
  analysis::AnalyticFigures analytic;  // fed the measured whole-share times
  double executor_overhead_per_action = 0;  // seconds, median over ranks and steps
  analysis::Timeline first_step;            // pipeline 0, first timed step, aligned
};

// A measured configuration: the run as it is stored (its config, key and metadata left for the caller)
// and its simulated replay.
struct Measurement {
  RunResult run;
  Simulation simulation;
};

// Aligns the records in `in` to rank 0's clock relative to each step's start, and computes every figure
// of the run from them: ranks, stages, summary, and the records themselves.
Measurement measure(const analysis::Schedule& s, const topology::Grid& grid, MeasureInput in);

// Per stage, the median measured duration of each kind in `actions` as the simulator's costs, with
// the F&B overlap factor measured too and `p2p` as the point-to-point time. measure() feeds the
// prediction with it; `pipebench report --html` rebuilds a stored run's simulated timeline with it.
// With each action's own duration too (SimCosts::action), the median over the records of it.
analysis::SimCosts measured_costs(const analysis::Schedule& s, const std::vector<ActionRecord>& actions, double p2p);

// Each of the first `steps` timed steps of each pipeline replayed by the simulator with its own actions'
// measured durations (aligned records) and `costs`' p2p times and gap: per step, the makespan (the
// slowest pipeline's) and the bubble over all ranks, defined as the measured ones are. What the
// table's simulated figures are the medians of: the replay charges what each action really took,
// exposed expert exchanges and waits for ep partners in other pipelines included, and models only the
// waits between actions (docs/run.md "The prediction").
struct StepReplays {
  std::vector<double> makespans, bubbles;
};
StepReplays replay_steps(const analysis::Schedule& s, const topology::Grid& grid, const std::vector<ActionRecord>& actions,
                         const analysis::SimCosts& costs, int steps);

}  // namespace pipebench::bench
