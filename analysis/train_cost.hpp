#pragma once
// Time and cost to train: a measured or predicted throughput turned into the days, accelerator-hours
// and money a training run of N tokens takes. One definition for `report`, `compare` and `plan`.
#include <optional>

namespace pipebench::analysis {

struct TrainCost {
  double seconds = 0;    // train_tokens / tokens_per_second
  double days = 0;       // seconds / 86400
  double gpu_hours = 0;  // accelerators x seconds / 3600
  std::optional<double> cost;  // gpu_hours x price, when a price is given
};

// `tokens_per_second` of the whole job on `accelerators` ranks (GPUs, or CPU ranks). Error for a
// throughput or accelerator count that is not positive, or a negative token count or price.
TrainCost train_cost(double tokens_per_second, int accelerators, double train_tokens,
                     std::optional<double> price_per_gpu_hour);

}  // namespace pipebench::analysis
