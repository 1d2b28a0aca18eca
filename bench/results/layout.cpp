#include "bench/results/layout.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <thread>
#include <cstring>
#include <deque>
#include <memory>
#include <type_traits>

#include "bench/results/store.hpp"
#include "bench/version.hpp"

namespace pipebench::bench {

namespace {

constexpr const char* kSchemaText =
    "pipebench results. /runs/<id> (6-digit, from 000001) holds one benchmark run: attributes key, the "
    "summary figures (seconds; bubble fractions 0..1; analytic figures absent where no formula holds) and "
    "complete=1, written last (ignore runs without it); groups config, metadata and analytic_notes (one "
    "string attribute per entry) and extra (float64 attributes); compound datasets actions, comms, ranks "
    "stages and steps (times in "
    "seconds on rank 0's clock from the start of each timed step; steps: one row per timed step of each repeat). "
    "/comm/<id> and /gemm/<id>: the results of pipebench comm and pipebench gemm. See docs/results-schema.md.";

template <class Record, class Member>
std::size_t offset_of(Member Record::*member) {
  static const Record probe{};
  return static_cast<std::size_t>(reinterpret_cast<const char*>(&(probe.*member)) - reinterpret_cast<const char*>(&probe));
}

template <class Record, class Member>
hid_t type_of(const RecordTypes& types, Member Record::*) {
  return types.of(static_cast<const Member*>(nullptr));
}

// A record table's rows as HDF5 stores them: each record in sizeof(Record) bytes, its fields at their
// own offsets, a text field as the char* that HDF5's variable-length strings are made of.
template <class Record>
h5::Id compound_of(const RecordTypes& types) {
  h5::Id type = h5::compound_type(sizeof(Record));
  for_each_field<Record>([&](const auto& fd) {
    h5::insert_member(type.get(), fd.name, offset_of(fd.member), type_of(types, fd.member));
  });
  return type;
}

// Text that is not valid UTF-8 is written escaped; `kept` holds those copies while HDF5 reads them.
template <class Record>
std::vector<unsigned char> pack(const std::vector<Record>& records, std::deque<std::string>& kept) {
  std::vector<unsigned char> rows(records.size() * sizeof(Record));
  for (std::size_t i = 0; i < records.size(); ++i)
    for_each_field<Record>([&](const auto& fd) {
      unsigned char* at = rows.data() + i * sizeof(Record) + offset_of(fd.member);
      const auto& value = records[i].*fd.member;
      if constexpr (std::is_same_v<std::decay_t<decltype(value)>, std::string>) {
        const std::string* text = &value;
        if (utf8_escaped(value) != value) text = &kept.emplace_back(utf8_escaped(value));
        const char* p = text->c_str();  // HDF5 only reads it
        std::memcpy(at, &p, sizeof p);
      } else {
        std::memcpy(at, &value, sizeof value);
      }
    });
  return rows;
}

template <class Record>
void write_records(hid_t g, const char* name, const std::vector<Record>& records, const RecordTypes& types) {
  const h5::Id type = compound_of<Record>(types);
  std::deque<std::string> kept;
  const auto rows = pack(records, kept);
  h5::write_table(g, name, type.get(), rows.data(), records.size());
}

// An enumeration value outside its names (a damaged file: HDF5 converts unknown values to all ones).
template <class E>
void check_enum(E value, int count, const char* field, std::size_t row, hid_t g, const char* table) {
  const auto v = static_cast<long long>(value);
  if (v < 0 || v >= count)
    throw Error("HDF5: dataset '" + h5::where(g) + "/" + table + "' row " + std::to_string(row) + " has " + field +
                " " + std::to_string(v) + ", not one of the " + std::to_string(count) + " names of its enumeration");
}

// A table that is missing reads as empty: files of schema version 1 have no "stages".
template <class Record>
std::vector<Record> read_records(hid_t g, const char* name, const RecordTypes& types) {
  if (!h5::has_link(g, name)) return {};
  const h5::Id type = compound_of<Record>(types);
  std::vector<Record> out(h5::checked_table_size(g, name, type.get()));
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
      using T = std::decay_t<decltype(value)>;
      if constexpr (std::is_same_v<T, std::string>) {
        const char* text = nullptr;
        std::memcpy(&text, at, sizeof text);
        const std::size_t n = text ? std::strlen(text) : 0;
        if (n > h5::kMaxText)
          throw Error("HDF5: dataset '" + h5::where(g) + "/" + name + "' row " + std::to_string(i) + " holds " +
                      std::to_string(n) + " bytes of text in " + fd.name + ", more than a results file has");
        value = utf8_escaped(std::string(text ? text : "", n));
      } else {
        std::memcpy(&value, at, sizeof value);
        if constexpr (std::is_same_v<T, analysis::Kind>) check_enum(value, analysis::kNumKinds, fd.name, i, g, name);
        if constexpr (std::is_same_v<T, CommKind>) check_enum(value, kNumCommKinds, fd.name, i, g, name);
        if constexpr (std::is_same_v<T, CommGroup>) check_enum(value, kNumCommGroups, fd.name, i, g, name);
      }
    });
  return out;
}

// RunSummary as attributes of the run group: a number or text per field, a field without a value
// (a formula that does not hold) as no attribute, a list as a small dataset, a map as a subgroup with
// one attribute per entry.
void write_attr_field(hid_t g, const char* name, double v) { h5::write_attr(g, name, v); }
void write_attr_field(hid_t g, const char* name, std::int32_t v) { h5::write_attr(g, name, std::int64_t{v}); }
void write_attr_field(hid_t g, const char* name, const std::string& v) { h5::write_attr(g, name, utf8_escaped(v)); }
void write_attr_field(hid_t g, const char* name, const std::optional<double>& v) {
  if (v) h5::write_attr(g, name, *v);
}
void write_attr_field(hid_t g, const char* name, const std::vector<std::int32_t>& v) {
  if (!v.empty()) h5::write_table(g, name, H5T_NATIVE_INT32, v.data(), v.size());
}
template <class V>
void write_attr_field(hid_t g, const char* name, const std::map<std::string, V>& entries) {
  const h5::Id sub = h5::create_group(g, name);
  for (const auto& [k, v] : entries) write_attr_field(sub.get(), utf8_escaped(k).c_str(), v);
}

// Fields that version 1 files lack read as their defaults.
void read_attr_field(hid_t g, const char* name, double& v) { v = h5::read_double_attr(g, name); }
void read_attr_field(hid_t g, const char* name, std::int32_t& v) {
  if (!h5::has_attr(g, name)) return;
  const std::int64_t x = h5::read_int_attr(g, name);
  if (x < INT32_MIN || x > INT32_MAX)
    throw Error("HDF5: attribute '" + h5::where(g) + "/" + name + "' = " + std::to_string(x) + " is out of range");
  v = static_cast<std::int32_t>(x);
}
void read_attr_field(hid_t g, const char* name, std::string& v) {
  if (h5::has_attr(g, name)) v = utf8_escaped(h5::read_string_attr(g, name));
}
void read_attr_field(hid_t g, const char* name, std::optional<double>& v) {
  if (h5::has_attr(g, name)) v = h5::read_double_attr(g, name);
}
void read_attr_field(hid_t g, const char* name, std::vector<std::int32_t>& v) {
  if (!h5::has_link(g, name)) return;
  v.resize(h5::checked_table_size(g, name, H5T_NATIVE_INT32));
  if (!v.empty()) h5::read_table(g, name, H5T_NATIVE_INT32, v.data());
}
template <class V>
void read_attr_field(hid_t g, const char* name, std::map<std::string, V>& entries) {
  if (!h5::has_link(g, name)) return;
  if (h5::object_kind(g, name) != h5::ObjectKind::group)
    throw Error("HDF5: '" + h5::where(g) + "/" + name + "' is not a group");
  const h5::Id sub = h5::open_group(g, name);
  for (const auto& k : h5::attr_names(sub.get())) {
    V value{};
    if constexpr (std::is_same_v<V, double>)
      value = h5::read_double_attr(sub.get(), k);
    else
      value = utf8_escaped(h5::read_string_attr(sub.get(), k));
    entries[utf8_escaped(k)] = std::move(value);
  }
}

}  // namespace

RecordTypes::RecordTypes() {
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

h5::Id open_results_file(const std::string& path, bool write) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw UsageError("results file '" + path + "' cannot be opened: " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw UsageError("'" + path + "' is a directory, not a results file");
  // A FIFO or device would block or never end (/dev/zero).
  if (!S_ISREG(st.st_mode)) throw UsageError("'" + path + "' is not a regular file, so not a results file");
  if (::access(path.c_str(), R_OK) != 0) throw UsageError("cannot read '" + path + "': " + std::strerror(errno));
  if (!h5::is_hdf5(path)) throw UsageError("'" + path + "' is not an HDF5 file, so not a pipebench results file");
  // Readers and writers lock the file while it is open, for milliseconds: `pipebench report` during
  // a sweep must not cost the sweep its run, so a locked file is waited for (up to 10 s), not refused.
  for (int attempt = 0;; ++attempt) {
    try {
      return h5::open_file(path, write);
    } catch (const Error& e) {
      const bool locked = std::string(e.what()).find("unable to lock file") != std::string::npos;
      if (!locked) throw UsageError("results file '" + path + "' is damaged: " + e.what());
      if (attempt == 100) throw UsageError(e.what());
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
}

void write_root(hid_t file) {
  h5::write_attr(file, kVersionAttr, kResultsSchemaVersion);
  h5::write_attr(file, "pipebench_schema", std::string(kSchemaText));
  h5::write_attr(file, "created_by", std::string("pipebench ") + version() + " (commit " + commit() + ")");
  h5::create_group(file, "runs");
}

std::int64_t check_root(hid_t file, const std::string& path) {
  const std::string not_ours = "'" + path + "' is an HDF5 file but not a pipebench results file";
  if (!h5::has_attr(file, kVersionAttr)) throw UsageError(not_ours + " (it has no " + kVersionAttr + " attribute)");
  std::int64_t version = 0;
  try {
    version = h5::read_int_attr(file, kVersionAttr);
  } catch (const Error&) {
    throw UsageError(not_ours + " (its " + kVersionAttr + " attribute is not an integer)");
  }
  switch (h5::object_kind(file, "runs")) {
    case h5::ObjectKind::group: return version;
    case h5::ObjectKind::missing: throw UsageError(not_ours + " (it has no /runs group)");
    default: throw UsageError(not_ours + " (its /runs is not a group)");
  }
}

void check_version(std::int64_t version, const std::string& path, bool write) {
  // Version 1 files (no stage table, fewer analytic figures) are read, but runs are only added to files
  // of this version, so that one file never mixes two layouts.
  if (version != kResultsSchemaVersion && (write || version < kOldestReadableSchemaVersion || version > kResultsSchemaVersion))
    throw UsageError("'" + path + "' holds pipebench results of schema version " + std::to_string(version) +
                     "; this pipebench writes version " + std::to_string(kResultsSchemaVersion) + " and reads versions " +
                     std::to_string(kOldestReadableSchemaVersion) + "-" + std::to_string(kResultsSchemaVersion) +
                     (write ? ": write to a new file" : ": read it with the pipebench that wrote it"));
}

void write_run_group(hid_t g, const RunResult& run, const RecordTypes& types) {
  write_attr_field(g, "key", run.key);
  for_each_field<RunSummary>([&](const auto& fd) { write_attr_field(g, fd.name, run.summary.*fd.member); });
  write_attr_field(g, "config", run.config);
  write_attr_field(g, "metadata", run.metadata);
  write_records(g, "actions", run.actions, types);
  write_records(g, "comms", run.comms, types);
  write_records(g, "ranks", run.ranks, types);
  write_records(g, "stages", run.stages, types);
  write_records(g, "steps", run.steps, types);
}

RunResult read_run_group(hid_t g, const RecordTypes& types, bool with_records) {
  RunResult run;
  run.key = utf8_escaped(h5::read_string_attr(g, "key"));
  for_each_field<RunSummary>([&](const auto& fd) { read_attr_field(g, fd.name, run.summary.*fd.member); });
  read_attr_field(g, "config", run.config);
  read_attr_field(g, "metadata", run.metadata);
  run.ranks = read_records<RankSummary>(g, "ranks", types);
  run.stages = read_records<StageSummary>(g, "stages", types);
  run.steps = read_records<StepRecord>(g, "steps", types);
  if (with_records) {
    run.actions = read_records<ActionRecord>(g, "actions", types);
    run.comms = read_records<CommRecord>(g, "comms", types);
  }
  return run;
}

std::string run_name(int id) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%06d", id);
  return buf;
}

std::vector<int> run_ids(hid_t runs) {
  std::vector<int> ids;
  for (const auto& name : h5::link_names(runs)) {
    if (name.empty() || name.size() > 9 || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    const int id = std::stoi(name);
    if (id > 0 && name == run_name(id)) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace pipebench::bench
