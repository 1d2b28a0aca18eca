#pragma once
// The settings of `pipebench run` and the sweep they describe. Everything here is checked on every rank
// before any communication (docs/design.md "Conventions"), so a bad flag ends the job with one message and exit code 2.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/memory.hpp"
#include "analysis/schedule.hpp"
#include "kernels/transformer_workload.hpp"

namespace pipebench::bench {

struct Mapping {
  int t = 1, p = 1, d = 1;
};

// One configuration of the sweep.
struct RunPoint {
  std::string schedule;
  Mapping mapping;
  int m = 1;
  int v = 0;  // 0: the schedule's default
};

struct RunConfig {
  std::vector<std::string> schedules;
  std::vector<int> microbatches;
  std::vector<Mapping> mappings;  // empty: 1 x world x 1
  std::vector<int> vs{0};
  int group = 0;
  std::string order = "tp-dp-pp";
  std::string backend = "mpi";
  std::string workload = "synthetic";

  // Synthetic workload (kernels/synthetic.hpp): times for one rank's whole share, seconds.
  double tf = 2e-3, tb = 4e-3, tw = 2e-3, t_overlap = -1;
  std::vector<double> stage_cost;
  bool spin = false;
  std::uint64_t activation_bytes = 1 << 20;
  std::uint64_t p2p_bytes = 64 << 10;
  std::uint64_t tp_allreduce_bytes = 0;
  std::uint64_t dp_grad_bytes = 0;
  int dp_buckets = 0;

  // Transformer workload (kernels/transformer_workload.hpp); its tp_size, tp_rank and mb_offset are
  // set per rank from the mapping.
  kernels::TransformerWorkloadConfig model;
  int blas_threads = 1;

  int warmup = 1;
  int steps = 3;
  double timeout = 60;
  int poll_us = 50;

  std::string out;  // results file
  bool append = false;
  bool resume = false;
  bool json = false;
  std::string trace;   // Chrome trace of configuration `pick`
  std::string svg;     // SVG timeline of the first timed step of configuration `pick`
  int pick = 1;
  std::string command_line;

  // Fault injection for the tests: global rank `fail_rank` exits (or hangs) in configuration
  // `fail_config`, step `fail_step`.
  int fail_rank = -1, fail_config = 0, fail_step = 0;
  bool fail_hang = false;
};

// The sweep: the cartesian product of schedules, mappings, v values and micro-batch counts, in that
// nesting order. Mappings default to 1 x world x 1.
std::vector<RunPoint> expand(const RunConfig& c, int world_size);

// Checks the whole sweep for this world: every mapping multiplies to the world size, every schedule
// accepts its p, m, v and group (the generator is run), times and sizes are sane. UsageError otherwise.
// Combinations of a sweep that a schedule rejects are an error too: the message says which.
void validate(const RunConfig& c, int world_size);

// Every setting of one configuration as text (RunResult::config), and the canonical key that tells
// two runs of the same configuration apart from others (--resume).
std::map<std::string, std::string> config_map(const RunConfig& c, const RunPoint& pt, const analysis::Schedule& s);
std::string config_key(const std::map<std::string, std::string>& config);

std::string describe(const RunPoint& pt);  // "1f1b 1x4x1 m=8"

// The schedule of a configuration (generated and validated).
analysis::Schedule make_run_schedule(const RunConfig& c, const RunPoint& pt);

// The transformer model of a configuration on a rank with tensor-parallel index tp_rank.
kernels::TransformerWorkloadConfig model_config(const RunConfig& c, const RunPoint& pt, int tp_rank = 0);

// What each stage holds per in-flight micro-batch (forward and weight stashes), for the prediction.
std::vector<analysis::StashBytes> stash_sizes(const RunConfig& c, const RunPoint& pt, const analysis::Schedule& s);

// Bytes each pipeline rank needs at its peak: weights, gradients and workspace of its stages (transformer)
// plus its peak activation memory. For the memory check before anything is allocated.
std::vector<double> rank_memory_needs(const RunConfig& c, const RunPoint& pt, const analysis::Schedule& s);

// Refuses (UsageError) a sweep in which some configuration needs more memory on a rank than
// `per_rank_bytes` (this node's available memory shared by its ranks); 0 skips the check.
void check_memory(const RunConfig& c, int world_size, double per_rank_bytes);

// MemAvailable of /proc/meminfo in bytes; 0 where it cannot be read.
double available_memory_bytes();

}  // namespace pipebench::bench
