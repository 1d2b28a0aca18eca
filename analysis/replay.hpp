#pragma once
// The dependency engine under the validator and the simulator. It executes each rank's action list in
// order: an action starts when its rank is free and every output it depends on has arrived. Sends are
// non-blocking, so a rank never waits for its own outputs to be consumed.
//
// Dependencies of one (stage s, micro-batch k), within one model copy (pipe):
//   F(s,k)      after F(s-1,k)                       (none on the first stage)
//   B/I(s,k)    after F(s,k) and B/I(s+1,k)          (the last stage needs only its own F)
//   W(s,k)      after I(s,k)
//   F&B pair    after the dependencies of both halves
// Work is O(actions + ranks): a blocked rank parks on the one output it waits for and is woken when
// that output is produced (by the rank of the neighbouring stage, the only other consumer).
#include <functional>
#include <string>

#include "analysis/error.hpp"
#include "analysis/schedule.hpp"
#include "analysis/timeline.hpp"

namespace pipebench::analysis {

// A schedule that breaks a rule. The message names the rank, the step (index in its list), the action
// and the rule, followed by the grid of actions around it.
class ScheduleError : public UsageError {
 public:
  using UsageError::UsageError;
};

// Duration of an action on a rank, in any unit.
using DurationFn = std::function<double(int rank, const Action& a)>;

// Replays the schedule. `p2p` is added to an input that comes from another rank; `gap` separates two
// consecutive actions of a rank (a real executor's own work between them); `p2p_pair`, when >= 0,
// replaces p2p for an action with two inputs from other ranks (SimCosts::p2p_pair); `link_p2p`, when
// not empty, holds one time per stage boundary in p2p's place (SimCosts::link_p2p), and `link_wait` the
// least time such an input takes after its receiver reaches it (SimCosts::link_wait). The timeline lists
// every action in the order it was resolved. Throws ScheduleError if ranks are left blocked (deadlock,
// or an action that needs a later action of its own rank).
// Precondition: every action names a stage and micro-batch in range (validate() checks this first).
Timeline replay(const Schedule& s, const DurationFn& duration, double p2p = 0, double gap = 0, double p2p_pair = -1,
                const std::vector<double>& link_p2p = {}, const std::vector<double>& link_wait = {});

// Rows of the grid text form around (rank, step), the offending cell in brackets, for error messages.
std::string grid_window(const Schedule& s, int rank, int step, int radius = 4);

}  // namespace pipebench::analysis
