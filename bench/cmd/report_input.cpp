#include "bench/cmd/report_input.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

#include "analysis/error.hpp"
#include "analysis/catalog.hpp"
#include "analysis/simulate.hpp"
#include "analysis/text.hpp"
#include "bench/results/comm_results.hpp"
#include "bench/results/store.hpp"
#include "bench/run/measure.hpp"

namespace pipebench::bench {

namespace {

int config_int(const RunResult& run, const char* key, int fallback) {
  const auto it = run.config.find(key);
  if (it == run.config.end() || it->second.empty()) return fallback;
  std::size_t used = 0;
  int v = 0;
  try {
    v = std::stoi(it->second, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != it->second.size()) throw Error(std::string("its configuration has ") + key + " = " + quoted(it->second, 40));
  return v;
}

double extra_or(const RunResult& run, const char* key, double fallback) {
  const auto it = run.summary.extra.find(key);
  return it == run.summary.extra.end() ? fallback : it->second;
}

}  // namespace

analysis::Schedule schedule_of(const RunResult& run) {
  const auto it = run.config.find("schedule");
  if (it == run.config.end()) throw Error("its configuration names no schedule");
  analysis::ScheduleParams q;
  q.name = it->second;
  q.p = config_int(run, "p", 0);
  q.m = config_int(run, "m", 0);
  q.v = config_int(run, "v", 0);
  q.group = config_int(run, "group", 0);
  try {
    return analysis::make_schedule(q);
  } catch (const UsageError& e) {  // the file's fault, not the command line's
    throw Error(e.what());
  }
}

std::optional<analysis::Breakdown> breakdown_of(const RunResult& run) {
  if (run.ranks.empty()) return std::nullopt;
  analysis::Schedule s;
  try {
    s = schedule_of(run);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const RunSummary& sum = run.summary;
  analysis::Breakdown b;
  for (const auto& r : run.ranks) b.compute += r.busy;
  b.compute /= static_cast<double>(run.ranks.size());
  const double actions_per_rank = static_cast<double>(s.num_actions()) / s.p;
  b.overhead = std::max(0.0, extra_or(run, "executor_overhead_per_action", 0.0)) * actions_per_rank;
  // The idle fraction the schedule itself implies: the simulator without communication or overhead.
  double f = sum.bubble_formula.value_or(sum.bubble_simulated);
  if (static_cast<int>(run.stages.size()) == s.num_stages()) {
    analysis::SimCosts costs;
    for (const auto& st : run.stages) costs.stage.push_back({st.forward, st.backward, st.weight});
    analysis::SimOptions opt;
    opt.timeline = false;
    f = analysis::simulate(s, costs, opt).metrics.bubble_fraction;
  }
  b.bubble = f > 0 && f < 1 ? b.compute * f / (1 - f) : 0.0;
  // The rest of the makespan is waiting for inputs: what pipeline communication added.
  b.pp = sum.makespan - b.compute - b.overhead - b.bubble;
  if (b.pp < 0) {  // the schedule's bubble overlapped the overhead (noise): the parts still add up
    b.bubble = std::max(0.0, b.bubble + b.pp);
    b.pp = 0;
  }
  b.dp = std::max(0.0, sum.step_time - sum.makespan);  // gradient sync and optimizer together
  return b;
}

TimelineView timeline_of(int id, const RunResult& run) {
  TimelineView v;
  v.id = id;
  v.schedule = schedule_of(run);
  const analysis::Schedule& s = v.schedule;
  std::set<int> pipe0;
  for (const auto& r : run.ranks)
    if (r.tp == 0 && r.dp == 0) pipe0.insert(r.global_rank);
  const bool by_rank = pipe0.empty();  // no rank table: take pipeline ranks as global ranks
  const int S = s.num_stages();
  int first = -1;
  std::vector<ActionRecord> fit;
  for (const auto& a : run.actions) {
    const bool pair = a.kind == analysis::Kind::FB;
    if (a.stage < 0 || a.stage >= S || a.rank < 0 || a.rank >= s.p || (pair && (a.b_stage < 0 || a.b_stage >= S))) continue;
    fit.push_back(a);
    if (first < 0 || a.step < first) first = a.step;
  }
  for (const auto& a : fit)
    if (a.step == first && (by_rank ? a.global_rank < s.p : pipe0.count(a.global_rank) > 0))
      v.measured.push_back({a.rank, analysis::Action{a.kind, a.stage, a.mb, a.b_stage, a.b_mb}, a.t_start, a.t_end});
  analysis::SimCosts costs = measured_costs(s, fit, extra_or(run, "p2p_time", 0.0));
  costs.p2p_pair = extra_or(run, "p2p_pair_time", -1.0);
  costs.link_p2p.assign(static_cast<std::size_t>(S - 1), -1.0);  // files before issue 27 have none: p2p_time
  for (int b = 0; b + 1 < S; ++b) costs.link_p2p[b] = extra_or(run, ("p2p_time." + std::to_string(b)).c_str(), -1.0);
  costs.link_wait.assign(static_cast<std::size_t>(S - 1), -1.0);  // files before 2026-12-03 have none: 0
  for (int b = 0; b + 1 < S; ++b) costs.link_wait[b] = extra_or(run, ("p2p_wait." + std::to_string(b)).c_str(), -1.0);
  costs.gap = std::max(0.0, extra_or(run, "executor_overhead_per_action", 0.0));
  v.simulated = analysis::simulate(s, costs).timeline;
  return v;
}

std::vector<StoredComm> readable_comms(const std::string& path) {
  try {
    return read_comms(path);
  } catch (const UsageError&) {
    throw;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pipebench: warning: the communication results of %s are damaged and are left out: %s\n",
                 quoted(path, 200).c_str(), e.what());
  }
  return {};
}

ReportInput report_input(const std::string& path, const std::vector<int>& timeline_ids) {
  ReportInput in;
  in.path = path;
  in.listing = list_runs(path);
  const RunListing& l = in.listing;
  in.comm = readable_comms(path);
  if (l.runs.empty() && in.comm.empty())
    throw UsageError(quoted(path, 200) + " holds no complete runs, so there is nothing to report");
  std::vector<int> ids = timeline_ids;
  for (int id : ids)
    if (std::find(l.complete.begin(), l.complete.end(), id) == l.complete.end())
      throw UsageError("--timeline " + std::to_string(id) + " is not a complete run in " + quoted(path, 200) +
                       " (complete runs: " + id_ranges(l.complete) + ")");
  if (ids.empty()) {
    std::set<std::string> seen;
    for (const auto& r : l.runs) {
      const auto it = r.run.config.find("schedule");
      if (seen.insert(it == r.run.config.end() ? "" : it->second).second) ids.push_back(r.id);
    }
  }
  for (const auto& r : l.runs)
    if (auto b = breakdown_of(r.run)) in.breakdown[r.id] = *b;
  for (int id : ids) {
    try {
      in.timelines.push_back(timeline_of(id, read_run(path, id)));
    } catch (const UsageError&) {
      throw;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "pipebench: warning: run %d of %s has no timeline in the report: %s\n", id,
                   quoted(path, 200).c_str(), e.what());
    }
  }
  return in;
}

}  // namespace pipebench::bench
