#include "bench/cmd/compare_match.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

#include "analysis/stats.hpp"
#include "analysis/text.hpp"
#include "bench/render/table.hpp"
#include "bench/results/steps.hpp"

namespace pipebench::bench {

namespace {

std::string label_of(const RunResult& r) {
  std::string s = config_label(r);
  const std::string w = config_value(r, "workload");
  if (!w.empty() && w != "synthetic") s += " " + w;
  return s;
}

// The achieved FLOP rate of the run: the workload's figure, else the sum over ranks; none where 0.
std::optional<double> flop_rate(const RunResult& r) {
  const auto it = r.summary.extra.find("flop_rate");
  if (it != r.summary.extra.end() && it->second > 0) return it->second;
  double sum = 0;
  for (const auto& rk : r.ranks) sum += rk.flop_rate;
  if (sum > 0) return sum;
  return std::nullopt;
}

CompareFigure figure(const char* name, const char* unit, double scale, std::optional<double> a, std::optional<double> b) {
  CompareFigure f;
  f.name = name;
  f.unit = unit;
  f.scale = scale;
  f.a = a;
  f.b = b;
  if (a && b && *a != 0) f.ratio = *b / *a;
  return f;
}

void set_ranges(CompareFigure& f, std::optional<double> a_lo, std::optional<double> a_hi, std::optional<double> b_lo,
                std::optional<double> b_hi) {
  f.a_lo = a_lo;
  f.a_hi = a_hi;
  f.b_lo = b_lo;
  f.b_hi = b_hi;
}

// What a verdict rests on: the medians of the repeats when both runs were repeated, else every timed
// step (of every repeat).
std::vector<double> samples(const RunResult& r, double StepRecord::*figure, bool by_repeat) {
  if (by_repeat) return repeat_medians(r.steps, figure);
  std::vector<double> out;
  for (const auto& s : r.steps) out.push_back(s.*figure);
  return out;
}

// The bootstrap interval of the ratio of medians, and the verdict: significant when the interval
// excludes 1 and B/A clears the practical threshold (0: any). Too few samples: no verdict.
void set_verdict(CompareFigure& f, const RunResult& a, const RunResult& b, double StepRecord::*figure, double threshold) {
  const bool by_repeat = a.summary.repeats > 1 && b.summary.repeats > 1;
  const std::vector<double> sa = samples(a, figure, by_repeat), sb = samples(b, figure, by_repeat);
  f.basis = by_repeat ? "repeats" : "steps";
  f.samples_a = static_cast<int>(sa.size());
  f.samples_b = static_cast<int>(sb.size());
  const auto ci = analysis::bootstrap_median_ratio(sa, sb);
  if (!ci) return;
  f.ci_lo = ci->low;
  f.ci_hi = ci->high;
  f.significant = (ci->low > 1 || ci->high < 1) && (!f.a || !f.b || beyond_threshold(f.ratio, *f.a, *f.b, threshold));
}

std::optional<double> geomean(const std::vector<double>& ratios) {
  if (ratios.empty()) return std::nullopt;
  double s = 0;
  for (double r : ratios) s += std::log(r);
  return std::exp(s / static_cast<double>(ratios.size()));
}

// A key's values over the runs of one file, joined: "x", or "x | y" where runs differ.
std::map<std::string, std::string> file_metadata(const RunListing& l) {
  std::map<std::string, std::set<std::string>> vals;
  for (const auto& r : l.runs) {
    const auto& md = r.run.metadata;
    for (const auto& [k, v] : md) vals[k].insert(k == "placement" ? placement_shape(v) : v);
    // Ranks per node, for like for like: ranks / nodes where both are recorded.
    const auto ranks = md.find("ranks"), nodes = md.find("nodes");
    if (ranks != md.end() && nodes != md.end()) {
      const long long n = std::atoll(nodes->second.c_str()), k = std::atoll(ranks->second.c_str());
      vals["ranks_per_node"].insert(n > 0 ? std::to_string(k / n) + (k % n ? " (uneven)" : "") : "?");
    }
  }
  std::map<std::string, std::string> out;
  for (const auto& [k, set] : vals) {
    std::string joined;
    for (const auto& v : set) joined += (joined.empty() ? "" : " | ") + v;
    out[k] = joined;
  }
  return out;
}

std::map<std::string, std::string> joined(const std::map<std::string, std::set<std::string>>& vals) {
  std::map<std::string, std::string> out;
  for (const auto& [k, set] : vals) {
    std::string j;
    for (const auto& v : set) j += (j.empty() ? "" : " | ") + v;
    out[k] = j;
  }
  return out;
}

// One matched configuration: its figures with their intervals and verdicts, and its cost to train.
CompareMatch match_of(const std::string& k, const StoredRun& ra, const StoredRun& rb, double threshold,
                      const TrainSettings& train) {
  const RunSummary& sa = ra.run.summary;
  const RunSummary& sb = rb.run.summary;
  CompareMatch m;
  m.key = k;
  m.label = label_of(ra.run);
  m.schedule = config_value(ra.run, "schedule");
  m.group = m.schedule;
  m.id_a = ra.id;
  m.id_b = rb.id;
  CompareFigure step = figure("step time", "ms", 1e3, sa.step_time, sb.step_time);
  set_ranges(step, sa.step_time_min, sa.step_time_max, sb.step_time_min, sb.step_time_max);
  set_verdict(step, ra.run, rb.run, &StepRecord::step_time, threshold);
  CompareFigure bubble = figure("bubble", "%", 100, sa.bubble_measured, sb.bubble_measured);
  set_ranges(bubble, sa.bubble_min, sa.bubble_max, sb.bubble_min, sb.bubble_max);
  set_verdict(bubble, ra.run, rb.run, &StepRecord::bubble, threshold);
  // The FLOP rate is FLOPs over step time: its interval is the step time's inverted, and so its
  // significance when both runs count FLOPs.
  CompareFigure flops = figure("achieved", "GFLOP/s", 1e-9, flop_rate(ra.run), flop_rate(rb.run));
  if (flops.a && flops.b) {
    flops.significant = step.significant;
    flops.basis = step.basis;
    flops.samples_a = step.samples_a;
    flops.samples_b = step.samples_b;
    if (step.ci_lo && step.ci_hi) {
      flops.ci_lo = 1 / *step.ci_hi;
      flops.ci_hi = 1 / *step.ci_lo;
    }
  }
  m.figures = {step, bubble, flops};
  m.train_a = run_train_cost(ra.run, train);
  m.train_b = run_train_cost(rb.run, train);
  return m;
}

}  // namespace

std::string match_key(const RunResult& run) {
  if (run.config.empty()) return run.key;
  std::string key;
  for (const auto& [k, v] : run.config)
    if (k != "warmup_steps" && k != "timed_steps") key += (key.empty() ? "" : " ") + k + "=" + v;
  return key;
}

bool ranges_disjoint(double a_lo, double a_hi, double b_lo, double b_hi) { return a_hi < b_lo || b_hi < a_lo; }

bool beyond_threshold(std::optional<double> ratio, double a, double b, double threshold) {
  if (!ratio) return a != b;
  // A relative margin of 1e-12 so that a ratio printed as exactly the threshold (1.020) counts.
  return std::abs(*ratio - 1) >= threshold * (1 - 1e-12);
}

bool metadata_is_noise(const std::string& key) {
  static const std::set<std::string> kNoise = {"date_utc", "writer_host", "writer_pid", "job_id",
                                               "slurm_job_id", "slurm_nodelist", "command_line",
                                               "job_warmup_seconds"};  // a timing: differs every run
  if (kNoise.count(key)) return true;
  if (key.rfind("env.", 0) != 0) return false;
  static const char* const kPerJob[] = {"JOB_ID", "JOBID", "PID", "NODELIST", "NODENAME", "SUBMIT", "STEP",
                                        "PROCID", "LOCALID", "NODEID", "TOPOLOGY_ADDR", "JOB_NAME", "JOB_START",
                                        "JOB_END", "TASKS_PER_NODE", "GTIDS"};
  for (const char* p : kPerJob)
    if (key.find(p) != std::string::npos && key.rfind("env.SLURM_", 0) == 0) return true;
  return false;
}

std::string placement_shape(const std::string& placement) {
  std::map<std::string, int> index;
  std::string out;
  std::size_t at = 0;
  while (at <= placement.size()) {
    std::size_t comma = placement.find(',', at);
    if (comma == std::string::npos) comma = placement.size();
    const std::string part = placement.substr(at, comma - at);
    const auto colon = part.rfind(':');
    if (!out.empty()) out += ",";
    if (colon == std::string::npos) {
      out += part;
    } else {
      const auto [it, fresh] = index.emplace(part.substr(0, colon), static_cast<int>(index.size()) + 1);
      out += "host" + std::to_string(it->second) + part.substr(colon);
    }
    at = comma + 1;
  }
  return out;
}

Comparison compare_listings(const std::string& path_a, const RunListing& a, const std::string& path_b, const RunListing& b,
                            double threshold, const TrainSettings& train) {
  Comparison c;
  c.train = train;
  c.path_a = path_a;
  c.path_b = path_b;
  c.threshold = threshold;
  // The latest run of each configuration (a file appended to twice holds a configuration twice).
  std::map<std::string, const StoredRun*> in_a, in_b;
  std::vector<std::string> order_a;
  for (const auto& r : a.runs) {
    const std::string k = match_key(r.run);
    if (!in_a.count(k)) order_a.push_back(k);
    in_a[k] = &r;
  }
  std::vector<std::string> order_b;
  for (const auto& r : b.runs) {
    const std::string k = match_key(r.run);
    if (!in_b.count(k)) order_b.push_back(k);
    in_b[k] = &r;
  }
  std::vector<std::string> groups;
  std::map<std::string, std::vector<double>> group_ratios;
  std::vector<double> all;
  for (const auto& k : order_a) {
    const auto jt = in_b.find(k);
    const StoredRun& ra = *in_a[k];
    if (jt == in_b.end()) {
      c.only_a.push_back({label_of(ra.run), k});
      continue;
    }
    const StoredRun& rb = *jt->second;
    CompareMatch m = match_of(k, ra, rb, threshold, train);
    const CompareFigure& step = m.figures[0];
    if (!step.significant)
      ++c.unknown;
    else if (*step.significant)
      ++c.significant;
    else
      ++c.insignificant;
    if (step.ratio && *step.ratio > 0) {
      group_ratios[m.group].push_back(*step.ratio);
      all.push_back(*step.ratio);
    }
    if (std::find(groups.begin(), groups.end(), m.group) == groups.end()) groups.push_back(m.group);
    c.matches.push_back(std::move(m));
  }
  for (const auto& k : order_b)
    if (!in_a.count(k)) c.only_b.push_back({label_of(in_b[k]->run), k});
  for (const auto& g : groups) {
    int n = 0;
    for (const auto& m : c.matches) n += m.group == g;
    c.groups.push_back({g, n, geomean(group_ratios[g])});
  }
  c.geomean_step_ratio = geomean(all);
  const auto ma = file_metadata(a), mb = file_metadata(b);
  metadata_diffs(c, ma, mb);
  like_for_like(c, ma, mb);
  return c;
}

const std::vector<std::pair<std::string, std::string>>& like_for_like_keys() {
  static const std::vector<std::pair<std::string, std::string>> kKeys = {
      {"cpu", "CPU"},           {"gpu", "accelerator"},         {"nodes", "nodes"},
      {"ranks_per_node", "ranks per node"}, {"pipebench_commit", "pipebench commit"}, {"build_type", "build type"},
      {"mpi", "MPI"},           {"nccl", "NCCL"},               {"blas", "BLAS"},
      {"kokkos", "Kokkos"},     {"cpu_affinity", "CPU affinity"}};
  return kKeys;
}

void like_for_like(Comparison& c, const std::map<std::string, std::string>& a, const std::map<std::string, std::string>& b) {
  c.unlike.clear();
  const auto value = [](const std::map<std::string, std::string>& m, const std::string& k) {
    const auto it = m.find(k);
    return it == m.end() ? std::string("(not recorded)") : it->second;
  };
  for (const auto& [key, name] : like_for_like_keys())
    if (value(a, key) != value(b, key)) c.unlike.push_back({name, value(a, key), value(b, key)});
  std::set<std::string> system;
  for (const auto& m : {a, b})
    for (const auto& [k, v] : m)
      if (k.rfind("system.", 0) == 0) system.insert(k);
  for (const auto& k : system)
    if (value(a, k) != value(b, k)) c.unlike.push_back({k, value(a, k), value(b, k)});
}

void metadata_diffs(Comparison& c, const std::map<std::string, std::string>& ma, const std::map<std::string, std::string>& mb) {
  c.metadata.clear();
  std::set<std::string> keys;
  for (const auto& [k, v] : ma) keys.insert(k);
  for (const auto& [k, v] : mb) keys.insert(k);
  for (const auto& k : keys) {
    if (metadata_is_noise(k)) continue;
    const auto x = ma.find(k), y = mb.find(k);
    const std::string va = x == ma.end() ? "(not recorded)" : x->second;
    const std::string vb = y == mb.end() ? "(not recorded)" : y->second;
    if (va != vb) c.metadata.push_back({k, va, vb});
  }
}

std::string comm_label(const CommResult& r) {
  return r.op + " " + r.group + " " + std::to_string(r.groups) + " x " + std::to_string(r.group_size) + " " + r.backend +
         (r.mapping.empty() ? "" : " " + r.mapping) + (r.one_group ? " one-group" : "");
}

void compare_comm(Comparison& c, const std::vector<StoredComm>& a, const std::vector<StoredComm>& b) {
  std::map<std::string, const StoredComm*> in_b;
  for (const auto& r : b) in_b[comm_label(r.result)] = &r;  // the latest of a label counts
  std::map<std::string, const StoredComm*> in_a;
  for (const auto& r : a) in_a[comm_label(r.result)] = &r;
  for (const auto& [label, ra] : in_a) {
    const auto it = in_b.find(label);
    if (it == in_b.end()) {
      c.comm_only_a.push_back(label);
      continue;
    }
    const CommResult& rb = it->second->result;
    Comparison::CommMatch m;
    m.label = label;
    m.id_a = ra->id;
    m.id_b = it->second->id;
    // Out-of-place rows only, as nccl-tests' first columns (each size has an in-place row too).
    std::map<std::int64_t, const CommBenchRow*> rows_b;
    for (const auto& row : rb.rows)
      if (!row.in_place) rows_b[row.bytes] = &row;
    std::vector<double> ratios;
    for (const auto& row : ra->result.rows) {
      if (row.in_place) continue;
      const auto jt = rows_b.find(row.bytes);
      if (jt == rows_b.end()) continue;
      Comparison::CommSize sz;
      sz.bytes = row.bytes;
      sz.busbw_a = row.busbw_GBps;
      sz.busbw_b = jt->second->busbw_GBps;
      if (sz.busbw_a > 0 && sz.busbw_b > 0) {
        sz.ratio = sz.busbw_b / sz.busbw_a;
        ratios.push_back(*sz.ratio);
      }
      sz.significant = ranges_disjoint(row.time_us_min, row.time_us_max, jt->second->time_us_min, jt->second->time_us_max) &&
                       beyond_threshold(sz.ratio, sz.busbw_a, sz.busbw_b, c.comm_threshold);
      m.sizes.push_back(sz);
    }
    m.geomean_busbw_ratio = geomean(ratios);
    c.comm.push_back(std::move(m));
  }
  for (const auto& [label, rb] : in_b)
    if (!in_a.count(label)) c.comm_only_b.push_back(label);
  if (c.matches.empty() && c.only_a.empty() && c.only_b.empty()) {  // files of communication results only
    std::map<std::string, std::set<std::string>> va, vb;
    for (const auto& r : a)
      for (const auto& [k, v] : r.result.metadata) va[k].insert(k == "placement" ? placement_shape(v) : v);
    for (const auto& r : b)
      for (const auto& [k, v] : r.result.metadata) vb[k].insert(k == "placement" ? placement_shape(v) : v);
    metadata_diffs(c, joined(va), joined(vb));
  }
}

}  // namespace pipebench::bench
