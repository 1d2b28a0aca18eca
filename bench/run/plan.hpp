#pragma once
// What `pipebench run` will do, decided before it does anything (docs/design.md "Data flow of `pipebench run`").
// The flags (and --config file) fill RunSettings; plan_sweep() turns them into one immutable Plan per
// configuration: the schedule generated and validated once, the mapping, the workload's settings and
// memory, the configuration record and its resume key. It runs on every rank before any traffic, so a
// bad flag ends the job with one message and exit code 2; every later step reads the plan.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/catalog.hpp"
#include "analysis/memory.hpp"
#include "analysis/schedule.hpp"
#include "bench/parse.hpp"
#include "bench/render/sink.hpp"
#include "bench/run/repeat_order.hpp"
#include "kernels/transformer_workload.hpp"
#include "topology/grid.hpp"

namespace pipebench::bench {

enum class WorkloadKind { synthetic, transformer };
const char* workload_name(WorkloadKind w);

// Settings of the synthetic workload (kernels/synthetic.hpp): times for one rank's whole share, with a
// unit (2 ms, 4 ms, 2 ms unless told otherwise).
struct SyntheticSettings {
  TimeSettings times{seconds(2e-3), seconds(4e-3), seconds(2e-3), seconds(-1), seconds(0), {}};
  bool spin = false;
  std::uint64_t activation_bytes = 1 << 20;
  std::uint64_t p2p_bytes = 64 << 10;
  std::uint64_t tp_allreduce_bytes = 0;
  std::uint64_t dp_grad_bytes = 0;
  // Expert traffic over the ep group (kernels/synthetic.hpp, docs/run.md "Expert traffic"): bytes each
  // rank dispatches per chunk's F (and B), the busiest member's share, the F&B pairs' overlap; the flags
  // given, by name (refused without --ep-alltoall-bytes).
  std::uint64_t ep_alltoall_bytes = 0;
  double routing_imbalance = 1;
  bool ep_overlap = true;
  std::vector<std::string> ep_flags;
};

// The transformer `run` builds unless told otherwise: 8 layers, h = 256, 8 heads, s = 128, b = 1, V = 1024.
kernels::TransformerWorkloadConfig default_model();

// Everything `pipebench run` was told: the sweep's lists and the settings every configuration shares.
// Flags are parsed straight into these fields (bench/flags.hpp).
struct RunSettings {
  std::vector<std::string> schedules = analysis::run_sweep_schedules();  // the catalog rows in_run_sweep
  std::vector<int> microbatches{8, 16};
  std::vector<Mapping> mappings;  // empty: 1 x world x 1
  std::vector<int> vs{0};         // 0: the schedule's default
  int group = 0;                  // interleaved micro-batch group (0: p)
  std::string order = topology::default_order();
  int cp = 1, ep = 1;  // cp: context parallelism of the transformer (model.cp_*); ep: the synthetic expert traffic
  bool cp_comm_given = false, cp_chunks_given = false;  // --cp-comm, --cp-chunks: refused without cp > 1
  std::string backend = "mpi";
  WorkloadKind workload = WorkloadKind::synthetic;
  SyntheticSettings synthetic;
  // Transformer workload; tp_size, tp_rank and mb_offset are set per rank from the mapping.
  kernels::TransformerWorkloadConfig model = default_model();
  // The MoE flags given (--experts, --top-k, ...; on the command line or in --config), by name: refused
  // with the synthetic workload, and all but --experts without an MoE layer.
  std::vector<std::string> moe_flags;
  int blas_threads = 1;
  int dp_buckets = 0;
  // The ZeRO stage over the data-parallel group (transformer; bench/run/executor.hpp): 1 the optimizer
  // state sharded, 2 the gradients too, 3 the weights too (FSDP).
  // --precision, into model.fp64 and model.half (kernels::set_precision) once the flags are parsed.
  kernels::Precision precision = kernels::Precision::fp32;
  bool loss_scaling = true;  // --loss-scale dynamic|off (fp16)
  bool grad_reduce_bf16 = false;  // --grad-reduce-dtype bf16
  int zero = 0;
  int reshard_after_forward = -1;  // ZeRO-3: 1 (the default where not given, -1) or 0 (kept until the backward)
  bool gather_prefetch = true;     // ZeRO-3: the next action's gathers posted during this one

  int warmup = 1;
  int steps = 3;
  int repeats = 1;                   // whole configurations, each with its own warm-up (--repeats)
  int job_warmup = 3;                // untimed steps of the first configuration before its repeats (--job-warmup)
  std::string scoring = "median";    // how the repeats score: median or olympic (bench/results/steps.hpp)
  // When the repeats run (--repeat-order): "interleaved", round r of every configuration before round
  // r + 1 (bench/run/repeat_order.hpp), or "consecutive", a configuration's repeats back to back.
  std::string repeat_order = kRepeatOrderInterleaved;
  std::string system_file;                    // --system FILE.toml
  std::map<std::string, std::string> system;  // its [system] table, stored as metadata system.<key>
  Duration timeout = seconds(60);
  int poll_us = 50;

  std::string out;  // results file; empty: results/pipebench-<UTC time>.h5
  bool append = false;
  bool resume = false;
  bool json = false, csv = false;
  Format format = Format::text;  // from --json / --csv
  std::string trace;  // Chrome trace of configuration `pick`
  std::string trace_kineto, trace_chakra;  // per-rank traces of `pick`: PREFIX.<rank>.json, PREFIX.<rank>.et
  std::string svg;    // SVG timeline of the first timed step of configuration `pick`
  int pick = 1;
  bool force = false;  // --trace and --svg may replace an existing file
  std::string command_line;

  // Fault injection for the tests: global rank `fail_rank` exits (or hangs) in configuration
  // `fail_config`, step `fail_step`.
  int fail_rank = -1, fail_config = 0, fail_step = 0;
  bool fail_hang = false;
};

// One configuration of the sweep, complete: nothing about it is recomputed later.
struct Plan {
  int index = 0;  // 1-based position in the sweep
  Mapping mapping;
  int group = 0;  // the interleaved group the schedule was made with (0 for other schedules)
  analysis::Schedule schedule;
  // Per stage, what one in-flight micro-batch holds (forward and weight stashes), and per pipeline rank
  // the bytes it needs at its peak (weights, gradients and workspace too, for the transformer).
  std::vector<analysis::StashBytes> stash;
  std::vector<double> memory_need;
  kernels::TransformerWorkloadConfig model;  // the transformer of this configuration (tp_size set)
  Times times;                               // the synthetic workload's times, seconds (checked)
  // The transformer with Adam: the most optimizer-state bytes any rank should hold (the formula the
  // measured figure is set beside; ZeRO-1 shards included); 0 otherwise.
  double optimizer_state_bytes = 0;
  // Every setting as text: RunResult::config. Normalised, so that equal configurations have equal keys:
  // the interleaved group equal to p is 0 (the default), stage costs all 1 are "uniform".
  std::map<std::string, std::string> config;
  std::string key;  // the canonical key of `config` (--resume)
  std::string label;                          // "1f1b 1x4x1 m=8", for messages
};

// The bounds of a sweep (docs/run.md "Bounds"), so that every allowed sweep fits in memory: what
// every rank plans, what rank 0 gathers, and how long a wait may be.
inline constexpr long long kMaxConfigurations = 100000;  // schedules x mappings x v x m, before duplicates go
// (chunk, micro-batch) pairs: a pair is 2 or 3 actions (F, B or I and W) of 20 bytes in a plan, and as
// many action records (72 bytes) and their messages on rank 0 per timed step and pipeline.
inline constexpr long long kMaxSweepPairs = 1LL << 22;     // p*m*v summed over the sweep: what every rank plans
inline constexpr long long kMaxRecordedPairs = 1LL << 21;  // p*m*v x t*d x timed steps: what rank 0 gathers
// --timeout, seconds. Below a second a healthy job is blamed: a rank descheduled on a busy node, the
// world's MPI_Comm_idup, a meeting's roll call (half the timeout) miss it (issue 27: 1-2 ms failed
// jobs of one rank, 50-100 ms jobs of two).
inline constexpr double kMinTimeout = 1.0;
inline constexpr double kMaxTimeout = 7 * 86400.0;       // a week
inline constexpr int kPollsPerTimeout = 10;              // --poll-us at most --timeout / 10

// The order of the sweep's grids: --order, where cp > 1 and --order is the default tp-dp-pp the default
// with cp, tp-cp-dp-pp (Megatron-Core's order without ep).
std::string run_order(const RunSettings& s);
// The rank grid of a mapping: t x cp x p x d under run_order (the Grid checks the order string).
topology::Grid run_grid(const RunSettings& s, const Mapping& m);

// The MoE flags: only with the transformer, all but --experts only with experts, E split evenly over ep
// (bench/run/plan_axes.cpp). UsageError naming the flag.
void check_moe(const RunSettings& rs);
// --expert-parallel and the synthetic expert traffic's flags (bench/run/plan_axes.cpp): ep > 1 only with
// the synthetic workload's traffic over MPI, bytes a multiple of ep, 1 <= imbalance <= ep.
void check_expert_traffic(const RunSettings& rs);
// --context-parallel and its flags: the transformer over MPI only, a cp that divides the job.
void check_context_parallel(const RunSettings& rs, int world_size);

// --timeout of `run` and `comm`, before MPI starts: a time with a unit from kMinTimeout to kMaxTimeout;
// UsageError naming it otherwise.
void check_timeout(const Duration& timeout);

// The sweep's rank mappings: --mapping's, or 1 x world_size/cp x 1 (a pipeline only) when none is given.
std::vector<Mapping> sweep_mappings(const RunSettings& s, int world_size);

// Every configuration of the sweep (schedules x mappings x v x m, in that nesting order), checked:
// mappings multiply to the world size, each schedule accepts its p, m, v and group, the model divides,
// times and sizes are sane and within the bounds above. UsageError (naming the configuration) otherwise.
// Configurations equal to an earlier one (the same key: `-m 8,8`, `-v 2` beside the default of
// interleaved) are dropped, their labels added to `duplicates` when it is given; indices count the rest.
std::vector<Plan> plan_sweep(const RunSettings& s, int world_size, std::vector<std::string>* duplicates = nullptr);

// Refuses (UsageError) a sweep in which some configuration needs more memory on a rank than
// `per_rank_bytes` (this node's available memory shared by its ranks); 0 skips the check.
void check_memory(const std::vector<Plan>& plans, double per_rank_bytes);

// Refuses (UsageError) `what` ("configuration X", "comm -e 4G") needing `need_bytes` `where` (" on
// pipeline rank 1", or empty) beyond 90 % of `per_rank_bytes` (memory_per_rank_bytes), saying what
// was counted and what would fit; 0 skips the check. The one wording of every memory refusal.
void check_fits(const std::string& what, double need_bytes, const std::string& where, double per_rank_bytes,
                const std::string& counted);

// MemAvailable of /proc/meminfo in bytes; 0 where it cannot be read.
double available_memory_bytes();
// What one of this node's `local_ranks` ranks may use: MemAvailable over the ranks, no more than the
// cgroup's memory limit over the ranks (memory.max, a Slurm job's --mem), nor what this process may
// still map under its address-space limit (RLIMIT_AS, ulimit -v); 0 where none can be read.
double memory_per_rank_bytes(int local_ranks);

}  // namespace pipebench::bench
