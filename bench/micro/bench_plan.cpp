// The planner's screening rate (docs/plan.md "How the search is fast"): one configuration's stage plan
// (the per-operation model, its layer costs shared through the search's cache) and its closed-form
// screen, over a spread of layouts of Llama 3 405B on H100, and of DeepSeek-V3 with ep and cp.
// Target: >= 1M configurations per second on one core.
#include <benchmark/benchmark.h>

#include <vector>

#include "analysis/plan/model.hpp"

using namespace pipebench::analysis::plan;

namespace {

// Screens the layouts round robin, one stage plan and closed-form screen per iteration.
void screen_rate(benchmark::State& state, const Problem& pr, const std::vector<Layout>& layouts) {
  std::size_t i = 0;
  for (auto _ : state) {
    const Layout& l = layouts[i++ % layouts.size()];
    benchmark::DoNotOptimize(screen(pr, l, stage_plan(pr, l)));
  }
  state.counters["configurations_per_s"] = benchmark::Counter(double(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_PlanScreen(benchmark::State& state) {
  Problem pr;
  pr.model = model_preset("llama3-405b");
  pr.machine = machine_preset("h100-80gb");
  pr.global_batch = 2048;
  pr.cache = make_parts_cache();  // as the search screens: layouts share their layer costs
  std::vector<Layout> layouts;
  for (int t : {2, 4, 8})
    for (int p : {8, 16, 32})
      for (int b : {1, 2})
        for (Recompute rc : {Recompute::none, Recompute::selective, Recompute::full})
          for (const char* schedule : {"1f1b", "interleaved", "zb-h1", "zbv"})
            for (int zero : {0, 1}) {
              Layout l;
              l.t = t, l.p = p, l.d = 16384 / t / p, l.schedule = schedule, l.micro_batch_size = b, l.recompute = rc;
              l.sequence_parallel = true, l.zero = zero, l.v = 2;
              if (check_layout(pr, l).reason.empty()) layouts.push_back(l);
            }
  screen_rate(state, pr, layouts);
}
BENCHMARK(BM_PlanScreen);

// The same with the MoE axes searched: DeepSeek-V3 on 16,384 H100s over ep and cp as well.
void BM_PlanScreenMoe(benchmark::State& state) {
  Problem pr;
  pr.model = model_preset("deepseek-v3-671b");
  pr.machine = machine_preset("h100-80gb");
  pr.global_batch = 8192;
  pr.cache = make_parts_cache();
  std::vector<Layout> layouts;
  for (int cp : {1, 2})
    for (int ep : {1, 8, 64})
      for (int t : {1, 2, 4})
        for (int p : {8, 16})
          for (int b : {1, 2})
            for (Recompute rc : {Recompute::none, Recompute::full})
              for (const char* schedule : {"1f1b", "interleaved", "zb-h1", "dualpipe"}) {
                Layout l;
                l.t = t, l.p = p, l.cp = cp, l.ep = ep, l.d = 16384 / t / p / cp, l.schedule = schedule;
                l.micro_batch_size = b, l.recompute = rc, l.sequence_parallel = t > 1, l.zero = 1, l.v = 2;
                if (check_layout(pr, l).reason.empty()) layouts.push_back(l);
              }
  screen_rate(state, pr, layouts);
  state.counters["layouts"] = double(layouts.size());
}
BENCHMARK(BM_PlanScreenMoe);

}  // namespace

BENCHMARK_MAIN();
