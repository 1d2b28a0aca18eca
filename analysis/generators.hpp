#pragma once
// Schedule generators by name. Action orders follow PyTorch's torch.distributed.pipelining and
// Megatron-Core for the same parameters (docs/schedules.md says where and why pipebench differs).
#include <string>
#include <vector>

#include "analysis/schedule.hpp"

namespace pipebench::analysis {

struct ScheduleParams {
  std::string name;
  int p = 1;
  int m = 1;
  int v = 0;      // chunks per rank; 0 = the schedule's default
  int group = 0;  // interleaved: micro-batches per group (Megatron); 0 = default (p)
};

struct ScheduleInfo {
  std::string name;
  std::string summary;
  int default_v = 1;
  bool fixed_v = true;         // v cannot be chosen
  bool split_backward = false;  // uses I and W instead of B
};

const std::vector<ScheduleInfo>& schedule_catalog();
const ScheduleInfo& schedule_info(const std::string& name);  // throws UsageError listing the names

// Generates the schedule; throws UsageError naming the bad parameter and the allowed range, and for
// p*v*m over kMaxSchedulePairs (analysis/limits.hpp) before building anything. The result is valid by
// construction (the tests validate every generator over a grid of p, m, v).
Schedule make_schedule(const ScheduleParams& params);

}  // namespace pipebench::analysis
