#pragma once
// Event-driven simulation of a schedule: each rank executes its list in order; an action starts when
// its rank is free and its inputs have arrived (sends are non-blocking). Cost is linear in actions.
#include <vector>

#include "analysis/metrics.hpp"
#include "analysis/schedule.hpp"
#include "analysis/timeline.hpp"

namespace pipebench::analysis {

// Duration of one chunk's action on one stage (already divided by v and scaled by stage multipliers).
struct StageTimes {
  double f = 0;
  double b = 0;  // full backward; the input part I takes b - w
  double w = 0;
};

struct SimCosts {
  std::vector<StageTimes> stage;  // one per stage of the schedule
  // An overlapped F&B pair takes overlap_factor * (F of its forward stage + B of its backward stage).
  double overlap_factor = 1.0;
  // Time for an activation or gradient to cross between two different ranks (0 on the same rank).
  double p2p = 0;
  // Per stage boundary b (between stage b and b + 1, either direction): that link's time instead of
  // p2p, so a link inside a node and one across nodes each cost their own; empty, or an entry < 0: p2p.
  std::vector<double> link_p2p;
  // Per stage boundary: the least time an input from another rank over it takes after its receiver
  // reaches the receive, however early it was sent (a rendezvous that needs both ranks inside MPI, as
  // UCX's over TCP: docs/netns.md); empty, or an entry < 0: 0.
  std::vector<double> link_wait;
  // Time a rank spends between two of its actions (an executor's own work; 0 in an ideal pipeline).
  double gap = 0;
  // For an action that waits for two inputs from other ranks (an overlapped F&B pair): the time from
  // the later of the two being produced to both having arrived. Two random delays end later than one
  // on average, so a measurement feeds its own figure; < 0: p2p.
  double p2p_pair = -1;
  // Per action, its own duration instead of its stage's kind (a measured run: an action's time depends
  // on where it sits, e.g. an expert exchange exposed in an F alone and hidden in an F&B pair), at
  // action_slot(); empty, or an entry < 0: the stage times above.
  std::vector<double> action;
};

// The place of action `a` of `s` in SimCosts::action: one per (kind, stage, micro-batch), an F&B pair
// at its forward's; action_slots(s) places in all.
inline std::size_t action_slot(const Schedule& s, const Action& a) {
  return (static_cast<std::size_t>(a.kind) * static_cast<std::size_t>(s.num_stages()) + static_cast<std::size_t>(a.stage)) *
             static_cast<std::size_t>(s.m) +
         static_cast<std::size_t>(a.mb);
}
inline std::size_t action_slots(const Schedule& s) {
  return static_cast<std::size_t>(kNumKinds) * static_cast<std::size_t>(s.num_stages()) * static_cast<std::size_t>(s.m);
}

// Per-kind times for one rank's whole share of layers (docs/design.md "Vocabulary"): chunk times are tf/v, tb/v, tw/v,
// times stage_mult[depth] when given (one multiplier per stage of a model copy). t_overlap is the
// overlapped F&B time for the whole share; a negative value means tf + tb.
SimCosts uniform_costs(const Schedule& s, double tf, double tb, double tw, double t_overlap = -1,
                       const std::vector<double>& stage_mult = {}, double p2p = 0);

struct SimResult {
  Metrics metrics;
  Timeline timeline;  // every action with its start and end
};

// Throws pipebench::Error naming the blocked ranks and actions if the schedule deadlocks.
SimResult simulate(const Schedule& s, const SimCosts& costs);

struct SimOptions {
  // Keep every action's times. Without it only the metrics are computed, in the same pass and to the
  // same bits, and memory does not grow with a timeline.
  bool timeline = true;
};

// simulate(), with the timeline (when kept) listed rank by rank, each rank's actions in its own order,
// which is time order: what a stable sort of simulate()'s timeline by (rank, start) gives, without
// the sort. Throws the same errors as simulate().
SimResult simulate(const Schedule& s, const SimCosts& costs, const SimOptions& options);

}  // namespace pipebench::analysis
