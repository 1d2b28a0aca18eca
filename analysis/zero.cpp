#include "analysis/zero.hpp"

#include <algorithm>
#include <map>

namespace pipebench::analysis {

StateParts sharded_state(const StateParts& widths, int zero, double whole, double shard) {
  const auto held = [&](int from) { return zero >= from ? shard : whole; };
  return {widths.weights * held(3), widths.gradients * held(2), widths.main_weights * held(1),
          widths.optimizer * held(1)};
}

int GatherPlan::gathers() const {
  int n = 0;
  for (const auto& g : gather_before) n += static_cast<int>(g.size());
  return n;
}

std::vector<int> stages_used(const Action& a) {
  if (a.kind == Kind::W) return {};  // dW = x^T dy: the stashed input and the output's gradient
  if (a.kind == Kind::FB && a.b_stage != a.stage) return {a.stage, a.b_stage};
  return {a.stage};
}

GatherPlan gather_plan(const Schedule& s, int rank, bool reshard_after_forward) {
  const auto& list = s.actions[static_cast<std::size_t>(rank)];
  GatherPlan g;
  g.gather_before.assign(list.size(), {});
  g.release_after.assign(list.size(), {});
  if (reshard_after_forward) {
    for (std::size_t i = 0; i < list.size(); ++i) g.gather_before[i] = g.release_after[i] = stages_used(list[i]);
    return g;
  }
  std::map<int, std::size_t> first, last;
  for (std::size_t i = 0; i < list.size(); ++i)
    for (int st : stages_used(list[i])) {
      first.emplace(st, i);
      last[st] = i;
    }
  for (const auto& [st, i] : first) g.gather_before[i].push_back(st);
  for (const auto& [st, i] : last) g.release_after[i].push_back(st);
  return g;
}

double gathered_peak_bytes(const GatherPlan& g, const std::vector<double>& stage_bytes, bool prefetch) {
  const std::size_t n = g.gather_before.size();
  std::vector<bool> held(stage_bytes.size(), false);
  double peak = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (int st : g.gather_before[i]) held[static_cast<std::size_t>(st)] = true;
    double now = 0;
    for (std::size_t st = 0; st < held.size(); ++st)
      if (held[st]) now += stage_bytes[st];
    if (prefetch && i + 1 < n)
      for (int st : g.gather_before[i + 1]) now += stage_bytes[static_cast<std::size_t>(st)];
    peak = std::max(peak, now);
    for (int st : g.release_after[i]) held[static_cast<std::size_t>(st)] = false;
  }
  return peak;
}

double decoded_peak_bytes(const Schedule& s, int rank, const std::vector<double>& stage_bytes) {
  return gathered_peak_bytes(gather_plan(s, rank, true), stage_bytes, false);  // an action's own stages
}

std::int64_t gathers_per_stage(int m, bool reshard_after_forward) {
  return reshard_after_forward ? 2 * static_cast<std::int64_t>(m) : 1;
}

}  // namespace pipebench::analysis
