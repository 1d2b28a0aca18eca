// `pipebench compare`'s text and JSON (docs/report.md "Comparing two files"): the like-for-like section
// first, then the table with each B/A's bootstrap interval and verdict, the geometric means, time to
// train, the unmatched configurations and the metadata that differs. compare_match.cpp computes it.
#include <string>

#include "analysis/stats.hpp"
#include "analysis/text.hpp"
#include "bench/cmd/compare_match.hpp"
#include "bench/render/table.hpp"

namespace pipebench::bench {

namespace {

std::string fixed_or_dash(const std::optional<double>& v, double scale, int decimals) {
  return v ? fixed(*v * scale, decimals) : "-";
}

std::string sig_text(const CompareFigure& f) {
  if (!f.a || !f.b) return "-";
  if (!f.significant) return "few";
  return *f.significant ? "yes" : "no";
}

std::string interval_text(const CompareFigure& f) {
  if (!f.ci_lo || !f.ci_hi) return "-";
  return fixed(*f.ci_lo, 3) + "-" + fixed(*f.ci_hi, 3);
}

nlohmann::ordered_json opt_json(const std::optional<double>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

// The rule's second half, as the header line says it: " and B/A is 2 % or more from 1 (--threshold 2)".
std::string threshold_text(double threshold) {
  if (threshold <= 0) return "";
  const std::string pct = num(threshold * 100);
  return std::string(" and B/A is ") + pct + " % or more from 1 (--threshold " + pct + ")";
}

// Time and cost to train --train-tokens per match whose runs both have a throughput (transformer runs).
std::string train_lines(const Comparison& c) {
  if (!(c.train.tokens > 0)) return "";
  std::string s;
  for (const auto& m : c.matches) {
    const auto ca = m.train_a, cb = m.train_b;
    if (!ca || !cb) continue;
    s += "# time to train " + num(c.train.tokens) + " tokens, " + m.label + ": A " + train_cost_text(*ca) + "; B " +
         train_cost_text(*cb) + "; B/A GPU-hours " + fixed(cb->gpu_hours / ca->gpu_hours, 3);
    if (ca->cost && cb->cost && *ca->cost > 0) s += ", B/A cost " + fixed(*cb->cost / *ca->cost, 3);
    s += "\n";
  }
  return s.empty() ? "# time to train: no match has a throughput in tokens (transformer runs only)\n" : s;
}

// The first section: whether the files are like for like, and where not, what differs.
std::string like_text(const Comparison& c) {
  if (c.unlike.empty()) {
    std::string names;
    for (const auto& [k, name] : like_for_like_keys()) names += (names.empty() ? "" : ", ") + name;
    return "# like for like: yes (" + names + " and the system description the same)\n";
  }
  std::string s = "# like for like: NO (compared with --allow-different); these differ (A | B):\n";
  for (const auto& d : c.unlike) s += "#   " + d.key + ": " + d.a + "  |  " + d.b + "\n";
  return s;
}


}  // namespace

std::string render_comparison(const Comparison& c) {
  std::string s = "# pipebench compare " + c.path_a + " (A) vs " + c.path_b + " (B): " + std::to_string(c.matches.size()) +
                  " matched configuration(s), " + std::to_string(c.only_a.size()) + " only in A, " +
                  std::to_string(c.only_b.size()) + " only in B\n";
  s += like_text(c);
  s += "# B/A < 1: B takes less time (step) or idles less (bubble); 95 % CI: percentile bootstrap of the ratio of "
       "medians (" + std::to_string(analysis::kBootstrapResamples) + " resamples, seed " +
       std::to_string(analysis::kBootstrapSeed) + ") over the repeats' medians when both runs were repeated, else over "
       "the timed steps; sig: yes when the interval excludes 1" + threshold_text(c.threshold) +
       ", few: not enough samples (fewer than " + std::to_string(analysis::kMinBootstrapSamples) + " per side)\n";
  Table t({{"run A", "", true}, {"run B", "", true}, {"configuration", "", false},
           {"step A", "ms", true}, {"step B", "ms", true}, {"B/A", "", true}, {"95% CI", "", true}, {"samples", "", true},
           {"sig", "", false},
           {"bubble A", "%", true}, {"bubble B", "%", true}, {"B/A", "", true}, {"95% CI", "", true}, {"sig", "", false},
           {"achieved A", "GFLOP/s", true}, {"achieved B", "GFLOP/s", true}, {"B/A", "", true}});
  std::vector<std::vector<std::string>> rows;
  for (const auto& m : c.matches) {
    const auto& st = m.figures[0];
    const auto& bu = m.figures[1];
    const auto& fl = m.figures[2];
    const std::string n = std::to_string(st.samples_a) + "/" + std::to_string(st.samples_b) + (st.basis == "repeats" ? " rep" : " step");
    rows.push_back({std::to_string(m.id_a), std::to_string(m.id_b), m.label, fixed_or_dash(st.a, 1e3, 3),
                    fixed_or_dash(st.b, 1e3, 3), fixed_or_dash(st.ratio, 1, 3), interval_text(st), n, sig_text(st),
                    fixed_or_dash(bu.a, 100, 2), fixed_or_dash(bu.b, 100, 2), fixed_or_dash(bu.ratio, 1, 3),
                    interval_text(bu), sig_text(bu),
                    fixed_or_dash(fl.a, 1e-9, 2), fixed_or_dash(fl.b, 1e-9, 2), fixed_or_dash(fl.ratio, 1, 3)});
  }
  s += t.render(rows);
  s += "# step time B/A, geometric mean:";
  for (const auto& g : c.groups)
    s += " " + g.name + " " + fixed_or_dash(g.geomean_step_ratio, 1, 3) + " (" + std::to_string(g.runs) + "),";
  s += " all " + fixed_or_dash(c.geomean_step_ratio, 1, 3) + " (" + std::to_string(c.matches.size()) + ")\n";
  s += "# step time differences: " + std::to_string(c.significant) + " significant, " + std::to_string(c.insignificant) +
       " within the noise, " + std::to_string(c.unknown) + " not enough samples\n";
  s += train_lines(c);
  for (const auto& u : c.only_a) s += "# only in A: " + u.label + "\n";
  for (const auto& u : c.only_b) s += "# only in B: " + u.label + "\n";
  for (const auto& m : c.comm) {
    s += "# comm " + m.label + " (A " + std::to_string(m.id_a) + ", B " + std::to_string(m.id_b) +
         "): busbw B/A geometric mean " + fixed_or_dash(m.geomean_busbw_ratio, 1, 3) + "\n";
    Table ct({{"size", "B", true}, {"busbw A", "GB/s", true}, {"busbw B", "GB/s", true}, {"B/A", "", true}, {"sig", "", false}});
    std::vector<std::vector<std::string>> crow;
    for (const auto& z : m.sizes)
      crow.push_back({std::to_string(z.bytes), fixed(z.busbw_a, 2), fixed(z.busbw_b, 2), fixed_or_dash(z.ratio, 1, 3),
                      z.significant ? "yes" : "no"});
    s += ct.render(crow);
  }
  for (const auto& k : c.comm_only_a) s += "# comm only in A: " + k + "\n";
  for (const auto& k : c.comm_only_b) s += "# comm only in B: " + k + "\n";
  if (c.metadata.empty()) s += "# metadata: no difference (dates, hosts, process and job ids aside)\n";
  else s += "# metadata that differs (A | B):\n";
  for (const auto& d : c.metadata) s += "#   " + d.key + ": " + d.a + "  |  " + d.b + "\n";
  return s;
}

nlohmann::ordered_json comparison_json(const Comparison& c) {
  using J = nlohmann::ordered_json;
  J j = {{"a", c.path_a}, {"b", c.path_b}, {"threshold", c.threshold},
         {"method", {{"name", "percentile bootstrap of the ratio of medians"}, {"level", 0.95},
                     {"resamples", analysis::kBootstrapResamples}, {"seed", analysis::kBootstrapSeed},
                     {"min_samples", analysis::kMinBootstrapSamples}}},
         {"like_for_like", c.unlike.empty()}, {"unlike", J::array()}, {"matches", J::array()}};
  for (const auto& d : c.unlike) j["unlike"].push_back({{"key", d.key}, {"a", d.a}, {"b", d.b}});
  static const char* const kNames[] = {"step_time", "bubble", "flop_rate"};
  for (const auto& m : c.matches) {
    J jm = {{"key", m.key}, {"label", m.label}, {"group", m.group}, {"run_a", m.id_a}, {"run_b", m.id_b}};
    for (std::size_t i = 0; i < m.figures.size() && i < 3; ++i) {
      const auto& f = m.figures[i];
      jm[kNames[i]] = {{"a", opt_json(f.a)},          {"b", opt_json(f.b)},          {"ratio", opt_json(f.ratio)},
                       {"a_min", opt_json(f.a_lo)},   {"a_max", opt_json(f.a_hi)},   {"b_min", opt_json(f.b_lo)},
                       {"b_max", opt_json(f.b_hi)},
                       {"significant", f.significant ? J(*f.significant) : J(nullptr)},
                       {"ci_low", opt_json(f.ci_lo)}, {"ci_high", opt_json(f.ci_hi)}, {"basis", f.basis},
                       {"samples_a", f.samples_a}, {"samples_b", f.samples_b}};
    }
    const auto& st = m.figures[0];
    for (const auto& [name, tc] : {std::pair<const char*, const std::optional<analysis::TrainCost>*>{"train_a", &m.train_a},
                                   {"train_b", &m.train_b}})
      if (*tc)
        jm[name] = {{"days", (*tc)->days}, {"gpu_hours", (*tc)->gpu_hours}, {"cost", opt_json((*tc)->cost)}};
    jm["significant"] = st.significant.value_or(false);
    jm["variability_known"] = st.significant.has_value();
    j["matches"].push_back(jm);
  }
  j["only_in_a"] = J::array();
  for (const auto& u : c.only_a) j["only_in_a"].push_back(u.key);
  j["only_in_b"] = J::array();
  for (const auto& u : c.only_b) j["only_in_b"].push_back(u.key);
  j["metadata_differs"] = J::array();
  for (const auto& d : c.metadata) j["metadata_differs"].push_back({{"key", d.key}, {"a", d.a}, {"b", d.b}});
  j["groups"] = J::array();
  for (const auto& g : c.groups)
    j["groups"].push_back({{"group", g.name}, {"runs", g.runs}, {"geomean_step_time_ratio", opt_json(g.geomean_step_ratio)}});
  j["geomean_step_time_ratio"] = opt_json(c.geomean_step_ratio);
  j["comm_matches"] = J::array();
  for (const auto& m : c.comm) {
    J jm = {{"label", m.label}, {"comm_a", m.id_a}, {"comm_b", m.id_b}, {"sizes", J::array()},
            {"geomean_busbw_ratio", opt_json(m.geomean_busbw_ratio)}};
    for (const auto& z : m.sizes)
      jm["sizes"].push_back({{"bytes", z.bytes}, {"busbw_a_GBps", z.busbw_a}, {"busbw_b_GBps", z.busbw_b},
                             {"ratio", opt_json(z.ratio)}, {"significant", z.significant}});
    j["comm_matches"].push_back(jm);
  }
  j["comm_only_in_a"] = c.comm_only_a;
  j["comm_only_in_b"] = c.comm_only_b;
  j["significant"] = c.significant;
  j["insignificant"] = c.insignificant;
  j["unknown"] = c.unknown;
  return j;
}


}  // namespace pipebench::bench
