#include "bench/render/json.hpp"

#include <array>
#include <charconv>
#include <cmath>
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

namespace {

// Appends what dump() prints for a number: integers as they are, doubles by nlohmann's own shortest
// round-trip formatting (the only way to match its text digit for digit), non-finite as null.
void put(std::string& out, int x) {
  char buf[16];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  out.append(buf, r.ptr);
}
void put(std::string& out, double x) {
  if (!std::isfinite(x)) {
    out += "null";
    return;
  }
  std::array<char, 64> buf{};
  char* end = nlohmann::detail::to_chars(buf.data(), buf.data() + buf.size(), x);
  out.append(buf.data(), static_cast<std::size_t>(end - buf.data()));
}

}  // namespace

void write_timeline_json(std::ostream& os, const analysis::Timeline& timeline, int indent) {
  if (timeline.empty()) {
    os << "[]";
    return;
  }
  const std::string item = "\n" + std::string(indent + 2, ' ');  // "{" and "}" of an entry
  const std::string key = "\n" + std::string(indent + 4, ' ') + "\"";
  std::string out = "[";
  out.reserve(1 << 16);
  for (std::size_t i = 0; i < timeline.size(); ++i) {
    const analysis::TimedOp& op = timeline[i];
    out += i ? "," : "";
    out += item;
    out += "{";
    out += key, out += "rank\": ", put(out, op.rank), out += ",";
    out += key, out += "action\": \"", out += analysis::to_string(op.action), out += "\",";
    out += key, out += "kind\": \"", out += analysis::kind_name(op.action.kind), out += "\",";
    out += key, out += "stage\": ", put(out, op.action.stage), out += ",";
    out += key, out += "mb\": ", put(out, op.action.mb), out += ",";
    if (op.action.kind == analysis::Kind::FB) {
      out += key, out += "b_stage\": ", put(out, op.action.b_stage), out += ",";
      out += key, out += "b_mb\": ", put(out, op.action.b_mb), out += ",";
    }
    out += key, out += "start\": ", put(out, op.start), out += ",";
    out += key, out += "end\": ", put(out, op.end);
    out += item;
    out += "}";
    if (out.size() > (1 << 16) - 512) {
      os << out;
      out.clear();
    }
  }
  out += "\n" + std::string(indent, ' ') + "]";
  os << out;
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
