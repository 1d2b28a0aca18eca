#pragma once
#include "analysis/replay.hpp"
#include "analysis/schedule.hpp"

namespace pipebench::analysis {

// Checks any schedule, generated or loaded from CSV, and throws ScheduleError naming the rank, the
// step and the rule it breaks, with the grid around it:
//  - shape: p, m, pipes and the stage->rank map are consistent; every action names a stage and a
//    micro-batch in range, of the same model copy, and runs on the rank that holds its stage;
//  - completeness: every (stage, micro-batch) gets exactly one F and either one B or one I and one W;
//  - dependencies and deadlock: replaying the lists in order, with non-blocking sends, finishes.
void validate(const Schedule& s);

// The shape and completeness checks of validate(), without its replay: for a caller that replays the
// schedule anyway (simulate() reports a deadlock with the same message).
void validate_without_replay(const Schedule& s);

}  // namespace pipebench::analysis
