// Cost of the simulator and the validator per action, for the large schedules of issue 2 (p = 64,
// m = 1024). Only schedules present in the catalog at run time are registered, so this file covers
// generators as they land. Target: <= 50 ns per simulated action. The whole `pipebench simulate`
// process is bench_simulate_process.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "analysis/catalog.hpp"
#include "analysis/simulate.hpp"
#include "analysis/validate.hpp"

using namespace pipebench::analysis;

namespace {

bool in_catalog(const std::string& name) {
  for (const auto& info : schedule_catalog())
    if (info.name == name) return true;
  return false;
}

// Reported as seconds per action: Google Benchmark prints e.g. "24.1n", i.e. 24.1 ns.
void per_action(benchmark::State& state, std::size_t actions) {
  state.counters["sec_per_action"] = benchmark::Counter(static_cast<double>(actions),
                                                        benchmark::Counter::kIsIterationInvariantRate |
                                                            benchmark::Counter::kInvert);
  state.counters["actions"] = static_cast<double>(actions);
}

void bench_simulate(benchmark::State& state, const Schedule& s) {
  const SimCosts costs = uniform_costs(s, 1, 2, 1);
  for (auto _ : state) {
    SimResult r = simulate(s, costs);
    benchmark::DoNotOptimize(r.metrics.makespan);
  }
  per_action(state, s.num_actions());
}

// What `pipebench simulate` runs for the table and --json: the metrics in the same pass, no timeline.
void bench_simulate_metrics(benchmark::State& state, const Schedule& s) {
  const SimCosts costs = uniform_costs(s, 1, 2, 1);
  for (auto _ : state) {
    SimResult r = simulate(s, costs, SimOptions{false});
    benchmark::DoNotOptimize(r.metrics.makespan);
  }
  per_action(state, s.num_actions());
}

void bench_validate(benchmark::State& state, const Schedule& s) {
  for (auto _ : state) {
    validate(s);
    benchmark::ClobberMemory();
  }
  per_action(state, s.num_actions());
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  const ScheduleParams cases[] = {{"1f1b", 64, 1024, 0, 0}, {"interleaved", 64, 1024, 4, 0}, {"zbv", 64, 1024, 0, 0}};
  for (const auto& c : cases) {
    if (!in_catalog(c.name)) continue;
    auto s = std::make_shared<const Schedule>(make_schedule(c));
    const std::string label = c.name + "/p64/m1024" + (c.v ? "/v" + std::to_string(c.v) : "");
    benchmark::RegisterBenchmark(("simulate/" + label).c_str(), [s](benchmark::State& st) { bench_simulate(st, *s); })
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("simulate_metrics/" + label).c_str(),
                                 [s](benchmark::State& st) { bench_simulate_metrics(st, *s); })
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("validate/" + label).c_str(), [s](benchmark::State& st) { bench_validate(st, *s); })
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
