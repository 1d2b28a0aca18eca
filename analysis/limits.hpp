#pragma once
// The sizes pipebench builds in memory, lists in an output or reads from a file, one definition each
// (docs/simulate.md "Limits"). Every input is checked against them before anything is allocated, so
// a size beyond them is a UsageError (exit code 2) naming the value and the limit, never an allocation
// failure or a process the kernel kills.
#include <cstdint>
#include <string>

namespace pipebench::analysis {

// (stage, micro-batch) pairs that run in one schedule: p*v*m for a generated one, stages*m/pipes for
// an imported one. A pair has at most three actions (F, I, W), so 2^24 pairs are at most about 50 M
// actions: about 1 GB of actions plus the simulator's few bytes per pair.
inline constexpr std::int64_t kMaxSchedulePairs = std::int64_t{1} << 24;

// Pipeline ranks p of one schedule: a rank costs about 200 bytes beyond its actions (its list, its
// metrics, the simulator's state), so 2^20 ranks stay near 200 MB.
inline constexpr std::int64_t kMaxPipelineRanks = std::int64_t{1} << 20;

// Items of an output that lists every action with its times or as a picture (simulate --timeline,
// --svg, schedule --format json or svg), or every rank (topology --json): 2^20. Above it the output
// is hundreds of megabytes that no viewer opens.
inline constexpr std::int64_t kMaxListedItems = std::int64_t{1} << 20;

// Sequences of the planner's global batch: it simulates the schedule of m = B / (b d) micro-batches for
// each of hundreds of candidate layouts, so the work grows with B (16777216 took 45 s and 1.27 GB,
// issue 27). 65536 is 32 times Llama 3 405B's largest batch (16M tokens of 8192: 2048 sequences,
// Grattafiori et al. 2024, section 3.4.1).
inline constexpr std::int64_t kMaxGlobalBatch = std::int64_t{1} << 16;

// (stage, micro-batch) pairs the planner's exact simulations of one search may run together, about 1 s
// at 200 ns a pair: the finalists are simulated in order of their closed-form estimate, and one whose
// simulation would go past this is counted as infeasible ("budget") and left out. Before the bound a
// search on 1024 layers and 1024 GPUs simulated 23 M pairs in 4.5 s and L = N = 2^24 took 90 s (issue
// 27); the Llama 3 405B search on 16,384 GPUs simulates 0.48 M, DeepSeek-V3's on 16,384 0.20 M.
inline constexpr std::int64_t kMaxPlanSimulatedPairs = std::int64_t{1} << 22;

// Layers of a model (run, plan): 16,384, a hundred times the deepest published dense models (GPT 1T:
// 128, Narayanan et al. 2021 Table 1; Llama 3 405B: 126). The planner's screening is linear in the
// stages of a layout, so L = N = 2^24 took 90 s before this bound (issue 27); L = 16,384 on 2^20 GPUs
// takes 2.4 s of CPU for a dense model, 13 s for DeepSeek-V3's MoE layers (docs/plan.md).
inline constexpr std::int64_t kMaxModelLayers = std::int64_t{1} << 14;

// Bytes of an input file (a schedule CSV, a hostfile): 64 MiB, read from a regular file only.
inline constexpr std::int64_t kMaxInputBytes = std::int64_t{64} << 20;

// UsageError unless pairs <= kMaxSchedulePairs: "<what> = N ... is not allowed: ...".
void check_schedule_pairs(std::int64_t pairs, const std::string& what);
// UsageError unless p <= kMaxPipelineRanks; `what` names where p comes from.
void check_pipeline_ranks(std::int64_t p, const std::string& what);

// UsageError unless items <= kMaxListedItems; `what` names the output and its size, `instead` says
// what to do instead.
void check_listed_items(std::int64_t items, const std::string& what, const std::string& instead);

// The whole text of a regular file of at most kMaxInputBytes; UsageError naming `what` (e.g.
// "schedule CSV"), the path (quoted) and the reason otherwise: missing or unreadable, not a regular
// file (a directory, /dev/zero, a pipe), or too large.
std::string read_input_file(const std::string& path, const std::string& what);

}  // namespace pipebench::analysis
