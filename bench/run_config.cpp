#include "bench/run_config.hpp"

#include <sstream>

#include "analysis/error.hpp"
#include "analysis/generators.hpp"
#include "analysis/validate.hpp"
#include "topology/grid.hpp"

namespace pipebench::bench {

std::vector<RunPoint> expand(const RunConfig& c, int world_size) {
  std::vector<Mapping> maps = c.mappings;
  if (maps.empty()) maps.push_back({1, world_size, 1});
  std::vector<RunPoint> out;
  for (const auto& s : c.schedules)
    for (const auto& mp : maps)
      for (int v : c.vs)
        for (int m : c.microbatches) out.push_back({s, mp, m, v});
  return out;
}

std::string describe(const RunPoint& pt) {
  std::string s = pt.schedule + " " + std::to_string(pt.mapping.t) + "x" + std::to_string(pt.mapping.p) + "x" +
                  std::to_string(pt.mapping.d) + " m=" + std::to_string(pt.m);
  if (pt.v) s += " v=" + std::to_string(pt.v);
  return s;
}

analysis::Schedule make_run_schedule(const RunConfig& c, const RunPoint& pt) {
  analysis::ScheduleParams q{pt.schedule, pt.mapping.p, pt.m, pt.v, pt.schedule == "interleaved" ? c.group : 0};
  analysis::Schedule s = analysis::make_schedule(q);
  analysis::validate(s);
  return s;
}

void validate(const RunConfig& c, int world_size) {
  auto positive = [](double x, const char* flag) {
    if (!(x > 0)) throw UsageError(std::string(flag) + " = " + std::to_string(x) + " is not allowed: must be > 0");
  };
  if (c.schedules.empty()) throw UsageError("--schedule: give at least one schedule");
  if (c.microbatches.empty()) throw UsageError("--microbatches: give at least one micro-batch count");
  if (c.workload != "synthetic")
    throw UsageError("--workload '" + c.workload + "' is not available: allowed: synthetic");
  positive(c.tf, "--tf");
  positive(c.tb, "--tb");
  if (!(c.tw >= 0 && c.tw < c.tb))
    throw UsageError("--tw = " + std::to_string(c.tw) + " s is not allowed: the weight part of the backward must be in [0, tb)");
  if (c.t_overlap >= 0) positive(c.t_overlap, "--t-overlap");
  for (double k : c.stage_cost) positive(k, "--stage-cost entry");
  if (c.warmup < 0) throw UsageError("--warmup = " + std::to_string(c.warmup) + " is not allowed: must be >= 0");
  if (c.steps < 1) throw UsageError("--steps = " + std::to_string(c.steps) + " is not allowed: must be >= 1");
  positive(c.timeout, "--timeout");
  if (c.poll_us < 0) throw UsageError("--poll-us = " + std::to_string(c.poll_us) + " is not allowed: must be >= 0");
  if (c.dp_buckets < 0) throw UsageError("--dp-buckets = " + std::to_string(c.dp_buckets) + " is not allowed: must be >= 0");
  if (c.tp_allreduce_bytes % 4 || c.dp_grad_bytes % 4)
    throw UsageError("--tp-allreduce-bytes and --dp-grad-bytes must be multiples of 4 (they are float32 sums)");
  if (c.resume && !c.append) throw UsageError("--resume needs --append: it adds to an existing results file");
  if (c.backend != "mpi" && c.backend != "nccl")
    throw UsageError("--backend '" + c.backend + "' is not allowed: mpi or nccl");
  for (const auto& mp : c.mappings)
    if (static_cast<long long>(mp.t) * mp.p * mp.d != world_size)
      throw UsageError("--mapping " + std::to_string(mp.t) + "x" + std::to_string(mp.p) + "x" + std::to_string(mp.d) +
                       " needs t*p*d = " + std::to_string(static_cast<long long>(mp.t) * mp.p * mp.d) +
                       " ranks, but the job has " + std::to_string(world_size) +
                       " (start it with mpiexec -n <t*p*d>, or change --mapping)");
  const auto points = expand(c, world_size);
  if (c.pick < 1 || c.pick > static_cast<int>(points.size()))
    throw UsageError("--trace-config = " + std::to_string(c.pick) + " is not allowed: the sweep has configurations 1.." +
                     std::to_string(points.size()));
  for (const auto& pt : points) {
    topology::Grid grid(pt.mapping.t, pt.mapping.p, pt.mapping.d, 1, c.order);  // checks the order string
    analysis::Schedule s;
    try {
      s = make_run_schedule(c, pt);
    } catch (const UsageError& e) {
      throw UsageError("configuration " + describe(pt) + ": " + e.what());
    }
    if (!c.stage_cost.empty() && static_cast<int>(c.stage_cost.size()) != s.stages_per_pipe())
      throw UsageError("--stage-cost has " + std::to_string(c.stage_cost.size()) + " entries; configuration " +
                       describe(pt) + " has " + std::to_string(s.stages_per_pipe()) + " stages (p*v)");
  }
}

std::map<std::string, std::string> config_map(const RunConfig& c, const RunPoint& pt, const analysis::Schedule& s) {
  auto num = [](double x) {
    std::ostringstream os;
    os.precision(9);
    os << x;
    return os.str();
  };
  std::string costs;
  for (double k : c.stage_cost) costs += (costs.empty() ? "" : ",") + num(k);
  return {
      {"schedule", pt.schedule},
      {"t", std::to_string(pt.mapping.t)},
      {"p", std::to_string(pt.mapping.p)},
      {"d", std::to_string(pt.mapping.d)},
      {"v", std::to_string(s.v())},
      {"m", std::to_string(pt.m)},
      {"group", std::to_string(pt.schedule == "interleaved" ? c.group : 0)},
      {"order", c.order},
      {"backend", c.backend},
      {"workload", c.workload},
      {"tf", num(c.tf)},
      {"tb", num(c.tb)},
      {"tw", num(c.tw)},
      {"t_overlap", num(c.t_overlap < 0 ? c.tf + c.tb : c.t_overlap)},
      {"stage_cost", costs.empty() ? "uniform" : costs},
      {"synthetic_mode", c.spin ? "spin" : "sleep"},
      {"activation_bytes", std::to_string(c.activation_bytes)},
      {"p2p_bytes", std::to_string(c.p2p_bytes)},
      {"tp_allreduce_bytes", std::to_string(c.tp_allreduce_bytes)},
      {"dp_grad_bytes", std::to_string(c.dp_grad_bytes)},
      {"dp_buckets", std::to_string(c.dp_buckets)},
      {"warmup_steps", std::to_string(c.warmup)},
      {"timed_steps", std::to_string(c.steps)},
  };
}

std::string config_key(const std::map<std::string, std::string>& config) {
  std::string key;
  for (const auto& [k, v] : config) key += (key.empty() ? "" : " ") + k + "=" + v;
  return key;
}

}  // namespace pipebench::bench
