#pragma once
// The planner's search (docs/plan.md): every t x p x d = N, v, b, schedule, recompute, sequence
// parallelism and ZeRO-1 the lists allow, screened in closed form, then simulated in order of the
// closed-form estimate while a configuration can still beat the K-th best simulated one.
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/plan/model.hpp"

namespace pipebench::analysis::plan {

struct SearchSpace {
  int gpus = 0;                               // t cp p d
  int cp = 1;                                 // context-parallel size of every layout (cps empty)
  std::vector<int> cps;                       // context-parallel sizes searched; empty: {cp}
  std::vector<int> eps;                       // expert-parallel sizes; empty: 1, or for an MoE model
                                              // every power of two dividing E (and cp d)
  std::vector<std::array<int, 3>> mappings;  // t, p, d; empty: every divisor triple of gpus / cp
  std::vector<std::string> schedules;        // empty: every generated schedule
  std::vector<int> vs;                        // chunks for schedules that take a v; empty: 2, 4
  std::vector<int> micro_batch_sizes;         // empty: 1, 2, 4, 8
  std::vector<Recompute> recomputes;          // empty: all three
  std::vector<bool> sequence_parallel;        // empty: off and on (on only where t > 1)
  std::vector<int> zero;                      // ZeRO stages; empty: 0 and 1 (1 only where d > 1)
  int top = 10;
};

struct Infeasible {
  std::string reason;
  std::int64_t count = 0;
  std::string example;  // the detail of the closest one (the fastest in closed form)
  double example_step = -1;
};

struct SearchResult {
  std::int64_t evaluated = 0;  // configurations screened
  std::int64_t simulated = 0;
  double seconds = 0;
  std::vector<Prediction> top;           // fastest first, all fit
  std::vector<Infeasible> infeasible;    // by reason, most frequent first
};

SearchResult search(const Problem& pr, const SearchSpace& space);

}  // namespace pipebench::analysis::plan
