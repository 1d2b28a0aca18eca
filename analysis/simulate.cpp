#include "analysis/simulate.hpp"

#include <string>

#include "analysis/error.hpp"
#include "analysis/replay.hpp"
#include "analysis/replay_engine.hpp"

namespace pipebench::analysis {

SimCosts uniform_costs(const Schedule& s, double tf, double tb, double tw, double t_overlap,
                       const std::vector<double>& stage_mult, double p2p) {
  auto positive = [](double x, const char* what) {
    if (!(x > 0)) throw UsageError(std::string(what) + " = " + std::to_string(x) + " is not allowed: must be > 0");
  };
  positive(tf, "tf");
  positive(tb, "tb");
  if (!(tw >= 0 && tw < tb))
    throw UsageError("tw = " + std::to_string(tw) + " is not allowed: the weight part of the backward must be in [0, tb = " +
                     std::to_string(tb) + ")");
  if (t_overlap >= 0) positive(t_overlap, "t-overlap");
  if (!(p2p >= 0)) throw UsageError("p2p time = " + std::to_string(p2p) + " is not allowed: must be >= 0");
  const int per_pipe = s.stages_per_pipe();
  if (!stage_mult.empty() && static_cast<int>(stage_mult.size()) != per_pipe)
    throw UsageError("stage cost list has " + std::to_string(stage_mult.size()) + " entries; schedule '" + s.name +
                     "' has " + std::to_string(per_pipe) + " stages per model copy (p*v)");
  for (double x : stage_mult) positive(x, "stage cost multiplier");

  SimCosts c;
  const double v = s.v();
  c.stage.resize(s.num_stages());
  for (int st = 0; st < s.num_stages(); ++st) {
    const double k = stage_mult.empty() ? 1.0 : stage_mult[s.depth_of_stage(st)];
    c.stage[st] = StageTimes{k * tf / v, k * tb / v, k * tw / v};
  }
  c.overlap_factor = t_overlap < 0 ? 1.0 : t_overlap / (tf + tb);
  c.p2p = p2p;
  return c;
}

namespace {

void check_costs(const Schedule& s, const SimCosts& costs) {
  if (static_cast<int>(costs.stage.size()) != s.num_stages())
    throw Error("simulate: costs for " + std::to_string(costs.stage.size()) + " stages, schedule has " +
                std::to_string(s.num_stages()));
  if (!costs.action.empty() && costs.action.size() != action_slots(s))
    throw Error("simulate: action times for " + std::to_string(costs.action.size()) + " places, schedule has " +
                std::to_string(action_slots(s)));
  if (!costs.link_p2p.empty() && static_cast<int>(costs.link_p2p.size()) != s.num_stages() - 1)
    throw Error("simulate: link times for " + std::to_string(costs.link_p2p.size()) + " stage boundaries, schedule has " +
                std::to_string(s.num_stages() - 1));
  if (!costs.link_wait.empty() && static_cast<int>(costs.link_wait.size()) != s.num_stages() - 1)
    throw Error("simulate: link waits for " + std::to_string(costs.link_wait.size()) + " stage boundaries, schedule has " +
                std::to_string(s.num_stages() - 1));
}

// The duration of an action: its own where given, else from the per-stage times.
struct CostOf {
  const Schedule& s;
  const SimCosts& c;
  double operator()(int, const Action& a) const {
    if (!c.action.empty())
      if (const double own = c.action[action_slot(s, a)]; own >= 0) return own;
    const StageTimes* st = c.stage.data();
    const double factor = c.overlap_factor;
    switch (a.kind) {
      case Kind::F: return st[a.stage].f;
      case Kind::B: return st[a.stage].b;
      case Kind::I: return st[a.stage].b - st[a.stage].w;
      case Kind::W: return st[a.stage].w;
      case Kind::FB: return factor * (st[a.stage].f + st[a.b_stage].b);
    }
    return 0.0;
  }
};

}  // namespace

SimResult simulate(const Schedule& s, const SimCosts& costs) {
  check_costs(s, costs);
  const CostOf cost{s, costs};
  SimResult r;
  r.timeline = replay(s, cost, costs.p2p, costs.gap, costs.p2p_pair, costs.link_p2p, costs.link_wait);
  r.metrics = compute_metrics(s, r.timeline);
  return r;
}

SimResult simulate(const Schedule& s, const SimCosts& costs, const SimOptions& options) {
  check_costs(s, costs);
  const CostOf cost{s, costs};
  SimResult r;
  MetricsBuilder metrics(s.p);
  detail::ReplayEngine engine(s, costs.p2p, costs.gap, costs.p2p_pair, costs.link_p2p, costs.link_wait);
  if (!options.timeline) {
    engine.run(cost, [&metrics](int rank, std::size_t, const Action& a, double start, double end) {
      metrics.add(rank, a.kind, start, end);
    });
  } else {
    // Each action goes straight to its place: rank r's block starts after the actions of ranks < r.
    std::vector<std::size_t> offset(s.actions.size() + 1, 0);
    for (std::size_t rank = 0; rank < s.actions.size(); ++rank) offset[rank + 1] = offset[rank] + s.actions[rank].size();
    r.timeline.resize(offset.back());
    TimedOp* out = r.timeline.data();
    engine.run(cost, [&metrics, out, &offset](int rank, std::size_t step, const Action& a, double start, double end) {
      metrics.add(rank, a.kind, start, end);
      out[offset[rank] + step] = TimedOp{rank, a, start, end};
    });
  }
  r.metrics = metrics.finish();
  return r;
}

}  // namespace pipebench::analysis
