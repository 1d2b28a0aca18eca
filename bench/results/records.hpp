#pragma once
// What one `pipebench run` configuration produces: raw records, per-rank and overall summaries, and the
// configuration and metadata that make it reproducible. The executor fills it; store.hpp writes and
// reads it (HDF5); report and trace render it.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/schedule.hpp"

namespace pipebench::bench {

// One executed action. Times are seconds on rank 0's clock, relative to the start of its timed step.
struct ActionRecord {
  std::int32_t step = 0;  // timed step index (warm-up steps are not recorded)
  std::int32_t rank = 0;  // pipeline rank within its pipeline group
  std::int32_t global_rank = 0;
  std::int32_t stage = 0;
  std::int32_t chunk = 0;
  std::int32_t mb = 0;
  analysis::Kind kind = analysis::Kind::F;
  std::int32_t b_stage = -1;  // F&B only
  std::int32_t b_mb = -1;
  double t_start = 0;
  double t_end = 0;
  double flops = 0;                  // 0 where the workload does not count them
  std::int64_t activation_bytes = 0;  // the most bytes this rank held for activations during the action
};

enum class CommKind : std::int32_t { Send = 0, Recv = 1, AllReduce = 2, Barrier = 3, AllGather = 4, ReduceScatter = 5 };
const char* comm_kind_name(CommKind k);

// One communication: posted when the non-blocking call was made, done when its wait returned.
struct CommRecord {
  std::int32_t step = 0;
  std::int32_t global_rank = 0;
  std::int32_t peer = -1;  // global rank of the peer for send/recv, -1 for collectives
  CommKind kind = CommKind::Send;
  std::int32_t group = 0;  // 0 pp, 1 tp, 2 dp
  std::int64_t bytes = 0;
  std::int32_t stage = -1;  // the stage and micro-batch the message belongs to, -1 for collectives
  std::int32_t mb = -1;
  std::int32_t tag = -1;    // point-to-point: a send and its receive carry the same (src, dst, tag)
  double t_posted = 0;
  double t_wait = 0;        // receives: when the action that needs the message started waiting for it
  double t_done = 0;
};

struct RankSummary {
  std::int32_t global_rank = 0;
  std::int32_t tp = 0, pp = 0, dp = 0;
  double busy = 0, idle = 0, span_bubble = 0;  // medians over timed steps, seconds
  std::int32_t peak_inflight = 0;
  std::int32_t predicted_peak_inflight = 0;
  std::int64_t peak_activation_bytes = 0;
  std::int64_t predicted_activation_bytes = 0;  // the simulated timeline with the workload's stash sizes
  double flop_rate = 0;                         // FLOPs of its actions per second of step time (0: not counted)
  double clock_offset = 0;       // seconds added to this rank's clock to get rank 0's
  double clock_uncertainty = 0;  // half the best ping-pong round trip
  std::string host;
};

struct RunSummary {
  double step_time = 0;  // makespan + DP sync + optimizer, median over timed steps
  double makespan = 0;
  double bubble_measured = 0;
  double bubble_simulated = 0;
  std::optional<double> bubble_formula;  // none where no formula holds
  double simulated_makespan = 0;
  double dp_sync_time = 0;
  std::map<std::string, double> extra;  // workload-specific figures (loss, FLOP/s, ...)
};

struct RunResult {
  std::string key;  // canonical configuration string; equal keys mean the same configuration (--resume)
  std::map<std::string, std::string> config;    // every setting, as text
  std::map<std::string, std::string> metadata;  // docs/formulas.md "Result metadata"
  std::vector<ActionRecord> actions;
  std::vector<CommRecord> comms;
  std::vector<RankSummary> ranks;
  RunSummary summary;
};

// Field-by-field equality (doubles compared exactly): a run read back from a file must equal the one
// written.
bool operator==(const ActionRecord& a, const ActionRecord& b);
bool operator==(const CommRecord& a, const CommRecord& b);
bool operator==(const RankSummary& a, const RankSummary& b);
bool operator==(const RunSummary& a, const RunSummary& b);
bool operator==(const RunResult& a, const RunResult& b);

}  // namespace pipebench::bench
