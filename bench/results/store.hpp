#pragma once
// The HDF5 results file: many runs in one file, appended one at a time by one process (rank 0 after
// the executor's gather), read back by `pipebench report`, h5dump or h5py. docs/results-schema.md
// describes the layout and why it is written this way.
#include <signal.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bench/results/comm_results.hpp"
#include "bench/results/records.hpp"

namespace pipebench::bench {

// Version 2 added the stages table and the analytic figures other than bubble_formula (and pipes) to
// each run's attributes; version 3 the /comm groups of `pipebench comm` (bench/results/comm_results.hpp)
// and the variability over timed steps (step_time_min, ...); version 4 the steps table (every timed
// step of every repeat), the step time's percentiles, repeats and scoring; version 5 the /gemm groups of
// `pipebench gemm` (bench/results/gemm_results.hpp); version 6 the expert exchanges' comm records (kind
// alltoall, group ep: two more names in the enumerations). Versions 1 to 5 are still read (HDF5 converts
// an enumeration by name, so the older, shorter ones read as they are).
inline constexpr std::int64_t kResultsSchemaVersion = 6;
inline constexpr std::int64_t kOldestReadableSchemaVersion = 1;

// Before the sweep, on the writing process: makes `path` ready for the sweep's appends. Without
// `append` the file must not exist, and it is created now, exclusively and whole (an empty results
// file), so that a second sweep naming the same file is refused before it measures anything. With
// `append` an existing file is checked read-only (a sound pipebench results file of this schema
// version, writable) and a missing one is created. UsageError naming the file otherwise. Returns what
// the file holds (for --resume), with `created` set when this call made the file.
// The reading of an existing file takes at most kResultsReadLimit seconds (UsageError past it).
struct PreparedFile;  // below
PreparedFile prepare_results_file(const std::string& path, bool append);
// The longest prepare_results_file reads an existing file (--append) for: each damaged run can cost
// the reader's give-up (ReadRequest::idle_timeout), so the whole reading is bounded too. The other
// ranks of a job wait this much longer for the check in which rank 0 reads it (Job::check's grace), so
// that a slow reading does not make them blame a healthy rank 0 under a short --timeout.
inline constexpr double kResultsReadLimit = 60;
// Creates a new empty results file named `stem` + ".h5", or `stem`-2.h5, -3, ... when that exists
// (two sweeps started in the same second); returns its name. UsageError when none can be made.
std::string create_unique_results_file(const std::string& stem);

// Appends `run` as the next run group, creating the file when it does not exist, and returns the run
// id. The file is checked read-only first and opened for writing only after that. Earlier runs are not
// touched; `complete` is the run's last attribute, written after a flush, so a run cut short by a crash
// stays incomplete and readers skip it. SIGINT, SIGTERM and SIGHUP are held while the file is open
// (see SignalDeferral).
int append_run(const std::string& path, const RunResult& run);

// An exclusive lock on a results file for the whole of a change to it: an append (append_run,
// append_comm) or a `merge --append`, which builds a new file and renames it over the old one. Two of
// them at once would otherwise both succeed while one's runs vanish. The lock is an open file
// description lock (F_OFD_SETLKW: HDF5's own flock does not conflict with it) taken on the file the
// path names; when that file was replaced while this waited, it is taken again on the new one. No
// lock where the file does not exist (its creation is exclusive) or cannot be opened for writing (the
// change then fails with its own message).
class ResultsFileLock {
 public:
  explicit ResultsFileLock(const std::string& path);
  ~ResultsFileLock();
  ResultsFileLock(const ResultsFileLock&) = delete;
  ResultsFileLock& operator=(const ResultsFileLock&) = delete;

 private:
  int fd_ = -1;
};

// For --resume: whether a complete run with this key is in the file (false when there is no file).
bool has_complete_run(const std::string& path, const std::string& key);

struct StoredRun {
  int id = 0;
  RunResult run;
};

// A run group that could not be read (a damaged file): skipped, with the reason.
struct DamagedRun {
  int id = 0;
  std::string reason;
};

struct RunListing {
  std::int64_t schema_version = 0;
  std::vector<StoredRun> runs;       // complete runs read, by id (without action and comm records
                                     // unless asked)
  std::vector<int> complete;         // ids of every complete run, read or not (ReadRequest::only)
  std::vector<int> incomplete;       // ids of run groups without complete=1 (ignored)
  std::vector<DamagedRun> damaged;   // ids of run groups that cannot be read (skipped)
  std::vector<StoredComm> comms;     // complete /comm groups read (ReadRequest::comms), by id
  std::vector<DamagedRun> damaged_comms;  // the /comm group that could not be read (id 0: the /comm
                                          // group itself); the reading stops at the first
};

struct PreparedFile {
  bool created = false;
  RunListing listing;  // what an existing file holds; empty for a new one
};

// Reading a results file that may be damaged or hostile. The structure is checked before anything is
// read (layout.hpp), and the reading runs in a child process that sends the runs back through a pipe:
// a crash or hang inside libhdf5 on a damaged file costs the run it was reading (listed as damaged),
// or, outside any run, becomes UsageError "results file '...' is damaged: ...", never a crash of the
// caller. Errors that concern the whole file (missing, not HDF5, not pipebench, another schema version,
// a damaged root) are UsageError; a damaged run is listed in `damaged` and the others are read.
struct ReadRequest {
  bool records = false;       // also read the action and comm tables
  int only = 0;               // read only this run; the others are just classified (0: read all)
  bool to_append = false;     // refuse a schema version that runs are not appended to
  bool runs = true;           // read /runs (false: only the root and, with `comms`, /comm)
  bool comms = false;         // also read the /comm groups, after the runs
  double idle_timeout = 0;    // seconds without progress before the reading process is stopped
                              // (0: 3 s plus 1 s per 10 MB of file)
  double limit = 0;           // seconds for the whole reading (0: none); past it UsageError
};
RunListing read_results(const std::string& path, const ReadRequest& request = {});
// The same in this process, without the child: the structure checks still hold, but a fault inside
// libhdf5 is not contained. For fuzzing the checks, and where a fork is not possible.
RunListing read_results_in_process(const std::string& path, const ReadRequest& request = {});

// What `pipebench report` uses. Both throw UsageError for a missing file, a file that is not a
// pipebench results file, a schema version this pipebench does not read, a damaged file, or (read_run)
// an id that is not a complete run or whose run is damaged.
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
