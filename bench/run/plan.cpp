#include "bench/run/plan.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
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

kernels::TransformerWorkloadConfig model_config(const RunConfig& c, const RunPoint& pt, int tp_rank) {
  kernels::TransformerWorkloadConfig m = c.model;
  m.tp_size = pt.mapping.t;
  m.tp_rank = tp_rank;
  return m;
}

namespace {

// What one stage of the transformer costs in memory (kernels/transformer_config.hpp), per stage.
std::vector<kernels::StageMemory> stage_memories(const RunConfig& c, const RunPoint& pt, const analysis::Schedule& s) {
  const auto m = model_config(c, pt);
  const auto split = kernels::split_layers(m.layers, s.stages_per_pipe(), m.layers_per_stage);
  std::vector<kernels::StageMemory> out;
  for (int st = 0; st < s.num_stages(); ++st)
    out.push_back(kernels::estimate_memory(kernels::stage_config(m, split, s.depth_of_stage(st)), m.fp64 ? 8 : 4));
  return out;
}

std::vector<analysis::StashBytes> stashes(const std::vector<kernels::StageMemory>& mem) {
  std::vector<analysis::StashBytes> out;
  for (const auto& x : mem) out.push_back({static_cast<double>(x.forward_stash), static_cast<double>(x.weight_stash)});
  return out;
}

}  // namespace

std::vector<analysis::StashBytes> stash_sizes(const RunConfig& c, const RunPoint& pt, const analysis::Schedule& s) {
  if (c.workload == "transformer") return stashes(stage_memories(c, pt, s));
  const double b = static_cast<double>(c.activation_bytes / static_cast<std::uint64_t>(s.v()));
  return std::vector<analysis::StashBytes>(s.num_stages(), {b, b});
}

std::vector<double> rank_memory_needs(const RunConfig& c, const RunPoint& pt, const analysis::Schedule& s) {
  if (c.workload != "transformer") return analysis::peak_activation_bytes(s, stash_sizes(c, pt, s));
  const auto mem = stage_memories(c, pt, s);
  std::vector<double> need = analysis::peak_activation_bytes(s, stashes(mem));
  for (int st = 0; st < s.num_stages(); ++st)
    need[s.stage_rank[st]] += static_cast<double>(mem[st].weights + mem[st].grads + mem[st].workspace);
  return need;
}

double available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  double kib = 0;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024.0;
  return 0;
}

void check_memory(const RunConfig& c, int world_size, double per_rank_bytes) {
  if (per_rank_bytes <= 0) return;
  for (const auto& pt : expand(c, world_size)) {
    const auto s = make_run_schedule(c, pt);
    const auto need = rank_memory_needs(c, pt, s);
    const auto worst = std::max_element(need.begin(), need.end());
    if (*worst > 0.9 * per_rank_bytes) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "needs about %.2f GiB on pipeline rank %d, but this node has %.2f GiB available per rank",
                    *worst / 1073741824.0, static_cast<int>(worst - need.begin()), per_rank_bytes / 1073741824.0);
      throw UsageError("configuration " + describe(pt) + " " + buf +
                       " (weights, gradients and peak activations; a smaller model, more stages or --recompute would fit)");
    }
  }
}

void validate(const RunConfig& c, int world_size) {
  auto positive = [](double x, const char* flag) {
    if (!(x > 0)) throw UsageError(std::string(flag) + " = " + std::to_string(x) + " is not allowed: must be > 0");
  };
  if (c.schedules.empty()) throw UsageError("--schedule: give at least one schedule");
  if (c.microbatches.empty()) throw UsageError("--microbatches: give at least one micro-batch count");
  if (c.workload != "synthetic" && c.workload != "transformer")
    throw UsageError("--workload '" + c.workload + "' is not allowed: synthetic or transformer");
  if (c.blas_threads < 1) throw UsageError("--blas-threads = " + std::to_string(c.blas_threads) + ": must be >= 1");
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
  if (c.backend == "nccl")
    throw UsageError("--backend nccl is not usable by `run` yet: its workloads keep their buffers in host memory; "
                     "the NCCL communicator itself is built and tested (docs/comm.md). Use --backend mpi");
  if (c.backend != "mpi") throw UsageError("--backend '" + c.backend + "' is not allowed: mpi");
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
    if (c.workload == "transformer") {
      try {
        kernels::validate_model(model_config(c, pt), s.stages_per_pipe());
      } catch (const UsageError& e) {
        throw UsageError("configuration " + describe(pt) + ": " + e.what());
      }
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
  auto list = [&num](const auto& xs) {
    std::string out;
    for (const auto& x : xs) out += (out.empty() ? "" : ",") + num(x);
    return out;
  };
  std::map<std::string, std::string> m = {
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
      {"dp_buckets", std::to_string(c.dp_buckets)},
      {"warmup_steps", std::to_string(c.warmup)},
      {"timed_steps", std::to_string(c.steps)},
  };
  if (c.workload == "transformer") {
    const auto& md = c.model;
    m.insert({{"hidden", std::to_string(md.hidden)},
              {"heads", std::to_string(md.heads)},
              {"seq", std::to_string(md.seq)},
              {"micro_batch_size", std::to_string(md.micro_batch)},
              {"vocab", std::to_string(md.vocab)},
              {"layers", std::to_string(md.layers)},
              {"layers_per_stage", list(kernels::split_layers(md.layers, s.stages_per_pipe(), md.layers_per_stage))},
              {"recompute", kernels::to_string(md.recompute)},
              {"precision", md.fp64 ? "fp64" : "fp32"},
              {"lr", num(md.lr)},
              {"seed", std::to_string(md.seed)},
              {"blas_threads", std::to_string(c.blas_threads)}});
    return m;
  }
  m.insert({{"tf", num(c.tf)},
            {"tb", num(c.tb)},
            {"tw", num(c.tw)},
            {"t_overlap", num(c.t_overlap < 0 ? c.tf + c.tb : c.t_overlap)},
            {"stage_cost", c.stage_cost.empty() ? "uniform" : list(c.stage_cost)},
            {"synthetic_mode", c.spin ? "spin" : "sleep"},
            {"activation_bytes", std::to_string(c.activation_bytes)},
            {"p2p_bytes", std::to_string(c.p2p_bytes)},
            {"tp_allreduce_bytes", std::to_string(c.tp_allreduce_bytes)},
            {"dp_grad_bytes", std::to_string(c.dp_grad_bytes)}});
  return m;
}

std::string config_key(const std::map<std::string, std::string>& config) {
  std::string key;
  for (const auto& [k, v] : config) key += (key.empty() ? "" : " ") + k + "=" + v;
  return key;
}

}  // namespace pipebench::bench
