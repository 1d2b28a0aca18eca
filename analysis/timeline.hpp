#pragma once
// One timed action: what the simulator predicts and what the executor measures, in the same form, so
// that one function (analysis/metrics.hpp) computes every metric from either.
#include <vector>

#include "analysis/schedule.hpp"

namespace pipebench::analysis {

struct TimedOp {
  int rank = 0;
  Action action;
  double start = 0;  // seconds (simulator: schedule time units), relative to the step's start
  double end = 0;
};

using Timeline = std::vector<TimedOp>;

}  // namespace pipebench::analysis
