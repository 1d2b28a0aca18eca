#pragma once
// The planner tests' problems and layouts, in one line each.
#include <cstdint>
#include <string>

#include "analysis/plan/model.hpp"

namespace pipebench::analysis::plan::testing {

inline Problem problem(const std::string& model, const std::string& machine, std::int64_t batch) {
  Problem pr;
  pr.model = model_preset(model);
  pr.machine = machine_preset(machine);
  pr.global_batch = batch;
  return pr;
}

inline Layout layout(int t, int p, int d, const std::string& schedule, int b, Recompute rc, bool sp = false, int zero = 0,
                     int v = 0) {
  Layout l;
  l.t = t, l.p = p, l.d = d, l.schedule = schedule, l.micro_batch_size = b, l.recompute = rc;
  l.sequence_parallel = sp, l.zero = zero, l.v = v;
  return l;
}

}  // namespace pipebench::analysis::plan::testing
