#pragma once
// The HDF5 results file: many runs in one file, appended one at a time by one process (rank 0 after
// the executor's gather), read back by `pipebench report`, h5dump or h5py. docs/results-schema.md
// describes the layout and why it is written this way.
#include <signal.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bench/results/records.hpp"

namespace pipebench::bench {

// Version 2 added the stages table and the analytic figures other than bubble_formula (and pipes) to
// each run's attributes; version 1 files are still read.
inline constexpr std::int64_t kResultsSchemaVersion = 2;
inline constexpr std::int64_t kOldestReadableSchemaVersion = 1;

// Checks, before any run starts, that runs can be written to `path`; throws UsageError otherwise.
// Without `append` the file must not exist (results are never overwritten) and must be creatable
// (probed by creating and removing it). With `append` an existing file must be a pipebench results
// file of this schema version that opens for writing; a missing one is created by the first run.
void check_results_file(const std::string& path, bool append);

// Appends `run` as the next run group, creating the file when it does not exist, and returns the run
// id. Earlier runs are not touched; `complete` is the run's last attribute, written after a flush, so
// a run cut short by a crash stays incomplete and readers skip it. SIGINT, SIGTERM and SIGHUP are
// held while the file is open (see SignalDeferral).
int append_run(const std::string& path, const RunResult& run);

// For --resume: whether a complete run with this key is in the file (false when there is no file).
bool has_complete_run(const std::string& path, const std::string& key);

struct StoredRun {
  int id = 0;
  RunResult run;
};

struct RunListing {
  std::vector<StoredRun> runs;  // complete runs by id, without their action and comm records
  std::vector<int> incomplete;  // ids of run groups without complete=1 (ignored)
};

// Both throw UsageError for a missing file, a file that is not a pipebench results file, a schema
// version this pipebench does not read, or (read_run) an id that is not a complete run.
RunListing list_runs(const std::string& path);
RunResult read_run(const std::string& path, int id);

// "1-3, 5, 7-8": a sorted id list for messages.
std::string id_ranges(const std::vector<int>& ids);

// While alive, SIGINT, SIGTERM and SIGHUP only set a flag; the destructor restores the previous
// handlers and raises the first one that arrived. A batch job that hits its time limit (Slurm sends
// SIGTERM, then SIGKILL after KillWait) or a Ctrl-C during a write therefore ends after the file is
// closed, not in the middle of it. SIGKILL cannot be held. Not reentrant: one at a time.
class SignalDeferral {
 public:
  SignalDeferral();
  ~SignalDeferral();
  SignalDeferral(const SignalDeferral&) = delete;
  SignalDeferral& operator=(const SignalDeferral&) = delete;

 private:
  struct sigaction previous_[3];
};

}  // namespace pipebench::bench
