#include "bench/results/store.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>

#include "bench/results/h5.hpp"
#include "bench/version.hpp"

namespace pipebench::bench {

namespace {

constexpr const char* kVersionAttr = "pipebench_schema_version";
constexpr const char* kSchemaText =
    "pipebench results. /runs/<id> (6-digit, from 000001) holds one benchmark run: attributes key, the "
    "summary figures (seconds; bubble fractions 0..1; bubble_formula absent where no formula holds) and "
    "complete=1, written last (ignore runs without it); groups config and metadata (one string attribute "
    "per entry) and extra (float64 attributes); compound datasets actions, comms and ranks (times in "
    "seconds on rank 0's clock from the start of each timed step). See docs/results-schema.md.";

// The scalar figures of RunSummary, by attribute name.
struct SummaryField {
  const char* name;
  double RunSummary::*member;
};
constexpr SummaryField kSummaryFields[] = {
    {"step_time", &RunSummary::step_time},
    {"makespan", &RunSummary::makespan},
    {"bubble_measured", &RunSummary::bubble_measured},
    {"bubble_simulated", &RunSummary::bubble_simulated},
    {"simulated_makespan", &RunSummary::simulated_makespan},
    {"dp_sync_time", &RunSummary::dp_sync_time},
};

// RankSummary holds a std::string, so it goes through this plain row.
struct RankRow {
  std::int32_t global_rank, tp, pp, dp;
  double busy, idle, span_bubble;
  std::int32_t peak_inflight, predicted_peak_inflight;
  std::int64_t peak_activation_bytes, predicted_activation_bytes;
  double flop_rate;
  double clock_offset, clock_uncertainty;
  char* host;
};

// The three record tables, in memory layout, which is also their file layout.
struct Types {
  h5::Id action, comm, rank;
};

#define PB_MEMBER(type, T, field, h5type) h5::insert_member(type.get(), #field, offsetof(T, field), h5type)

Types make_types() {
  std::vector<const char*> kinds, comm_kinds;
  for (int k = 0; k < analysis::kNumKinds; ++k) kinds.push_back(analysis::kind_name(static_cast<analysis::Kind>(k)));
  for (int k = 0; k <= static_cast<int>(CommKind::ReduceScatter); ++k) comm_kinds.push_back(comm_kind_name(static_cast<CommKind>(k)));
  static_assert(sizeof(analysis::Kind) == 1 && sizeof(CommKind) == 4, "enum sizes are part of the schema");
  const h5::Id kind = h5::enum_type(H5T_NATIVE_UINT8, kinds);
  const h5::Id comm_kind = h5::enum_type(H5T_NATIVE_INT32, comm_kinds);
  const h5::Id group = h5::enum_type(H5T_NATIVE_INT32, {"pp", "tp", "dp"});
  const h5::Id str = h5::string_type();
  const hid_t i32 = H5T_NATIVE_INT32, i64 = H5T_NATIVE_INT64, f64 = H5T_NATIVE_DOUBLE;

  Types t;
  t.action = h5::compound_type(sizeof(ActionRecord));
  PB_MEMBER(t.action, ActionRecord, step, i32);
  PB_MEMBER(t.action, ActionRecord, rank, i32);
  PB_MEMBER(t.action, ActionRecord, global_rank, i32);
  PB_MEMBER(t.action, ActionRecord, stage, i32);
  PB_MEMBER(t.action, ActionRecord, chunk, i32);
  PB_MEMBER(t.action, ActionRecord, mb, i32);
  PB_MEMBER(t.action, ActionRecord, kind, kind.get());
  PB_MEMBER(t.action, ActionRecord, b_stage, i32);
  PB_MEMBER(t.action, ActionRecord, b_mb, i32);
  PB_MEMBER(t.action, ActionRecord, t_start, f64);
  PB_MEMBER(t.action, ActionRecord, t_end, f64);
  PB_MEMBER(t.action, ActionRecord, flops, f64);
  PB_MEMBER(t.action, ActionRecord, activation_bytes, i64);

  t.comm = h5::compound_type(sizeof(CommRecord));
  PB_MEMBER(t.comm, CommRecord, step, i32);
  PB_MEMBER(t.comm, CommRecord, global_rank, i32);
  PB_MEMBER(t.comm, CommRecord, peer, i32);
  PB_MEMBER(t.comm, CommRecord, kind, comm_kind.get());
  PB_MEMBER(t.comm, CommRecord, group, group.get());
  PB_MEMBER(t.comm, CommRecord, bytes, i64);
  PB_MEMBER(t.comm, CommRecord, stage, i32);
  PB_MEMBER(t.comm, CommRecord, mb, i32);
  PB_MEMBER(t.comm, CommRecord, tag, i32);
  PB_MEMBER(t.comm, CommRecord, t_posted, f64);
  PB_MEMBER(t.comm, CommRecord, t_wait, f64);
  PB_MEMBER(t.comm, CommRecord, t_done, f64);

  t.rank = h5::compound_type(sizeof(RankRow));
  PB_MEMBER(t.rank, RankRow, global_rank, i32);
  PB_MEMBER(t.rank, RankRow, tp, i32);
  PB_MEMBER(t.rank, RankRow, pp, i32);
  PB_MEMBER(t.rank, RankRow, dp, i32);
  PB_MEMBER(t.rank, RankRow, busy, f64);
  PB_MEMBER(t.rank, RankRow, idle, f64);
  PB_MEMBER(t.rank, RankRow, span_bubble, f64);
  PB_MEMBER(t.rank, RankRow, peak_inflight, i32);
  PB_MEMBER(t.rank, RankRow, predicted_peak_inflight, i32);
  PB_MEMBER(t.rank, RankRow, peak_activation_bytes, i64);
  PB_MEMBER(t.rank, RankRow, predicted_activation_bytes, i64);
  PB_MEMBER(t.rank, RankRow, flop_rate, f64);
  PB_MEMBER(t.rank, RankRow, clock_offset, f64);
  PB_MEMBER(t.rank, RankRow, clock_uncertainty, f64);
  PB_MEMBER(t.rank, RankRow, host, str.get());
  return t;
}

#undef PB_MEMBER

std::string run_name(int id) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%06d", id);
  return buf;
}

// Run ids are the all-digit link names under /runs; anything else there is not ours and is skipped.
std::vector<int> run_ids(hid_t runs) {
  std::vector<int> ids;
  for (const auto& name : h5::link_names(runs)) {
    if (name.empty() || name.size() > 9 || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    ids.push_back(std::stoi(name));
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

// A run that a crash cut short lacks its complete mark or, if the crash hit HDF5's own metadata
// writes, may not open at all: both count as incomplete. Returns an empty Id for those.
h5::Id open_complete_run(hid_t runs, int id) {
  try {
    h5::Id g = h5::open_group(runs, run_name(id));
    if (h5::has_attr(g.get(), "complete") && h5::read_int_attr(g.get(), "complete") == 1) return g;
  } catch (const Error&) {
  }
  return h5::Id();
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// Opens an existing results file after checking it is one of ours, of this schema version.
h5::Id open_results(const std::string& path, bool write) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw UsageError("results file '" + path + "' cannot be opened: " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw UsageError("'" + path + "' is a directory, not a results file");
  if (!h5::is_hdf5(path)) {
    if (::access(path.c_str(), R_OK) != 0) throw UsageError("cannot read '" + path + "': " + std::strerror(errno));
    throw UsageError("'" + path + "' is not an HDF5 file, so not a pipebench results file");
  }
  // Readers and writers lock the file while it is open, for milliseconds: `pipebench report` during
  // a sweep must not cost the sweep its run, so a locked file is waited for (up to 10 s), not refused.
  h5::Id file;
  for (int attempt = 0; !file; ++attempt) {
    try {
      file = h5::open_file(path, write);
    } catch (const Error& e) {
      const bool locked = std::string(e.what()).find("unable to lock file") != std::string::npos;
      if (!locked || attempt == 100) throw UsageError(e.what());
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  const std::string not_ours = "'" + path + "' is an HDF5 file but not a pipebench results file";
  if (!h5::has_attr(file.get(), kVersionAttr)) throw UsageError(not_ours + " (it has no " + kVersionAttr + " attribute)");
  std::int64_t version = 0;
  try {
    version = h5::read_int_attr(file.get(), kVersionAttr);
  } catch (const Error&) {
    throw UsageError(not_ours + " (its " + kVersionAttr + " attribute is not an integer)");
  }
  if (version != kResultsSchemaVersion)
    throw UsageError("'" + path + "' holds pipebench results of schema version " + std::to_string(version) +
                     "; this pipebench reads and writes version " + std::to_string(kResultsSchemaVersion) +
                     ": write to a new file, or read this one with the pipebench that wrote it");
  if (!h5::has_link(file.get(), "runs")) throw UsageError(not_ours + " (it has no /runs group)");
  return file;
}

h5::Id create_results(const std::string& path) {
  h5::Id file = h5::create_file(path);
  h5::write_attr(file.get(), kVersionAttr, kResultsSchemaVersion);
  h5::write_attr(file.get(), "pipebench_schema", std::string(kSchemaText));
  h5::write_attr(file.get(), "created_by", std::string("pipebench ") + version() + " (commit " + commit() + ")");
  h5::create_group(file.get(), "runs");
  return file;
}

void write_strings(hid_t parent, const char* name, const std::map<std::string, std::string>& entries) {
  const h5::Id g = h5::create_group(parent, name);
  for (const auto& [k, v] : entries) h5::write_attr(g.get(), k, v);
}

std::map<std::string, std::string> read_strings(hid_t parent, const char* name) {
  const h5::Id g = h5::open_group(parent, name);
  std::map<std::string, std::string> out;
  for (const auto& k : h5::attr_names(g.get())) out[k] = h5::read_string_attr(g.get(), k);
  return out;
}

void write_run(hid_t g, const RunResult& run, const Types& t) {
  h5::write_attr(g, "key", run.key);
  for (const auto& f : kSummaryFields) h5::write_attr(g, f.name, run.summary.*f.member);
  if (run.summary.bubble_formula) h5::write_attr(g, "bubble_formula", *run.summary.bubble_formula);
  write_strings(g, "config", run.config);
  write_strings(g, "metadata", run.metadata);
  {
    const h5::Id extra = h5::create_group(g, "extra");
    for (const auto& [k, v] : run.summary.extra) h5::write_attr(extra.get(), k, v);
  }
  h5::write_table(g, "actions", t.action.get(), run.actions.data(), run.actions.size());
  h5::write_table(g, "comms", t.comm.get(), run.comms.data(), run.comms.size());
  std::vector<RankRow> rows;
  rows.reserve(run.ranks.size());
  for (const auto& r : run.ranks)
    rows.push_back(RankRow{r.global_rank, r.tp, r.pp, r.dp, r.busy, r.idle, r.span_bubble, r.peak_inflight,
                           r.predicted_peak_inflight, r.peak_activation_bytes, r.predicted_activation_bytes, r.flop_rate,
                           r.clock_offset, r.clock_uncertainty, const_cast<char*>(r.host.c_str())});  // HDF5 only reads it
  h5::write_table(g, "ranks", t.rank.get(), rows.data(), rows.size());
}

std::vector<RankSummary> read_ranks(hid_t g, const Types& t) {
  std::vector<RankRow> rows(h5::table_size(g, "ranks"));
  h5::read_table(g, "ranks", t.rank.get(), rows.data());
  // Free HDF5's host strings even if copying throws.
  const auto reclaim = [&](RankRow*) { h5::reclaim_table(t.rank.get(), rows.size(), rows.data()); };
  const std::unique_ptr<RankRow, decltype(reclaim)> guard(rows.data(), reclaim);
  std::vector<RankSummary> out;
  out.reserve(rows.size());
  for (const auto& r : rows)
    out.push_back(RankSummary{r.global_rank, r.tp, r.pp, r.dp, r.busy, r.idle, r.span_bubble, r.peak_inflight,
                              r.predicted_peak_inflight, r.peak_activation_bytes, r.predicted_activation_bytes,
                              r.flop_rate, r.clock_offset,
                              r.clock_uncertainty, r.host ? r.host : ""});
  return out;
}

template <class Record>
std::vector<Record> read_records(hid_t g, const char* name, const h5::Id& mem) {
  std::vector<Record> out(h5::table_size(g, name));
  if (!out.empty()) h5::read_table(g, name, mem.get(), out.data());
  return out;
}

RunResult read_group(hid_t g, const Types& t, bool with_records) {
  RunResult run;
  run.key = h5::read_string_attr(g, "key");
  for (const auto& f : kSummaryFields) run.summary.*f.member = h5::read_double_attr(g, f.name);
  if (h5::has_attr(g, "bubble_formula")) run.summary.bubble_formula = h5::read_double_attr(g, "bubble_formula");
  run.config = read_strings(g, "config");
  run.metadata = read_strings(g, "metadata");
  {
    const h5::Id extra = h5::open_group(g, "extra");
    for (const auto& k : h5::attr_names(extra.get())) run.summary.extra[k] = h5::read_double_attr(extra.get(), k);
  }
  run.ranks = read_ranks(g, t);
  if (with_records) {
    run.actions = read_records<ActionRecord>(g, "actions", t.action);
    run.comms = read_records<CommRecord>(g, "comms", t.comm);
  }
  return run;
}

volatile std::sig_atomic_t g_pending_signal = 0;
constexpr int kDeferred[3] = {SIGINT, SIGTERM, SIGHUP};

void remember_signal(int sig) {
  if (g_pending_signal == 0) g_pending_signal = sig;
}

}  // namespace

void check_results_file(const std::string& path, bool append) {
  if (path.empty()) throw UsageError("the results file name is empty");
  if (exists(path)) {
    if (!append)
      throw UsageError("results file '" + path +
                       "' already exists; pass --append (with --resume to skip runs it holds) to add runs to it, or choose another file name");
    h5::Id file = open_results(path, true);
    h5::close_file(file);
    return;
  }
  try {
    h5::Id probe = h5::create_file(path);
    h5::close_file(probe);
  } catch (const Error& e) {
    throw UsageError("cannot create results file '" + path + "': " + e.what());
  }
  std::remove(path.c_str());
}

int append_run(const std::string& path, const RunResult& run) {
  const SignalDeferral hold;
  const Types types = make_types();
  h5::Id file = exists(path) ? open_results(path, true) : create_results(path);
  int id = 0;
  {
    const h5::Id runs = h5::open_group(file.get(), "runs");
    const auto ids = run_ids(runs.get());
    id = ids.empty() ? 1 : ids.back() + 1;
    // The run is written in full, unreachable, and flushed before the one link that makes it part
    // of the file: a crash before that link leaves the file as it was, never a link to half a group.
    const h5::Id g = h5::create_unlinked_group(file.get());
    write_run(g.get(), run, types);
    h5::flush(file.get());
    h5::link(g.get(), runs.get(), run_name(id));
    h5::flush(file.get());
    h5::write_attr(g.get(), "complete", std::int64_t{1});
  }
  h5::close_file(file);
  return id;
}

bool has_complete_run(const std::string& path, const std::string& key) {
  if (!exists(path)) return false;
  const h5::Id file = open_results(path, false);
  const h5::Id runs = h5::open_group(file.get(), "runs");
  for (int id : run_ids(runs.get())) {
    const h5::Id g = open_complete_run(runs.get(), id);
    if (g && h5::read_string_attr(g.get(), "key") == key) return true;
  }
  return false;
}

RunListing list_runs(const std::string& path) {
  const h5::Id file = open_results(path, false);
  const h5::Id runs = h5::open_group(file.get(), "runs");
  const Types types = make_types();
  RunListing out;
  for (int id : run_ids(runs.get())) {
    const h5::Id g = open_complete_run(runs.get(), id);
    if (g)
      out.runs.push_back(StoredRun{id, read_group(g.get(), types, false)});
    else
      out.incomplete.push_back(id);
  }
  return out;
}

RunResult read_run(const std::string& path, int id) {
  const h5::Id file = open_results(path, false);
  const h5::Id runs = h5::open_group(file.get(), "runs");
  std::vector<int> complete;
  for (int i : run_ids(runs.get())) {
    const h5::Id g = open_complete_run(runs.get(), i);
    if (!g) continue;
    if (i == id) return read_group(g.get(), make_types(), true);
    complete.push_back(i);
  }
  throw UsageError("run " + std::to_string(id) + " is not a complete run in '" + path + "' (" +
                   (complete.empty() ? std::string("it holds no complete runs") : "complete runs: " + id_ranges(complete)) + ")");
}

std::string id_ranges(const std::vector<int>& ids) {
  std::string s;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!s.empty()) s += ", ";
    s += std::to_string(ids[i]);
    if (j > i) s += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return s;
}

SignalDeferral::SignalDeferral() {
  g_pending_signal = 0;
  struct sigaction hold {};
  hold.sa_handler = remember_signal;
  sigemptyset(&hold.sa_mask);
  for (int i = 0; i < 3; ++i) sigaction(kDeferred[i], &hold, &previous_[i]);
}

SignalDeferral::~SignalDeferral() {
  for (int i = 0; i < 3; ++i) sigaction(kDeferred[i], &previous_[i], nullptr);
  if (g_pending_signal != 0) raise(g_pending_signal);
}

}  // namespace pipebench::bench
