#pragma once
// How a results file is laid out (docs/results-schema.md): its root, and one run per group. store.cpp
// writes files with these functions, reader.cpp reads them. Reading checks the structure before it
// reads (object kinds, attribute classes and sizes, dataset ranks, member types and sizes against the
// file's size, enumeration values), so that a damaged file is an Error that says what is wrong rather
// than a read of garbage.
#include <cstdint>
#include <string>
#include <vector>

#include "bench/results/comm_results.hpp"
#include "bench/results/h5.hpp"
#include "bench/results/records.hpp"

namespace pipebench::bench {

inline constexpr const char* kVersionAttr = "pipebench_schema_version";

// The HDF5 types of the record fields: enumerations for kinds and groups, variable-length UTF-8 for
// text, native integers and doubles for the rest.
class RecordTypes {
 public:
  RecordTypes();
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

// Opens an existing file (read-only unless `write`), waiting up to 10 s for another process's lock;
// UsageError for a missing file, a directory, an unreadable file or one that is not HDF5.
h5::Id open_results_file(const std::string& path, bool write);
// The root of a new file: version, description, creator and an empty /runs.
void write_root(hid_t file);
// Checks the root of an open file (a version attribute that is one integer, /runs a group) and returns
// the schema version; UsageError naming `path` and what is missing otherwise. Does not judge the
// version: the caller knows whether it reads or writes.
std::int64_t check_root(hid_t file, const std::string& path);
// "'f.h5' holds pipebench results of schema version 9; this pipebench writes ...": UsageError unless
// `version` can be read (or, when `write`, appended to).
void check_version(std::int64_t version, const std::string& path, bool write);

void write_run_group(hid_t g, const RunResult& run, const RecordTypes& types);
// A run group read back, checked as it goes; text is made valid UTF-8 (utf8_escaped). Error naming the
// object when the group is damaged.
RunResult read_run_group(hid_t g, const RecordTypes& types, bool with_records);

// A /comm group read back (its layout is comm_results.cpp's); Error naming the object when damaged.
CommResult read_comm_group(hid_t g);

std::string run_name(int id);  // "000042"
// The run ids under /runs, sorted: link names that are run_name(id) for some id; others are skipped.
std::vector<int> run_ids(hid_t runs);

}  // namespace pipebench::bench
