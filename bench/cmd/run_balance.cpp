#include "bench/cmd/run_balance.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <utility>

#include "bench/flags.hpp"
#include "bench/parse.hpp"
#include "bench/run/configuration.hpp"
#include "bench/run/job.hpp"

namespace pipebench::bench {

void add_stage_split_flags(CLI::App& cmd, kernels::TransformerWorkloadConfig& md, const char* group) {
  add_parsed(
      cmd, {"--layers-per-stage", "Comma list of layers per stage (p*v entries), or auto (balanced: --balance); default even"},
      [&md](const std::string& t) {
        md.layers_auto = t == "auto";
        md.layers_per_stage = md.layers_auto ? std::vector<int>{} : parse_int_list(t, "--layers-per-stage", 0);
      },
      "", "LIST|auto")
      ->group(group);
  add(cmd, {"--balance", "What --layers-per-stage auto balances: measured (a calibration step) or flops"}, md.balance,
      {{kernels::to_string(kernels::Balance::measured), kernels::Balance::measured},
       {kernels::to_string(kernels::Balance::flops), kernels::Balance::flops}})
      ->group(group);
  add(cmd, {"--embedding-stage", "The embedding is a stage of its own (0 layers), as Llama 3 does"}, md.embedding_stage)
      ->group(group);
  add(cmd, {"--head-stage", "The output layer and loss are a stage of their own (0 layers)"}, md.head_stage)
      ->group(group);
}

namespace {

std::string join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

std::string costs_text(const std::vector<double>& c, double unit) {
  std::string s;
  char buf[32];
  for (double x : c) {
    std::snprintf(buf, sizeof buf, "%s%.3g", s.empty() ? "" : " ", x / unit);
    s += buf;
  }
  const auto [lo, hi] = std::minmax_element(c.begin(), c.end());
  std::snprintf(buf, sizeof buf, " (max/min %.2f)", *lo > 0 ? *hi / *lo : 0.0);
  return s + buf;
}

void print_balance(const Plan& pl) {
  kernels::TransformerWorkloadConfig even = pl.model;
  even.layers_auto = false;
  const int stages = pl.schedule.stages_per_pipe();
  const auto before = kernels::stage_layers(even, stages), after = kernels::stage_layers(pl.model, stages);
  const kernels::StageCosts k = kernels::balance_costs(pl.model);
  const bool measured = pl.model.balance == kernels::Balance::measured;
  const double unit = measured ? 1e-3 : 1e9;
  const char* const u = measured ? "ms" : "GFLOP";
  std::fprintf(stderr, "# balance (%s, t=%d): per micro-batch F+I+W, layer %.3g %s, embedding %.3g %s, head %.3g %s\n",
               kernels::to_string(pl.model.balance), pl.model.tp_size, k.layer / unit, u, k.embedding / unit, u,
               k.head / unit, u);
  const auto cb = kernels::stage_costs(before, k), ca = kernels::stage_costs(after, k);
  const double slow_b = *std::max_element(cb.begin(), cb.end()), slow_a = *std::max_element(ca.begin(), ca.end());
  std::fprintf(stderr, "# stage F+I+W (%s): even %s: %s -> auto %s: %s; slowest stage %.3g -> %.3g: step time %+.1f %%\n",
               u, join(before).c_str(), costs_text(cb, unit).c_str(), join(after).c_str(), costs_text(ca, unit).c_str(),
               slow_b / unit, slow_a / unit, slow_b > 0 ? 100.0 * (slow_a / slow_b - 1) : 0.0);
}

}  // namespace

void balance_stages(RunSettings& rs, int world, std::vector<Plan>& plans) {
  if (rs.workload != WorkloadKind::transformer || !rs.model.layers_auto) return;
  if (rs.model.balance == kernels::Balance::measured) {
    std::set<int> tps;
    for (const Plan& pl : plans) tps.insert(pl.model.tp_size);
    for (int t : tps) {
      kernels::TransformerWorkloadConfig c = rs.model;
      c.tp_size = t;
      c.tp_rank = 0;
      c.sequence_parallel = false;  // no communication: the compute of a rank's slice
      const kernels::StageCosts mine = kernels::measure_stage_costs(c, 3);
      double v[3] = {mine.layer, mine.embedding, mine.head}, agreed[3] = {0, 0, 0};
      MPI_Allreduce(v, agreed, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);  // every rank the same numbers
      rs.model.measured_costs[t] = {agreed[0], agreed[1], agreed[2]};
    }
    plans = plan_sweep(rs, world, nullptr);
  }
  if (world_rank() != 0) return;
  std::set<std::pair<int, int>> shown;  // (t, stages per pipeline)
  for (const Plan& pl : plans)
    if (shown.insert({pl.model.tp_size, pl.schedule.stages_per_pipe()}).second) print_balance(pl);
}

}  // namespace pipebench::bench
