#include "analysis/simulate.hpp"

#include <string>

#include "analysis/error.hpp"
#include "analysis/replay.hpp"

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

SimResult simulate(const Schedule& s, const SimCosts& costs) {
  if (static_cast<int>(costs.stage.size()) != s.num_stages())
    throw Error("simulate: costs for " + std::to_string(costs.stage.size()) + " stages, schedule has " +
                std::to_string(s.num_stages()));
  const auto& st = costs.stage;
  const double factor = costs.overlap_factor;
  SimResult r;
  r.timeline = replay(
      s,
      [&st, factor](int, const Action& a) {
        switch (a.kind) {
          case Kind::F: return st[a.stage].f;
          case Kind::B: return st[a.stage].b;
          case Kind::I: return st[a.stage].b - st[a.stage].w;
          case Kind::W: return st[a.stage].w;
          case Kind::FB: return factor * (st[a.stage].f + st[a.b_stage].b);
        }
        return 0.0;
      },
      costs.p2p, costs.gap);
  r.metrics = compute_metrics(s, r.timeline);
  return r;
}

}  // namespace pipebench::analysis
