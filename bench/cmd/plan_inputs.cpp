#include "bench/cmd/plan_inputs.hpp"

#include <array>
#include <cmath>
#include <map>
#include <memory>

#include "analysis/error.hpp"
#include "analysis/text.hpp"
#include "bench/parse.hpp"
#include "bench/results/layout.hpp"
#include "topology/grid.hpp"

namespace pipebench::bench {

namespace plan = analysis::plan;

const std::vector<std::string>& machine_file_keys() {
  static const std::vector<std::string> keys = {
      "name",          "base",           "source",           "peak_tflops",          "memory_gib",
      "hbm_gbps",      "gpus_per_node",  "intra_node_gbps",  "inter_node_gbps",      "intra_node_latency_us",
      "inter_node_latency_us",           "matmul_efficiency", "gemm_half_width",     "elementwise_passes",
      "dp_overlap",    "memory_reserve_gib", "action_gap_us",  "peak_fp8_tflops",      "intra_node_efficiency",
      "inter_node_efficiency"};
  return keys;
}

// A machine file's number, within what a machine can have so that no rate divides to inf or nan: up
// to 1e6 of its unit (1 EFLOP/s, 1 PiB, 1 PB/s, 1 s), and from 1e-3 of it (0 where `zero_ok`).
double machine_number(const std::string& where, const char* key, const std::string& text, bool zero_ok) {
  double v = 0;
  try {
    v = parse_number(text, key, zero_ok);
  } catch (const UsageError& x) {
    throw UsageError(where + x.what());
  }
  if (v > 1e6 || (v != 0 && v < 1e-3))
    throw UsageError(where + "key " + quoted(key) + " = " + quoted(text) + " is not allowed: expected " +
                     (zero_ok ? "0 or " : "") + "0.001 to 1000000");
  return v;
}

plan::MachineSpec machine_from_entries(const std::vector<ConfigEntry>& entries, const std::string& file) {
  const std::string label = "--machine " + quoted(file);
  std::map<std::string, const ConfigEntry*> by_key;
  for (const ConfigEntry& e : entries) {
    bool known = false;
    for (const auto& k : machine_file_keys()) known = known || k == e.key;
    if (!known) {
      std::string all;
      for (const auto& k : machine_file_keys()) all += (all.empty() ? "" : ", ") + k;
      throw UsageError(label + " line " + std::to_string(e.line) + ": key " + quoted(e.key) +
                       " is not allowed: the keys are " + all + " (docs/model.md)");
    }
    by_key[e.key] = &e;
  }
  plan::MachineSpec m;
  const auto base = by_key.find("base");
  if (base != by_key.end()) {
    try {
      m = plan::machine_preset(base->second->value);
    } catch (const UsageError& x) {
      throw UsageError(label + " line " + std::to_string(base->second->line) + ": key 'base': " + x.what());
    }
  }
  m.name = file;
  m.rates_from = "machine file " + file;
  auto number = [&](const char* key, double scale, double* out, bool zero_ok) {
    const auto it = by_key.find(key);
    if (it == by_key.end()) {
      if (base == by_key.end() && !zero_ok && *out == 0)
        throw UsageError(label + ": key " + quoted(key) + " is required (or a `base` preset to start from)");
      return;
    }
    *out = machine_number(label + " line " + std::to_string(it->second->line) + ": ", key, it->second->value, zero_ok) * scale;
  };  if (auto it = by_key.find("name"); it != by_key.end()) m.name = it->second->value;
  if (auto it = by_key.find("source"); it != by_key.end()) m.source = it->second->value;
  if (base == by_key.end()) m.peak_flops = m.memory_bytes = m.hbm_bandwidth = m.intra_bandwidth = m.inter_bandwidth = 0;
  number("peak_tflops", 1e12, &m.peak_flops, false);
  number("memory_gib", plan::kGiB, &m.memory_bytes, false);
  number("hbm_gbps", 1e9, &m.hbm_bandwidth, false);
  number("intra_node_gbps", 1e9, &m.intra_bandwidth, false);
  number("inter_node_gbps", 1e9, &m.inter_bandwidth, false);
  number("intra_node_latency_us", 1e-6, &m.intra_latency, true);
  number("inter_node_latency_us", 1e-6, &m.inter_latency, true);
  // A GEMM table of the presets' saturating form from its two parameters (docs/model.md).
  double e_max = 0, half = -1;
  number("matmul_efficiency", 1, &e_max, true);
  number("gemm_half_width", 1, &half, true);
  if (by_key.count("matmul_efficiency") || by_key.count("gemm_half_width")) {
    if (by_key.count("matmul_efficiency") && !(e_max > 0 && e_max <= 1))
      throw UsageError(label + ": matmul_efficiency = " + num(e_max) + " is not allowed: must be in (0, 1]");
    if (!by_key.count("matmul_efficiency") || !by_key.count("gemm_half_width"))
      throw UsageError(label + ": keys 'matmul_efficiency' and 'gemm_half_width' go together (the GEMM table's e_max and half width)");
    m.gemm = plan::saturating_table(e_max, half, "machine file " + file);
  }
  number("peak_fp8_tflops", 1e12, &m.peak_fp8_flops, true);
  number("intra_node_efficiency", 1, &m.intra_efficiency, true);
  number("inter_node_efficiency", 1, &m.inter_efficiency, true);
  number("elementwise_passes", 1, &m.elementwise_passes, true);
  number("dp_overlap", 1, &m.dp_overlap, true);
  number("memory_reserve_gib", plan::kGiB, &m.memory_reserve_bytes, true);
  number("action_gap_us", 1e-6, &m.action_gap, true);
  if (auto it = by_key.find("gpus_per_node"); it != by_key.end()) {
    try {
      m.gpus_per_node = parse_int(it->second->value, "gpus_per_node", 1, 1 << 20);
    } catch (const UsageError& x) {
      throw UsageError(label + " line " + std::to_string(it->second->line) + ": " + x.what());
    }
  }
  try {
    plan::check_machine(m);
  } catch (const UsageError& x) {
    throw UsageError(label + ": " + x.what());
  }
  return m;
}

plan::MachineSpec load_machine(const std::string& text) {
  const bool is_file = text.find('/') != std::string::npos ||
                       (text.size() > 5 && text.compare(text.size() - 5, 5, ".toml") == 0);
  if (!is_file) return plan::machine_preset(text);
  const std::string body = read_toml_file(text, "--machine", "machine");
  return machine_from_entries(parse_toml_table(body, text, "--machine", "machine"), text);
}

namespace {

// The calibration run's own configuration as the planner sees it; false where its record lacks a key.
bool run_problem(const Calibration& c, const plan::MachineSpec& m, plan::Problem& pr, plan::Layout& l) {
  int value[11] = {};
  const char* keys[11] = {"layers", "hidden", "heads", "seq", "vocab", "t", "p", "d", "m", "micro_batch_size", "v"};
  for (int i = 0; i < 11; ++i) {
    const auto it = c.config.find(keys[i]);
    if (it == c.config.end()) return false;
    try {
      value[i] = std::stoi(it->second);
    } catch (const std::exception&) {
      return false;
    }
  }
  pr.model.name = "calibration run";
  pr.model.layers = value[0], pr.model.hidden = value[1], pr.model.heads = value[2], pr.model.seq = value[3],
  pr.model.vocab = value[4];
  pr.machine = m;
  pr.value_bytes = c.value_bytes;
  l.t = value[5], l.p = value[6], l.d = value[7], l.v = value[10], l.micro_batch_size = value[9];
  pr.global_batch = std::int64_t{value[8]} * value[9] * value[7];
  const auto schedule = c.config.find("schedule"), recompute = c.config.find("recompute");
  if (schedule == c.config.end()) return false;
  l.schedule = schedule->second;
  if (recompute != c.config.end()) l.recompute = plan::parse_recompute(recompute->second);
  return check_layout(pr, l).reason.empty();
}

// The element-wise passes per operation that give the calibration run its measured step time: the model is
// linear in them (the element-wise work is their multiple), so two evaluations fix them. -1 where the run
// cannot be evaluated.
double fitted_passes(const plan::MachineSpec& m, const Calibration& c) {
  plan::Problem pr;
  plan::Layout l;
  try {
    if (!run_problem(c, m, pr, l) || !(c.step_time > 0)) return -1;
    pr.machine.elementwise_passes = 0;
    const double t0 = plan::evaluate(pr, l).step_time;
    pr.machine.elementwise_passes = 1;
    const double t1 = plan::evaluate(pr, l).step_time;
    return t1 > t0 ? std::max(0.0, (c.step_time - t0) / (t1 - t0)) : -1;
  } catch (const Error&) {
    return -1;
  }
}

}  // namespace

plan::MachineSpec calibrated(plan::MachineSpec m, const Calibration& c) {
  std::string rates;
  if (c.gemm_id > 0) {  // each product at its shape's measured rate, the element-wise work at the pass's
    m.peak_flops = c.gemm.peak_flops;
    m.gemm = c.gemm.table;
    m.hbm_bandwidth = c.elementwise_Bps;
    rates = "GEMM rates of sweep /gemm/" + run_name(c.gemm_id) + ", element-wise " + fixed(c.elementwise_Bps * 1e-9, 2) +
            " GB/s";
  } else {
    m.peak_flops = c.flop_rate;
    m.gemm = {};  // the measured rate is the products' whole rate
    m.elementwise_passes = 0;
    rates = "FLOP rate of run(s) ";
    for (std::size_t i = 0; i < c.runs.size(); ++i) rates += (i ? "," : "") + std::to_string(c.runs[i]);
  }
  m.intra_efficiency = m.inter_efficiency = 1;  // the fit is the achieved link
  m.intra_bandwidth = c.intra.beta, m.intra_latency = c.intra.alpha;
  m.inter_bandwidth = c.inter.beta, m.inter_latency = c.inter.alpha;
  m.tp_link = c.tp.link, m.dp_link = c.dp.link;
  m.action_gap = c.action_gap;
  m.p2p_extra = c.p2p_extra, m.p2p_wait = c.p2p_wait;
  if (c.gemm_id > 0) {
    const double passes = fitted_passes(m, c);
    if (passes >= 0) {
      m.elementwise_passes = passes;
      rates += " x " + fixed(passes, 2) + " passes (fitted on run " + std::to_string(c.runs.front()) + ")";
    } else {
      rates += " x " + fixed(m.elementwise_passes, 2) + " passes (the machine's: run " + std::to_string(c.runs.front()) +
               " could not be evaluated)";
    }
  }
  std::string links = c.intra.source == c.inter.source
                                ? "link from " + c.link_source
                                : "links inside a node from " + c.intra.source + ", across nodes from " + c.inter.source;
  if (c.p2p_extra > 0 || c.p2p_wait > 0)
    links += ", pipeline messages " + fixed(c.p2p_extra * 1e3, 3) + " ms beyond the link and " + fixed(c.p2p_wait * 1e3, 3) +
             " ms after the receiver arrives (the runs' p2p_time and p2p_wait)";
  for (const auto& [kind, fit] : {std::pair{"tp", &c.tp}, std::pair{"dp", &c.dp}})
    links += std::string(", ") + kind + " collectives from " +
             (fit->link.bandwidth > 0 ? fit->source : std::string("the link (no all_reduce fit over ") + kind + " groups)");
  m.rates_from = "calibrated from " + c.path + ": " + rates + ", " + links;
  m.name += " (calibrated)";
  return m;
}

plan::RankOrder rank_order(const std::string& order) {
  topology::Grid(1, 1, 1, 1, order);  // the order's own checks, before any layout
  // The search asks for the same few mappings thousands of times: each Grid is made once.
  auto cache = std::make_shared<std::map<std::array<int, 3>, plan::AxisStrides>>();
  return [order, cache](int t, int p, int d) {
    const std::array<int, 3> key{t, p, d};
    if (const auto it = cache->find(key); it != cache->end()) return it->second;
    using topology::Axis;
    const topology::Grid g(t, p, d, 1, order);  // a refusal leaves nothing cached
    return cache->emplace(key, plan::AxisStrides{g.stride(Axis::tp), g.stride(Axis::pp), g.stride(Axis::dp)})
        .first->second;
  };
}

}  // namespace pipebench::bench
