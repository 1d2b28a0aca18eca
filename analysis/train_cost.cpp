#include "analysis/train_cost.hpp"

#include <string>

#include "analysis/error.hpp"

namespace pipebench::analysis {

TrainCost train_cost(double tokens_per_second, int accelerators, double train_tokens,
                     std::optional<double> price_per_gpu_hour) {
  if (!(tokens_per_second > 0)) throw Error("train_cost: tokens per second " + std::to_string(tokens_per_second) + " is not positive");
  if (accelerators < 1) throw Error("train_cost: " + std::to_string(accelerators) + " accelerators");
  if (!(train_tokens >= 0)) throw Error("train_cost: negative token count");
  if (price_per_gpu_hour && !(*price_per_gpu_hour >= 0)) throw Error("train_cost: negative price");
  TrainCost c;
  c.seconds = train_tokens / tokens_per_second;
  c.days = c.seconds / 86400.0;
  c.gpu_hours = accelerators * c.seconds / 3600.0;
  if (price_per_gpu_hour) c.cost = c.gpu_hours * *price_per_gpu_hour;
  return c;
}

}  // namespace pipebench::analysis
