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
#include <type_traits>

#include "bench/results/h5.hpp"
#include "bench/version.hpp"

namespace pipebench::bench {

namespace {

constexpr const char* kVersionAttr = "pipebench_schema_version";
constexpr const char* kSchemaText =
    "pipebench results. /runs/<id> (6-digit, from 000001) holds one benchmark run: attributes key, the "
    "summary figures (seconds; bubble fractions 0..1; analytic figures absent where no formula holds) and "
    "complete=1, written last (ignore runs without it); groups config, metadata and analytic_notes (one "
    "string attribute per entry) and extra (float64 attributes); compound datasets actions, comms, ranks "
    "and stages (times in "
    "seconds on rank 0's clock from the start of each timed step). See docs/results-schema.md.";

// The HDF5 types of the record fields (docs/results-schema.md): enumerations for kinds and groups,
// variable-length UTF-8 for text, native integers and doubles for the rest.
class Types {
 public:
  Types() {
    std::vector<const char*> kinds, comm_kinds, groups;
    for (int k = 0; k < analysis::kNumKinds; ++k) kinds.push_back(analysis::kind_name(static_cast<analysis::Kind>(k)));
    for (int k = 0; k < kNumCommKinds; ++k) comm_kinds.push_back(comm_kind_name(static_cast<CommKind>(k)));
    for (int g = 0; g < kNumCommGroups; ++g) groups.push_back(comm_group_name(static_cast<CommGroup>(g)));
    static_assert(sizeof(analysis::Kind) == 1 && sizeof(CommKind) == 4 && sizeof(CommGroup) == 4,
                  "enum sizes are part of the schema");
    kind_ = h5::enum_type(H5T_NATIVE_UINT8, kinds);
    comm_kind_ = h5::enum_type(H5T_NATIVE_INT32, comm_kinds);
    group_ = h5::enum_type(H5T_NATIVE_INT32, groups);
    string_ = h5::string_type();
  }
  hid_t of(const std::int32_t*) const { return H5T_NATIVE_INT32; }
  hid_t of(const std::int64_t*) const { return H5T_NATIVE_INT64; }
  hid_t of(const double*) const { return H5T_NATIVE_DOUBLE; }
  hid_t of(const analysis::Kind*) const { return kind_.get(); }
  hid_t of(const CommKind*) const { return comm_kind_.get(); }
  hid_t of(const CommGroup*) const { return group_.get(); }
  hid_t of(const std::string*) const { return string_.get(); }

 private:
  h5::Id kind_, comm_kind_, group_, string_;
};

template <class Record, class Member>
std::size_t offset_of(Member Record::*member) {
  static const Record probe{};
  return static_cast<std::size_t>(reinterpret_cast<const char*>(&(probe.*member)) - reinterpret_cast<const char*>(&probe));
}

template <class Record, class Member>
hid_t type_of(const Types& types, Member Record::*) {
  return types.of(static_cast<const Member*>(nullptr));
}

// A record table's rows as HDF5 stores them: each record in sizeof(Record) bytes, its fields at their
// own offsets, a text field as the char* that HDF5's variable-length strings are made of.
template <class Record>
h5::Id compound_of(const Types& types) {
  h5::Id type = h5::compound_type(sizeof(Record));
  for_each_field<Record>([&](const auto& fd) {
    h5::insert_member(type.get(), fd.name, offset_of(fd.member), type_of(types, fd.member));
  });
  return type;
}

template <class Record>
std::vector<unsigned char> pack(const std::vector<Record>& records) {
  std::vector<unsigned char> rows(records.size() * sizeof(Record));
  for (std::size_t i = 0; i < records.size(); ++i)
    for_each_field<Record>([&](const auto& fd) {
      unsigned char* at = rows.data() + i * sizeof(Record) + offset_of(fd.member);
      const auto& value = records[i].*fd.member;
      if constexpr (std::is_same_v<std::decay_t<decltype(value)>, std::string>) {
        const char* text = value.c_str();  // HDF5 only reads it
        std::memcpy(at, &text, sizeof text);
      } else {
        std::memcpy(at, &value, sizeof value);
      }
    });
  return rows;
}

template <class Record>
void write_records(hid_t g, const char* name, const std::vector<Record>& records, const Types& types) {
  const h5::Id type = compound_of<Record>(types);
  const auto rows = pack(records);
  h5::write_table(g, name, type.get(), rows.data(), records.size());
}

// A table that is missing reads as empty: files of schema version 1 have no "stages".
template <class Record>
std::vector<Record> read_records(hid_t g, const char* name, const Types& types) {
  if (!h5::has_link(g, name)) return {};
  const h5::Id type = compound_of<Record>(types);
  std::vector<Record> out(h5::table_size(g, name));
  if (out.empty()) return out;
  std::vector<unsigned char> rows(out.size() * sizeof(Record));
  h5::read_table(g, name, type.get(), rows.data());
  // Free HDF5's strings even if copying throws.
  const auto reclaim = [&](unsigned char*) { h5::reclaim_table(type.get(), out.size(), rows.data()); };
  const std::unique_ptr<unsigned char, decltype(reclaim)> guard(rows.data(), reclaim);
  for (std::size_t i = 0; i < out.size(); ++i)
    for_each_field<Record>([&](const auto& fd) {
      const unsigned char* at = rows.data() + i * sizeof(Record) + offset_of(fd.member);
      auto& value = out[i].*fd.member;
      if constexpr (std::is_same_v<std::decay_t<decltype(value)>, std::string>) {
        const char* text = nullptr;
        std::memcpy(&text, at, sizeof text);
        value = text ? text : "";
      } else {
        std::memcpy(&value, at, sizeof value);
      }
    });
  return out;
}

// RunSummary as attributes of the run group: a number or text per field, a field without a value
// (a formula that does not hold) as no attribute, a list as a small dataset, a map as a subgroup with
// one attribute per entry.
void write_attr_field(hid_t g, const char* name, double v) { h5::write_attr(g, name, v); }
void write_attr_field(hid_t g, const char* name, std::int32_t v) { h5::write_attr(g, name, std::int64_t{v}); }
void write_attr_field(hid_t g, const char* name, const std::string& v) { h5::write_attr(g, name, v); }
void write_attr_field(hid_t g, const char* name, const std::optional<double>& v) {
  if (v) h5::write_attr(g, name, *v);
}
void write_attr_field(hid_t g, const char* name, const std::vector<std::int32_t>& v) {
  if (!v.empty()) h5::write_table(g, name, H5T_NATIVE_INT32, v.data(), v.size());
}
template <class V>
void write_attr_field(hid_t g, const char* name, const std::map<std::string, V>& entries) {
  const h5::Id sub = h5::create_group(g, name);
  for (const auto& [k, v] : entries) h5::write_attr(sub.get(), k, v);
}

// Fields that version 1 files lack read as their defaults.
void read_attr_field(hid_t g, const char* name, double& v) { v = h5::read_double_attr(g, name); }
void read_attr_field(hid_t g, const char* name, std::int32_t& v) {
  if (h5::has_attr(g, name)) v = static_cast<std::int32_t>(h5::read_int_attr(g, name));
}
void read_attr_field(hid_t g, const char* name, std::string& v) {
  if (h5::has_attr(g, name)) v = h5::read_string_attr(g, name);
}
void read_attr_field(hid_t g, const char* name, std::optional<double>& v) {
  if (h5::has_attr(g, name)) v = h5::read_double_attr(g, name);
}
void read_attr_field(hid_t g, const char* name, std::vector<std::int32_t>& v) {
  if (!h5::has_link(g, name)) return;
  v.resize(h5::table_size(g, name));
  if (!v.empty()) h5::read_table(g, name, H5T_NATIVE_INT32, v.data());
}
void read_attr_field(hid_t g, const char* name, std::map<std::string, double>& entries) {
  if (!h5::has_link(g, name)) return;
  const h5::Id sub = h5::open_group(g, name);
  for (const auto& k : h5::attr_names(sub.get())) entries[k] = h5::read_double_attr(sub.get(), k);
}
void read_attr_field(hid_t g, const char* name, std::map<std::string, std::string>& entries) {
  if (!h5::has_link(g, name)) return;
  const h5::Id sub = h5::open_group(g, name);
  for (const auto& k : h5::attr_names(sub.get())) entries[k] = h5::read_string_attr(sub.get(), k);
}

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
  // Version 1 files (no stage table, fewer analytic figures) are read, but runs are only added to files
  // of this version, so that one file never mixes two layouts.
  if (version != kResultsSchemaVersion && (write || version < kOldestReadableSchemaVersion || version > kResultsSchemaVersion))
    throw UsageError("'" + path + "' holds pipebench results of schema version " + std::to_string(version) +
                     "; this pipebench writes version " + std::to_string(kResultsSchemaVersion) + " and reads versions " +
                     std::to_string(kOldestReadableSchemaVersion) + "-" + std::to_string(kResultsSchemaVersion) +
                     (write ? ": write to a new file" : ": read it with the pipebench that wrote it"));
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

void write_run(hid_t g, const RunResult& run, const Types& types) {
  h5::write_attr(g, "key", run.key);
  for_each_field<RunSummary>([&](const auto& fd) { write_attr_field(g, fd.name, run.summary.*fd.member); });
  write_attr_field(g, "config", run.config);
  write_attr_field(g, "metadata", run.metadata);
  write_records(g, "actions", run.actions, types);
  write_records(g, "comms", run.comms, types);
  write_records(g, "ranks", run.ranks, types);
  write_records(g, "stages", run.stages, types);
}

RunResult read_group(hid_t g, const Types& types, bool with_records) {
  RunResult run;
  run.key = h5::read_string_attr(g, "key");
  for_each_field<RunSummary>([&](const auto& fd) { read_attr_field(g, fd.name, run.summary.*fd.member); });
  read_attr_field(g, "config", run.config);
  read_attr_field(g, "metadata", run.metadata);
  run.ranks = read_records<RankSummary>(g, "ranks", types);
  run.stages = read_records<StageSummary>(g, "stages", types);
  if (with_records) {
    run.actions = read_records<ActionRecord>(g, "actions", types);
    run.comms = read_records<CommRecord>(g, "comms", types);
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
  const Types types;
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
  const Types types;
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
    if (i == id) return read_group(g.get(), Types(), true);
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
