#pragma once
// Where one training step's time goes, in seconds: one type for the step the planner predicts and the
// step a run measured, so that the two read the same way. Two producers fill it, each the parts it can
// tell apart, and the parts each fills add up to its step time; the others stay 0.
//   predicted  analysis/plan/model.cpp evaluate(): the busiest rank of the configuration (docs/plan.md,
//              `plan`'s table and its JSON "breakdown")
//   measured   bench/cmd/report_input.cpp breakdown_of(): a stored run, averaged over its ranks (the
//              HTML report's stacked plot, docs/report.md)
namespace pipebench::analysis {

struct Breakdown {
  // Both: the time in actions. Predicted: their compute, without the tensor-parallel collectives
  // (`tp`); measured: the ranks' busy time, whatever their actions did.
  double compute = 0;
  // Predicted: the busiest rank's tensor-parallel collectives. Measured: 0 (inside `compute`).
  double tp = 0;
  // Both: what pipeline communication adds to the makespan beyond the schedule's own idle time.
  // Predicted: the simulated makespan with the transfers minus without them; measured: the rest of the
  // makespan, waiting for inputs (messages, a late neighbour).
  double pp = 0;
  // Both: the step after the pipeline's makespan. Predicted: the exposed gradient reduction (the
  // optimizer is `other`); measured: step time - makespan, gradient sync and optimizer together (a run
  // does not time them apart).
  double dp = 0;
  // Both: the idle time the schedule itself implies. Predicted: the makespan without transfers minus the
  // busiest rank's busy time; measured: compute x f / (1 - f), f the idle fraction of the simulator fed
  // the run's stage times without communication or overhead.
  double bubble = 0;
  // Predicted: the optimizer step. Measured: 0 (inside `dp`).
  double other = 0;
  // Measured: the executor's own time between actions (executor_overhead_per_action x actions per
  // rank). Predicted: 0 (the machine's action gap is simulated, inside the makespan's parts).
  double overhead = 0;
};

}  // namespace pipebench::analysis
