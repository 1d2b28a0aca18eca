#pragma once
// What one `pipebench run` configuration produces: raw records, per-rank and overall summaries, and the
// configuration and metadata that make it reproducible. The executor and the measurement fill it;
// store.hpp writes and reads it (HDF5); bench/render/ shows it.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/schedule.hpp"
#include "bench/results/fields.hpp"

namespace pipebench::bench {

// Every record declares its fields once in fields() (bench/results/fields.hpp); the HDF5 layout, JSON,
// text tables and equality follow from that list. docs/results-schema.md gives the meaning of each.

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
  double flops = 0;                   // 0 where the workload does not count them
  std::int64_t activation_bytes = 0;  // the most bytes this rank held for activations during the action

  static constexpr auto fields() {
    using R = ActionRecord;
    return std::make_tuple(field("step", &R::step), field("rank", &R::rank), field("global_rank", &R::global_rank),
                           field("stage", &R::stage), field("chunk", &R::chunk), field("mb", &R::mb),
                           field("kind", &R::kind), field("b_stage", &R::b_stage), field("b_mb", &R::b_mb),
                           field("t_start", &R::t_start), field("t_end", &R::t_end), field("flops", &R::flops),
                           field("activation_bytes", &R::activation_bytes));
  }
};

enum class CommKind : std::int32_t {
  Send = 0, Recv = 1, AllReduce = 2, Barrier = 3, AllGather = 4, ReduceScatter = 5,
  AllToAll = 6,  // [v6] an expert exchange (all-to-all-v over the ep group)
};
inline constexpr int kNumCommKinds = 7;
const char* comm_kind_name(CommKind k);

// The group a communication ran in. Its numbering is part of the results schema.
enum class CommGroup : std::int32_t { pp = 0, tp = 1, dp = 2, ep = 3 /* [v6] */ };
inline constexpr int kNumCommGroups = 4;
const char* comm_group_name(CommGroup g);

// One communication: posted when the non-blocking call was made, done when its wait returned.
struct CommRecord {
  std::int32_t step = 0;
  std::int32_t global_rank = 0;
  std::int32_t peer = -1;  // global rank of the peer for send/recv, -1 for collectives
  CommKind kind = CommKind::Send;
  CommGroup group = CommGroup::pp;
  std::int64_t bytes = 0;
  std::int32_t stage = -1;  // the stage and micro-batch the message belongs to, -1 for collectives
  std::int32_t mb = -1;
  // point-to-point: a send and its receive carry the same (src, dst, tag); an expert exchange (AllToAll):
  // which of the chunk's four (kernels::EpExchange: 0 F dispatch, 1 F combine, 2 B combine, 3 B dispatch),
  // its bytes the expert side's (received by a dispatch, 0 and 2; sent by a combine, 1 and 3)
  std::int32_t tag = -1;
  double t_posted = 0;
  double t_wait = 0;        // receives: when the action that needs the message started waiting for it
  double t_done = 0;

  static constexpr auto fields() {
    using R = CommRecord;
    return std::make_tuple(field("step", &R::step), field("global_rank", &R::global_rank), field("peer", &R::peer),
                           field("kind", &R::kind), field("group", &R::group), field("bytes", &R::bytes),
                           field("stage", &R::stage), field("mb", &R::mb), field("tag", &R::tag),
                           field("t_posted", &R::t_posted), field("t_wait", &R::t_wait), field("t_done", &R::t_done));
  }
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

  static constexpr auto fields() {
    using R = RankSummary;
    return std::make_tuple(
        field("global_rank", &R::global_rank, "rank"), field("tp", &R::tp, "tp"), field("pp", &R::pp, "pp"),
        field("dp", &R::dp, "dp"), field("host", &R::host, "host"), field("busy", &R::busy, "busy", Show::ms, "ms"),
        field("idle", &R::idle, "idle", Show::ms, "ms"), field("span_bubble", &R::span_bubble, "span", Show::ms, "ms"),
        field("peak_inflight", &R::peak_inflight, "inflight", Show::plain, "chunks"),
        field("predicted_peak_inflight", &R::predicted_peak_inflight, "predicted", Show::plain, "chunks"),
        field("peak_activation_bytes", &R::peak_activation_bytes, "actmem", Show::mib, "MiB"),
        field("predicted_activation_bytes", &R::predicted_activation_bytes, "predicted", Show::mib, "MiB"),
        field("flop_rate", &R::flop_rate, "achieved", Show::gflops, "GFLOP/s"),
        field("clock_offset", &R::clock_offset, "offset", Show::us, "us"),
        field("clock_uncertainty", &R::clock_uncertainty, "uncert", Show::us, "us"));
  }
};

// What the prediction was fed for one stage of a pipeline: its median measured times, seconds.
struct StageSummary {
  std::int32_t stage = 0;
  double forward = 0;   // F
  double backward = 0;  // B, or I + W
  double weight = 0;    // W (0 where the backward ran whole)

  static constexpr auto fields() {
    using R = StageSummary;
    return std::make_tuple(field("stage", &R::stage), field("forward", &R::forward), field("backward", &R::backward),
                           field("weight", &R::weight));
  }
};

// [v4] One timed step of one repeat of a configuration: the figures the medians, percentiles and
// compare's bootstrap are taken over.
struct StepRecord {
  std::int32_t repeat = 0;  // 0 .. repeats-1; each repeat ran its own warm-up
  std::int32_t step = 0;    // timed step within the repeat
  double step_time = 0;     // seconds: makespan + DP sync + optimizer
  double makespan = 0;
  double bubble = 0;        // measured bubble fraction of the step

  static constexpr auto fields() {
    using R = StepRecord;
    return std::make_tuple(field("repeat", &R::repeat), field("step", &R::step), field("step_time", &R::step_time),
                           field("makespan", &R::makespan), field("bubble", &R::bubble));
  }
};

struct RunSummary {
  double step_time = 0;  // makespan + DP sync + optimizer, median over timed steps
  double makespan = 0;
  double bubble_measured = 0;
  double bubble_simulated = 0;
  double simulated_makespan = 0;
  double dp_sync_time = 0;
  std::int32_t pipes = 1;  // model copies per pipeline (2 for DualPipe)
  // The analytic formula's figures (docs/formulas.md), none where no formula holds; notes say why.
  std::optional<double> bubble_formula;
  std::optional<double> analytic_makespan;
  std::optional<double> analytic_idle;
  std::vector<std::int32_t> analytic_peak_inflight;  // per pipeline rank; empty where no formula holds
  std::string analytic_idle_measure;  // which idle the formula states (analysis::idle_measure_name)
  std::string analytic_source;
  std::map<std::string, std::string> analytic_notes;
  std::map<std::string, double> extra;  // workload-specific figures (loss, FLOP/s, ...: docs/json.md)
  // [v3] Variability over the timed steps (step_time and bubble_measured are the medians): min and max
  // of step time and measured bubble, and the step time's coefficient of variation (sample standard
  // deviation / mean; 0 for one step). None in files of schema version 1 and 2: unknown there.
  std::optional<double> step_time_min, step_time_max, step_time_cv;
  std::optional<double> bubble_min, bubble_max;
  // [v4] Over every timed step of every repeat: percentiles of the step time (linear interpolation,
  // analysis/stats.hpp). The repeats of the configuration and how step_time scores them: "median"
  // (median of the repeats' medians; one repeat: the median over its steps) or "olympic" (MLPerf: the
  // mean of the repeats' medians without the fastest and the slowest). None / 1 / "" before v4.
  std::optional<double> step_time_p50, step_time_p90, step_time_p99;
  std::int32_t repeats = 1;
  std::string scoring;

  static constexpr auto fields() {
    using R = RunSummary;
    return std::make_tuple(
        field("step_time", &R::step_time), field("makespan", &R::makespan),
        field("bubble_measured", &R::bubble_measured), field("bubble_simulated", &R::bubble_simulated),
        field("simulated_makespan", &R::simulated_makespan), field("dp_sync_time", &R::dp_sync_time),
        field("pipes", &R::pipes), field("bubble_formula", &R::bubble_formula),
        field("analytic_makespan", &R::analytic_makespan), field("analytic_idle", &R::analytic_idle),
        field("analytic_peak_inflight", &R::analytic_peak_inflight),
        field("analytic_idle_measure", &R::analytic_idle_measure), field("analytic_source", &R::analytic_source),
        field("analytic_notes", &R::analytic_notes), field("extra", &R::extra),
        field("step_time_min", &R::step_time_min), field("step_time_max", &R::step_time_max),
        field("step_time_cv", &R::step_time_cv), field("bubble_min", &R::bubble_min),
        field("bubble_max", &R::bubble_max), field("step_time_p50", &R::step_time_p50),
        field("step_time_p90", &R::step_time_p90), field("step_time_p99", &R::step_time_p99),
        field("repeats", &R::repeats), field("scoring", &R::scoring));
  }
};

struct RunResult {
  std::string key;  // canonical configuration string; equal keys mean the same configuration (--resume)
  std::map<std::string, std::string> config;    // every setting, as text
  std::map<std::string, std::string> metadata;  // docs/results-schema.md "Metadata"
  RunSummary summary;
  std::vector<RankSummary> ranks;
  std::vector<StageSummary> stages;  // pipeline 0's stages, as the prediction was fed them
  std::vector<ActionRecord> actions;
  std::vector<CommRecord> comms;
  std::vector<StepRecord> steps;  // [v4] every timed step of every repeat; empty before v4
};

// A run's setting `key` as text, "" where the run does not have it.
inline std::string config_value(const RunResult& r, const char* key) {
  const auto it = r.config.find(key);
  return it == r.config.end() ? std::string() : it->second;
}

// A run's schedule and the t, p, d, v, m it sets, e.g. "1f1b t=1 p=4 d=1 v=1 m=8": how reports name it.
inline std::string config_label(const RunResult& r) {
  std::string s = config_value(r, "schedule");
  for (const char* k : {"t", "p", "d", "v", "m"})
    if (!config_value(r, k).empty()) s += std::string(" ") + k + "=" + config_value(r, k);
  return s;
}

inline bool operator==(const ActionRecord& a, const ActionRecord& b) { return fields_equal(a, b); }
inline bool operator==(const CommRecord& a, const CommRecord& b) { return fields_equal(a, b); }
inline bool operator==(const RankSummary& a, const RankSummary& b) { return fields_equal(a, b); }
inline bool operator==(const StageSummary& a, const StageSummary& b) { return fields_equal(a, b); }
inline bool operator==(const StepRecord& a, const StepRecord& b) { return fields_equal(a, b); }
inline bool operator==(const RunSummary& a, const RunSummary& b) { return fields_equal(a, b); }
bool operator==(const RunResult& a, const RunResult& b);

// The spread of a run's step time over its timed steps, (max - min) / median; none where the file
// does not record it (schema versions 1 and 2) or the median is 0. The report flags a run whose spread
// exceeds kSpreadFlag, and `pipebench compare` calls a difference significant only when the min-max
// ranges of two runs do not overlap.
std::optional<double> step_time_spread(const RunSummary& s);
inline constexpr double kSpreadFlag = 0.05;

// `s` as valid UTF-8: every byte that does not belong to a well-formed UTF-8 sequence becomes the four
// characters \xHH; valid text (and backslashes) are left as they are. Text goes through this when it is
// written to a results file and again when it is read back, so a value that came from the environment
// or a damaged file can always be printed as JSON.
std::string utf8_escaped(const std::string& s);

}  // namespace pipebench::bench
