#pragma once
// Time and cost to train a run's model on --train-tokens tokens at its measured throughput, as
// `report` and `compare` print it (analysis/train_cost.hpp holds the formula).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/train_cost.hpp"
#include "bench/results/records.hpp"

namespace pipebench::bench {

struct TrainSettings {
  double tokens = 0;  // --train-tokens; 0: not asked
  double price = 0;   // --gpu-hour-price per rank-hour; 0: no cost
};

// Tokens per second of a transformer run: seq x micro_batch_size x m x d tokens per step over the
// step time. None for a synthetic run or one without those settings.
std::optional<double> tokens_per_second(const RunResult& run);
// The ranks the run used (t x p x d of its configuration, else the metadata's ranks; 0: unknown).
int run_ranks(const RunResult& run);
// The cost of `run` under `t`; none when not asked or the run has no throughput.
std::optional<analysis::TrainCost> run_train_cost(const RunResult& run, const TrainSettings& t);
// "1.23 days, 2953 GPU-hours, cost 7383" (cost only with a price).
std::string train_cost_text(const analysis::TrainCost& c);
// `report`'s lines: "# time to train N tokens: ..." then one line per run with a throughput.
std::string train_lines(const std::vector<std::pair<int, const RunResult*>>& runs, const TrainSettings& t);
// The same as JSON: [{"run", "tokens_per_second", "days", "gpu_hours", "cost"}].
nlohmann::ordered_json train_json(const std::vector<std::pair<int, const RunResult*>>& runs, const TrainSettings& t);

}  // namespace pipebench::bench
