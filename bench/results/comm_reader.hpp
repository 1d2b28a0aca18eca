#pragma once
// Reading the communication results `pipebench comm` writes under /comm (the layout agreed for issues
// 9-11, docs/results-schema.md): what `report --html` and `compare` show. Writing them is comm's.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pipebench::bench {

// One row of /comm/<id>/rows, as stored (the members the report uses).
struct CommRow {
  std::int64_t bytes = 0, count = 0;
  double time_us = 0, time_us_min = 0, time_us_max = 0, algbw_GBps = 0, busbw_GBps = 0;
  std::int64_t wrong = 0;
};

// One complete /comm/<id> group.
struct CommResult {
  int id = 0;
  std::string op, group, backend, mapping;
  std::int64_t groups = 0, group_size = 0, one_group = 0;
  std::vector<CommRow> rows;
  std::optional<double> alpha_s, beta_Bps, max_rel_error;  // fit/, where present
  std::map<std::string, std::string> config, metadata;
};

// The complete /comm groups of a results file, by id; empty when it has none (files of schema version
// 1 and 2, or no `pipebench comm` run). Error naming the object when one is damaged.
std::vector<CommResult> read_comm_results(const std::string& path);

}  // namespace pipebench::bench
