#include "bench/render/report.hpp"

#include <type_traits>

#include "bench/render/comm_text.hpp"
#include "bench/render/record_json.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace pipebench::bench {

namespace {

std::string config_or_dash(const RunResult& run, const char* key) {
  const std::string v = config_value(run, key);
  return v.empty() ? "-" : v;
}

// Peaks over ranks; the listing shows the worst rank, which is what sizes memory.
struct Peaks {
  std::int32_t inflight = 0, predicted = 0;
  std::int64_t bytes = 0;
};
Peaks peaks(const RunResult& run) {
  Peaks p;
  for (const auto& r : run.ranks) {
    p.inflight = std::max(p.inflight, r.peak_inflight);
    p.predicted = std::max(p.predicted, r.predicted_peak_inflight);
    p.bytes = std::max(p.bytes, r.peak_activation_bytes);
  }
  return p;
}

// A stored value on one line of text: control bytes (a damaged or hostile file) escaped as \xHH.
std::string one_line(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (static_cast<unsigned char>(c) >= 0x20 && c != 0x7f) {
      out += c;
      continue;
    }
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned>(static_cast<unsigned char>(c)));
    out += buf;
  }
  return out;
}

std::string ms(double seconds) { return fixed(seconds * 1e3, 3); }
std::string us(double seconds) { return fixed(seconds * 1e6, 1); }
std::string percent(double fraction) { return fixed(fraction * 100, 2); }
std::string mib(std::int64_t bytes) { return fixed(static_cast<double>(bytes) / (1 << 20), 1); }

// A field as a table cell, in the unit its declaration names.
template <class T>
std::string cell(const T& v, Show show) {
  if constexpr (std::is_same_v<T, std::string>) {
    return v.empty() ? "-" : v;
  } else {
    switch (show) {
      case Show::ms: return ms(static_cast<double>(v));
      case Show::us: return us(static_cast<double>(v));
      case Show::mib: return mib(static_cast<std::int64_t>(v));
      case Show::gflops: return v > 0 ? fixed(static_cast<double>(v) * 1e-9, 2) : "-";
      case Show::plain: break;
    }
    return std::to_string(v);
  }
}

// The table of a record type: one column per field that names one, in declaration order.
template <class Record>
std::string record_table(const std::vector<Record>& records) {
  std::vector<Column> columns;
  for_each_field<Record>([&](const auto& fd) {
    if (!fd.column) return;
    using T = std::decay_t<decltype(std::declval<Record>().*fd.member)>;
    columns.push_back({fd.column, fd.unit, !std::is_same_v<T, std::string>});
  });
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : records) {
    rows.emplace_back();
    for_each_field<Record>([&](const auto& fd) {
      if (fd.column) rows.back().push_back(cell(r.*fd.member, fd.show));
    });
  }
  Table t(std::move(columns));
  return t.render(rows);
}

}  // namespace

std::string variability_line(const RunSummary& s) {
  if (!s.step_time_min || !s.step_time_max) return "# variability over timed steps: unknown (written before schema version 3)\n";
  const std::string middle = s.repeats > 1 ? " / " + s.scoring + " score " : " / median ";
  std::string out = "# over timed steps: step time min " + ms(*s.step_time_min) + middle + ms(s.step_time) +
                    " / max " + ms(*s.step_time_max) + " ms";
  if (s.step_time_cv) out += ", cv " + percent(*s.step_time_cv) + " %";
  if (s.bubble_min && s.bubble_max)
    out += "; bubble min " + percent(*s.bubble_min) + " / median " + percent(s.bubble_measured) + " / max " +
           percent(*s.bubble_max) + " %";
  if (s.step_time_p50 && s.step_time_p90 && s.step_time_p99)
    out += "; step time p50 " + ms(*s.step_time_p50) + " / p90 " + ms(*s.step_time_p90) + " / p99 " +
           ms(*s.step_time_p99) + " ms";
  if (s.repeats > 1) out += "; " + std::to_string(s.repeats) + " repeats, scoring " + s.scoring;
  const auto spread = step_time_spread(s);
  if (spread && *spread > kSpreadFlag) out += "; spread " + percent(*spread) + " % > " + percent(kSpreadFlag) + " %";
  return out + "\n";
}

// Widths fit the usual values, so rows printed one at a time as a sweep runs line up.
Table runs_table() {
  return Table({{"run", "", true, 4},
                {"schedule", "", false, 11},
                {"t", "", true, 2},
                {"p", "", true, 2},
                {"d", "", true, 2},
                {"v", "", true, 2},
                {"m", "", true, 3},
                {"step", "ms", true, 9},
                {"bubble", "%", true, 6},
                {"simulated", "%", true, 9},
                {"formula", "%", true, 7},
                {"diff", "pp", true, 6},
                {"inflight", "chunks", true, 8},
                {"predicted", "chunks", true, 9},
                {"actmem", "MiB", true, 7}});
}

std::vector<std::string> run_row(int id, const RunResult& run) {
  const auto& s = run.summary;
  const Peaks p = peaks(run);
  const bool ranks = !run.ranks.empty();
  return {id > 0 ? std::to_string(id) : "-",
          config_or_dash(run, "schedule"),
          config_or_dash(run, "t"),
          config_or_dash(run, "p"),
          config_or_dash(run, "d"),
          config_or_dash(run, "v"),
          config_or_dash(run, "m"),
          ms(s.step_time),
          percent(s.bubble_measured),
          percent(s.bubble_simulated),
          s.bubble_formula ? percent(*s.bubble_formula) : "-",
          fixed((s.bubble_measured - s.bubble_simulated) * 100, 2, true),
          ranks ? std::to_string(p.inflight) : "-",
          ranks ? std::to_string(p.predicted) : "-",
          ranks ? mib(p.bytes) : "-"};
}

namespace {

// "# pipebench results FILE: N complete run(s), ..." and what the table's bubble columns mean.
std::string listing_head(const std::string& path, const RunListing& listing) {
  std::string s = "# pipebench results " + path + ": " + std::to_string(listing.runs.size()) + " complete run(s)";
  if (!listing.incomplete.empty())
    s += ", incomplete run(s) " + id_ranges(listing.incomplete) + " ignored (cut short while being written)";
  if (!listing.damaged.empty()) {
    std::vector<int> ids;
    for (const auto& d : listing.damaged) ids.push_back(d.id);
    s += ", damaged run(s) " + id_ranges(ids) + " skipped";
  }
  return s + "\n# bubble: measured, simulated with the measured op times, analytic formula; diff = measured - simulated\n";
}

// The notes under the runs table: noisy and unknown variability, and the Slurm jobs the runs came from
// (one line per job; a merged job array has several).
std::string listing_notes(const RunListing& listing) {
  std::vector<int> noisy, unknown;
  for (const auto& r : listing.runs) {
    const auto spread = step_time_spread(r.run.summary);
    if (!spread) unknown.push_back(r.id);
    else if (*spread > kSpreadFlag) noisy.push_back(r.id);
  }
  std::string s;
  if (!noisy.empty())
    s += "# step time spread (max - min) / median over timed steps above " + percent(kSpreadFlag) + " %: run(s) " +
         id_ranges(noisy) + "\n";
  if (!unknown.empty())
    s += "# variability unknown (written before schema version 3): run(s) " + id_ranges(unknown) + "\n";
  std::vector<std::pair<std::string, std::vector<int>>> jobs;
  for (const auto& r : listing.runs) {
    const std::string slurm = slurm_summary(r.run.metadata);
    if (slurm.empty()) continue;
    auto it = std::find_if(jobs.begin(), jobs.end(), [&slurm](const auto& j) { return j.first == slurm; });
    if (it == jobs.end()) it = jobs.insert(jobs.end(), {slurm, {}});
    it->second.push_back(r.id);
  }
  for (const auto& [slurm, ids] : jobs) s += "# slurm: run(s) " + id_ranges(ids) + ": " + slurm + "\n";
  return s;
}

}  // namespace

JsonDocument listing_document(const std::string& path, const RunListing& listing, const std::vector<StoredComm>* comms) {
  JsonDocument doc;
  doc.head = {{"file", path}, {"schema_version", listing.schema_version}};
  doc.list_key = "runs";
  doc.tail = {{"incomplete_runs", listing.incomplete}, {"damaged_runs", nlohmann::ordered_json::array()}};
  for (const auto& d : listing.damaged) doc.tail["damaged_runs"].push_back({{"id", d.id}, {"reason", d.reason}});
  if (comms) doc.tail["comm"] = comm_results_json(*comms);
  return doc;
}

void write_listing(Sink& sink, const std::string& path, const RunListing& listing, const std::vector<StoredComm>* comms) {
  // A file of `pipebench comm` results only: no runs table.
  const bool comm_only = comms && !comms->empty() && listing.runs.empty() && listing.incomplete.empty() &&
                         listing.damaged.empty();
  if (comm_only) {
    sink.legend("# pipebench results " + path + ": " + std::to_string(comms->size()) + " communication result(s)\n");
  } else {
    sink.legend(listing_head(path, listing));
    sink.begin_table(runs_table(), true);
    for (const auto& r : listing.runs) {
      Record rec;
      rec.cells = run_row(r.id, r.run);
      rec.objects.push_back(run_json(r.id, r.run, false));
      sink.record(rec);
    }
    sink.end_table();
    sink.legend(listing_notes(listing));
  }
  if (comms) sink.legend(render_comm_listing(*comms));
}

std::string render_listing(const std::string& path, const RunListing& listing) {
  std::ostringstream out, err;
  const auto sink = make_sink(Format::text, out, err);
  write_listing(*sink, path, listing, nullptr);
  return out.str();
}

std::string slurm_summary(const std::map<std::string, std::string>& m) {
  auto get = [&m](const char* k) {
    const auto it = m.find(k);
    return it == m.end() ? std::string() : one_line(it->second);
  };
  if (get("slurm_job_id").empty()) return "";
  std::string s = "job " + get("slurm_job_id");
  if (!get("slurm_array_task_id").empty())
    s += " (array " + get("slurm_array_job_id") + "_" + get("slurm_array_task_id") + ")";
  for (const auto& [label, key] : {std::pair<const char*, const char*>{"partition", "slurm_partition"},
                                   {"nodes", "slurm_nodelist"},
                                   {"tasks", "slurm_ntasks"},
                                   {"tasks per node", "slurm_tasks_per_node"},
                                   {"cpu bind", "slurm_cpu_bind"},
                                   {"restarts", "slurm_restart_count"}})
    if (!get(key).empty()) s += std::string(", ") + label + " " + get(key);
  return s;
}

std::string render_run(const std::string& path, int id, const RunResult& run) {
  const auto& s = run.summary;
  std::string out = "# run " + std::to_string(id) + " of " + path + "\n# key: " + run.key + "\n";
  if (const std::string slurm = slurm_summary(run.metadata); !slurm.empty()) out += "# slurm: " + slurm + "\n";
  out += "# step time " + ms(s.step_time) + " ms, makespan " + ms(s.makespan) + " ms (simulated " +
         ms(s.simulated_makespan) + " ms), DP sync " + ms(s.dp_sync_time) + " ms\n";
  out += "# bubble " + percent(s.bubble_measured) + " % measured, " + percent(s.bubble_simulated) + " % simulated, " +
         (s.bubble_formula ? percent(*s.bubble_formula) + " %" : std::string("no")) + " formula; measured - simulated " +
         fixed((s.bubble_measured - s.bubble_simulated) * 100, 2, true) + " pp\n";
  out += variability_line(s);
  for (const auto& [k, v] : s.extra) out += "# " + k + ": " + num(v) + "\n";
  out += "# records: " + std::to_string(run.actions.size()) + " actions, " + std::to_string(run.comms.size()) +
         " communications\n# config:\n";
  for (const auto& [k, v] : run.config) out += "#   " + k + " = " + one_line(v) + "\n";
  out += "# per rank: busy, idle and span bubble are medians over timed steps; offset and uncert: clock vs rank 0\n";
  out += record_table(run.ranks);
  out += "# metadata:\n";
  for (const auto& [k, v] : run.metadata) out += "#   " + one_line(k) + ": " + one_line(v) + "\n";
  return out;
}

nlohmann::ordered_json run_json(int id, const RunResult& run, bool with_ranks) {
  const Peaks p = peaks(run);
  nlohmann::ordered_json j = {{"id", id},
                              {"key", run.key},
                              {"config", run.config},
                              {"summary", record_json(run.summary)},
                              {"peak_inflight", p.inflight},
                              {"predicted_peak_inflight", p.predicted},
                              {"peak_activation_bytes", p.bytes}};
  if (!with_ranks) return j;
  j["metadata"] = run.metadata;
  j["actions"] = run.actions.size();
  j["comms"] = run.comms.size();
  j["stages"] = records_json(run.stages);
  j["ranks"] = records_json(run.ranks);
  j["steps"] = records_json(run.steps);
  return j;
}

}  // namespace pipebench::bench
