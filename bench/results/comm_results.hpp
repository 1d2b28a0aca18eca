#pragma once
// The results of one `pipebench comm` invocation and their place in the results file: the group
// /comm/NNNNNN (docs/results-schema.md, "[v3]"), written by rank 0 with the file's append discipline
// (an unreachable group written whole, then its link, then complete=1) and read back by `pipebench
// report`.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pipebench::bench {

// One row of /comm/NNNNNN/rows: one size and variant (out of place, in place).
struct CommBenchRow {
  std::int64_t bytes = 0;
  std::int64_t count = 0;
  std::int32_t in_place = 0;
  double time_us = 0;      // time of one operation: the slowest group (largest over its ranks)
  double time_us_min = 0;  // over the groups that ran: the fastest group's time
  double time_us_max = 0;  // the slowest group's time
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  std::int64_t wrong = 0;  // -1: not checked (-c 0)
  double latency_us = 0;   // point-to-point latency rows, else 0
  double bandwidth_MBps = 0;  // point-to-point bw and bibw rows, else 0
  bool operator==(const CommBenchRow& o) const;
};

// t(bytes) = alpha + bytes / beta over the out-of-place rows.
struct CommFit {
  double alpha_s = 0, beta_Bps = 0, max_rel_error = 0;
  std::int64_t points = 0;
  bool operator==(const CommFit& o) const;
};

struct CommResult {
  std::string op, group, backend, mapping;
  std::int64_t groups = 0, group_size = 0, one_group = 0;
  std::map<std::string, std::string> config, metadata;
  std::vector<CommBenchRow> rows;
  // Under -I, per row (same index) the time of each timed iteration in microseconds, the slowest rank's
  // (comm::bench::gather_iterations); empty without -I. Stored as the datasets iter_us and iter_counts.
  std::vector<std::vector<double>> iter_us;
  CommFit fit;
  bool operator==(const CommResult& o) const;
};

struct StoredComm {
  int id = 0;
  CommResult result;
};

// Appends `r` as the next /comm group of the results file `path` (which must exist: it is made by
// prepare_results_file before the benchmark) and returns its id. SIGINT, SIGTERM, SIGHUP are held
// while the file is open.
int append_comm(const std::string& path, const CommResult& r);

// Every complete /comm group of `path`, by id (none in a file without /comm: versions 1 and 2, or a
// file with runs only). UsageError for a file that is not a readable results file; Error naming the
// group for one that is damaged. Incomplete groups (no complete=1) are skipped. Read in the reading
// process of read_results (store.hpp), as the runs are.
std::vector<StoredComm> read_comms(const std::string& path);

}  // namespace pipebench::bench
