// The simulator's inputs from the measured records (bench/run/measure.hpp): each stage's median op
// times, each action's own duration, and the replay of every timed step with its own durations.
#include <algorithm>
#include <cstdint>

#include "analysis/stats.hpp"
#include "bench/run/measure.hpp"

namespace pipebench::bench {

using analysis::Kind;
using analysis::median;

namespace {

// The slot of a record in SimCosts::action, or -1 where it is not an action of `s` (a damaged file).
long slot_of(const analysis::Schedule& s, const ActionRecord& a) {
  if (a.stage < 0 || a.stage >= s.num_stages() || a.mb < 0 || a.mb >= s.m || static_cast<int>(a.kind) >= analysis::kNumKinds)
    return -1;
  return static_cast<long>(analysis::action_slot(s, {a.kind, a.stage, a.mb, a.b_stage, a.b_mb}));
}

}  // namespace

analysis::SimCosts measured_costs(const analysis::Schedule& s, const std::vector<ActionRecord>& actions, double p2p) {
  const int S = s.num_stages();
  std::vector<std::vector<double>> d(static_cast<std::size_t>(S) * 4);  // F, B, I, W
  for (const auto& a : actions)
    if (a.kind != Kind::FB) d[static_cast<std::size_t>(a.stage) * 4 + static_cast<int>(a.kind)].push_back(a.t_end - a.t_start);
  analysis::SimCosts c;
  c.stage.resize(S);
  for (int st = 0; st < S; ++st) {
    auto med = [&](Kind k) { return median(d[static_cast<std::size_t>(st) * 4 + static_cast<int>(k)]); };
    const double f = med(Kind::F), b = med(Kind::B), i = med(Kind::I), w = med(Kind::W);
    // A stage that ran only full backwards has no W part; one that ran split backwards has no B.
    const bool split = !d[static_cast<std::size_t>(st) * 4 + static_cast<int>(Kind::I)].empty();
    c.stage[st] = split ? analysis::StageTimes{f, i + w, w} : analysis::StageTimes{f, b, 0};
  }
  // F&B pairs: how their duration compares with their two halves run apart.
  std::vector<double> ratio;
  for (const auto& a : actions)
    if (a.kind == Kind::FB) {
      const double apart = c.stage[a.stage].f + c.stage[a.b_stage].b;
      if (apart > 0) ratio.push_back((a.t_end - a.t_start) / apart);
    }
  c.overlap_factor = ratio.empty() ? 1.0 : median(ratio);
  c.p2p = p2p;
  // Each action's own duration, median over steps and data-parallel replicas: what the replay charges.
  // The stage medians above cannot say that an action's expert exchange was exposed (an F alone) or
  // hidden (in an F&B pair), nor which micro-batch's waited on its ep partner (docs/run.md "Expert traffic").
  std::vector<std::vector<double>> own(analysis::action_slots(s));
  for (const auto& a : actions)
    if (const long k = slot_of(s, a); k >= 0) own[k].push_back(a.t_end - a.t_start);
  c.action.assign(own.size(), -1.0);
  for (std::size_t k = 0; k < own.size(); ++k)
    if (!own[k].empty()) c.action[k] = median(own[k]);
  return c;
}

StepReplays replay_steps(const analysis::Schedule& s, const topology::Grid& grid, const std::vector<ActionRecord>& actions,
                         const analysis::SimCosts& costs, int steps) {
  const int pipes = grid.num_groups(topology::GroupKind::pp), world = grid.world_size();
  // The records of each (step, pipeline), by index: one action-time table at a time, not one per step
  // and pipeline (rank 0 may hold 2^21 pairs' records: bench/run/plan.hpp).
  std::vector<std::vector<std::uint32_t>> of(static_cast<std::size_t>(steps) * pipes);
  for (std::size_t i = 0; i < actions.size(); ++i) {
    const ActionRecord& a = actions[i];
    if (slot_of(s, a) < 0 || a.step < 0 || a.step >= steps || a.global_rank < 0 || a.global_rank >= world) continue;
    of[static_cast<std::size_t>(a.step) * pipes + grid.group_index(topology::GroupKind::pp, a.global_rank)].push_back(
        static_cast<std::uint32_t>(i));
  }
  StepReplays out;
  analysis::SimCosts c = costs;
  std::vector<double> median_of = costs.action;  // an action without a record in a step: its median, else its stage's
  median_of.resize(analysis::action_slots(s), -1.0);
  for (int k = 0; k < steps; ++k) {
    double makespan = 0, busy = 0;
    for (int g = 0; g < pipes; ++g) {
      c.action = median_of;
      for (std::uint32_t i : of[static_cast<std::size_t>(k) * pipes + g])
        c.action[slot_of(s, actions[i])] = actions[i].t_end - actions[i].t_start;
      const analysis::Metrics m = analysis::simulate(s, c, analysis::SimOptions{false}).metrics;
      makespan = std::max(makespan, m.makespan);
      for (const auto& r : m.ranks) busy += r.busy;
    }
    out.makespans.push_back(makespan);
    out.bubbles.push_back(makespan > 0 ? 1.0 - busy / (world * makespan) : 0.0);
  }
  return out;
}

}  // namespace pipebench::bench
