#include "bench/render/train_text.hpp"

#include <cstdlib>

#include "analysis/text.hpp"

namespace pipebench::bench {

namespace {

long long config_int(const RunResult& run, const char* key) { return std::atoll(config_value(run, key).c_str()); }

}  // namespace

std::optional<double> tokens_per_second(const RunResult& run) {
  const long long seq = config_int(run, "seq"), b = config_int(run, "micro_batch_size");
  const long long m = config_int(run, "m"), d = config_int(run, "d");
  if (seq <= 0 || b <= 0 || m <= 0 || d <= 0 || !(run.summary.step_time > 0)) return std::nullopt;
  return static_cast<double>(seq * b * m * d) / run.summary.step_time;
}

int run_ranks(const RunResult& run) {
  const long long n = config_int(run, "t") * config_int(run, "p") * config_int(run, "d");
  if (n > 0) return static_cast<int>(n);
  const auto it = run.metadata.find("ranks");
  return it == run.metadata.end() ? 0 : std::atoi(it->second.c_str());
}

std::optional<analysis::TrainCost> run_train_cost(const RunResult& run, const TrainSettings& t) {
  const auto tps = tokens_per_second(run);
  if (!(t.tokens > 0) || !tps || run_ranks(run) < 1) return std::nullopt;
  return analysis::train_cost(*tps, run_ranks(run), t.tokens, t.price > 0 ? std::optional<double>(t.price) : std::nullopt);
}

std::string train_cost_text(const analysis::TrainCost& c) {
  std::string s = num(c.days, 4) + " days, " + num(c.gpu_hours, 4) + " GPU-hours";
  if (c.cost) s += ", cost " + num(*c.cost, 4);
  return s;
}

std::string train_lines(const std::vector<std::pair<int, const RunResult*>>& runs, const TrainSettings& t) {
  if (!(t.tokens > 0)) return "";
  std::string s = "# time to train " + num(t.tokens) + " tokens at each run's measured tokens per second (ranks as GPUs" +
                  (t.price > 0 ? ", at " + num(t.price) + " per GPU-hour" : std::string()) + "):\n";
  int shown = 0;
  for (const auto& [id, run] : runs)
    if (const auto c = run_train_cost(*run, t)) {
      s += "#   run " + std::to_string(id) + ": " + num(*tokens_per_second(*run), 4) + " tokens/s on " +
           std::to_string(run_ranks(*run)) + " ranks: " + train_cost_text(*c) + "\n";
      ++shown;
    }
  if (shown == 0) s += "#   no run has a throughput in tokens (transformer runs only)\n";
  return s;
}

nlohmann::ordered_json train_json(const std::vector<std::pair<int, const RunResult*>>& runs, const TrainSettings& t) {
  auto out = nlohmann::ordered_json::array();
  for (const auto& [id, run] : runs)
    if (const auto c = run_train_cost(*run, t))
      out.push_back({{"run", id}, {"tokens_per_second", *tokens_per_second(*run)}, {"ranks", run_ranks(*run)},
                     {"days", c->days}, {"gpu_hours", c->gpu_hours},
                     {"cost", c->cost ? nlohmann::ordered_json(*c->cost) : nlohmann::ordered_json(nullptr)}});
  return out;
}

}  // namespace pipebench::bench
