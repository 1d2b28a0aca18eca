#include "bench/render/json.hpp"

#include <string>

namespace pipebench::bench {

using nlohmann::ordered_json;

namespace {

template <class T>
ordered_json value_or_null(const analysis::Claim<T>* c) {
  return c && c->value ? ordered_json(*c->value) : ordered_json(nullptr);
}

// The keys that name a schedule, first in every object of the contract.
ordered_json schedule_keys(const analysis::Schedule& s) {
  ordered_json j;
  j["schedule"] = s.name;
  j["p"] = s.p;
  j["m"] = s.m;
  j["v"] = s.v();
  j["pipes"] = s.pipes;
  return j;
}

}  // namespace

ordered_json summary_json(const analysis::Schedule& s, const analysis::Metrics& metrics,
                          const analysis::AnalyticFigures* analytic) {
  ordered_json j = schedule_keys(s);
  j["makespan"] = metrics.makespan;
  j["bubble_fraction"] = metrics.bubble_fraction;
  j["max_idle"] = metrics.max_idle();
  j["max_span_bubble"] = metrics.max_span_bubble();

  const analysis::AnalyticFigures* a = analytic;
  j["analytic_makespan"] = value_or_null(a ? &a->makespan : nullptr);
  j["analytic_bubble_fraction"] = value_or_null(a ? &a->bubble_fraction : nullptr);
  j["analytic_idle"] = value_or_null(a ? &a->idle : nullptr);
  j["analytic_idle_measure"] = a ? ordered_json(analysis::idle_measure_name(a->idle_measure)) : ordered_json(nullptr);
  j["analytic_peak_inflight"] = value_or_null(a ? &a->peak_inflight : nullptr);
  ordered_json notes = ordered_json::object();
  if (a) {
    auto note = [&notes](const char* key, const std::string& reason) {
      if (!reason.empty()) notes[key] = reason;
    };
    note("makespan", a->makespan.reason);
    note("bubble_fraction", a->bubble_fraction.reason);
    note("idle", a->idle.reason);
    note("peak_inflight", a->peak_inflight.reason);
  } else {
    notes["all"] = "no analytic formula for an imported schedule";
  }
  j["analytic_notes"] = notes;
  j["analytic_source"] = a ? ordered_json(a->source) : ordered_json(nullptr);

  ordered_json ranks = ordered_json::array();
  for (const auto& r : metrics.ranks)
    ranks.push_back({{"rank", r.rank},
                     {"busy", r.busy},
                     {"idle", r.idle},
                     {"span_bubble", r.span_bubble},
                     {"peak_inflight", r.peak_inflight}});
  j["ranks"] = ranks;
  return j;
}

ordered_json timeline_json(const analysis::Timeline& timeline) {
  ordered_json list = ordered_json::array();
  for (const auto& op : timeline) {
    ordered_json e;
    e["rank"] = op.rank;
    e["action"] = analysis::to_string(op.action);
    e["kind"] = analysis::kind_name(op.action.kind);
    e["stage"] = op.action.stage;
    e["mb"] = op.action.mb;
    if (op.action.kind == analysis::Kind::FB) {
      e["b_stage"] = op.action.b_stage;
      e["b_mb"] = op.action.b_mb;
    }
    e["start"] = op.start;
    e["end"] = op.end;
    list.push_back(std::move(e));
  }
  return list;
}

ordered_json schedule_json(const analysis::Schedule& s) {
  ordered_json j = schedule_keys(s);
  j["stage_rank"] = s.stage_rank;
  ordered_json actions = ordered_json::array();
  for (const auto& list : s.actions) {
    ordered_json row = ordered_json::array();
    for (const auto& a : list) row.push_back(analysis::to_string(a));
    actions.push_back(std::move(row));
  }
  j["actions"] = actions;
  return j;
}

}  // namespace pipebench::bench
