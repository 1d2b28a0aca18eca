// Write and read speed of the HDF5 results file (bench/results/store.hpp) for runs of 1e4..1e6 action
// records. bytes_per_second counts the records as stored (72 bytes per action).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "bench/results/store.hpp"

namespace {

using namespace pipebench::bench;

constexpr std::int64_t kActionBytes = 72;

RunResult run_with_actions(std::int64_t n) {
  RunResult r;
  r.key = "bench";
  r.config = {{"schedule", "1f1b"}, {"p", "4"}};
  r.actions.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    auto& a = r.actions[static_cast<std::size_t>(i)];
    a.rank = a.global_rank = a.stage = static_cast<std::int32_t>(i % 4);
    a.mb = static_cast<std::int32_t>(i % 64);
    a.kind = static_cast<pipebench::analysis::Kind>(i % 3);
    a.t_start = static_cast<double>(i) * 1e-6;
    a.t_end = a.t_start + 5e-7;
  }
  r.ranks.resize(4);
  return r;
}

std::string scratch_file() {
  return (std::filesystem::temp_directory_path() / ("pipebench-bench-" + std::to_string(getpid()) + ".h5")).string();
}

void BM_AppendRun(benchmark::State& state) {
  const RunResult run = run_with_actions(state.range(0));
  const std::string file = scratch_file();
  for (auto _ : state) {
    state.PauseTiming();
    std::remove(file.c_str());
    state.ResumeTiming();
    benchmark::DoNotOptimize(append_run(file, run));
  }
  std::remove(file.c_str());
  state.SetBytesProcessed(state.iterations() * state.range(0) * kActionBytes);
}
BENCHMARK(BM_AppendRun)->Arg(10000)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ReadRun(benchmark::State& state) {
  const std::string file = scratch_file();
  std::remove(file.c_str());
  append_run(file, run_with_actions(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(read_run(file, 1));
  std::remove(file.c_str());
  state.SetBytesProcessed(state.iterations() * state.range(0) * kActionBytes);
}
BENCHMARK(BM_ReadRun)->Arg(1000000)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
