#pragma once
// Activation memory of a schedule, from what each stage holds per micro-batch: from the end of its F to
// the end of its I (or B), the forward stash; from the end of I to the end of W, the weight stash (the
// split backward keeps what W needs, which is not what I needed). A rank runs its list in order, so its
// peak follows from the order alone, whatever the timing.
#include <vector>

#include "analysis/schedule.hpp"

namespace pipebench::analysis {

struct StashBytes {
  double forward = 0;  // held from the end of F to the end of I (or B)
  double weight = 0;   // held from the end of I to the end of W
};

// Per rank, the most bytes held right after any of its actions (an overlapped F&B pair counts its new
// forward stash before its backward releases the other micro-batch). `per_stage` has one entry per
// stage of the schedule.
std::vector<double> peak_activation_bytes(const Schedule& s, const std::vector<StashBytes>& per_stage);

}  // namespace pipebench::analysis
