#pragma once
// `pipebench compare A.h5 B.h5`: runs of two results files matched by configuration, with B/A ratios,
// significance from the min-max ranges over timed steps, geometric means per schedule, configurations
// in one file only and the metadata that differs (docs/report.md "compare").
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/render/html.hpp"
#include "bench/results/store.hpp"

namespace pipebench::bench {

// The configuration a run is matched by: its config entries without the measurement settings
// warmup_steps and timed_steps ("name=value" joined by spaces, sorted by name), or its key when it has
// no config.
std::string match_key(const RunResult& run);

// Whether two measured ranges [a_lo, a_hi] and [b_lo, b_hi] do not overlap.
bool ranges_disjoint(double a_lo, double a_hi, double b_lo, double b_hi);

// --threshold's default, the practical floor: a difference is significant when its bootstrap interval
// excludes 1 and B/A is at least 5 % from 1. Above the 3 % flukes of identical sweeps on a loaded
// 2-core VM, below MLPerf Inference's 10 % tolerance between a compliance run and the submission run
// it checks (mlcommons/inference, compliance/nvidia/TEST01/README.md), far below the 2x of a sweep
// squeezed onto half the cores (docs/report.md "Significance": the measurements). The communication
// rows, which keep no samples, use kCommThreshold unless --threshold is given (2 %, as before).
inline constexpr double kDefaultThreshold = 0.05;
inline constexpr double kCommThreshold = 0.02;
// Whether a ratio B/A clears the noise floor: |ratio - 1| >= threshold (a fraction; 0: any ratio).
// No ratio (A is 0): clears it when A and B differ.
bool beyond_threshold(std::optional<double> ratio, double a, double b, double threshold);

// Metadata entries that differ between the files and matter (hardware, libraries, build flags,
// settings, the recorded environment). Left out as noise: date_utc, writer_host, writer_pid, job_id,
// slurm_job_id, slurm_nodelist, command_line (it names the output file), environment variables that
// name a job, step, process or node (SLURM_JOB_ID, SLURM_TASK_PID, ...); placement is compared with
// host names replaced by their order ("host1:0-3,host2:4-7"), so only a different layout counts.
bool metadata_is_noise(const std::string& key);
std::string placement_shape(const std::string& placement);

// Sets c.metadata to the entries of `a` and `b` (key -> value, values of several runs joined by " | ")
// that differ and are not noise.
void metadata_diffs(Comparison& c, const std::map<std::string, std::string>& a, const std::map<std::string, std::string>& b);

// A difference is significant when the bootstrap 95 % interval of the ratio of medians (over the
// repeats' medians when both runs were repeated, else over the timed steps) excludes 1 and B/A clears
// `threshold` (beyond_threshold), which the comparison keeps; too few samples: no verdict.
// With train.tokens > 0, each match gets its time and cost to train (transformer runs).
Comparison compare_listings(const std::string& path_a, const RunListing& a, const std::string& path_b, const RunListing& b,
                            double threshold = kDefaultThreshold, const TrainSettings& train = {});
// Adds the communication results of both files to `c`: groups matched by comm_label(), sizes present
// in both, busbw B/A and its geometric mean per group; significance with c.threshold.
void compare_comm(Comparison& c, const std::vector<StoredComm>& a, const std::vector<StoredComm>& b);
std::string comm_label(const CommResult& r);

// The metadata that decides whether two files are like for like, as (key, what the text calls it):
// CPU and accelerator model, nodes, ranks per node, pipebench commit, build type, MPI, NCCL, BLAS and
// Kokkos versions, the ranks' CPU affinity and OpenMP threads (cpu_affinity), and the system
// description's entries (system.*). Precision is part of each
// configuration, so runs of two precisions never match.
const std::vector<std::pair<std::string, std::string>>& like_for_like_keys();
// Sets c.unlike from the two files' joined metadata (file_metadata's form).
void like_for_like(Comparison& c, const std::map<std::string, std::string>& a, const std::map<std::string, std::string>& b);

// The comparison as text (nccl-tests style '#' lines and a table) and as the --json object.
std::string render_comparison(const Comparison& c);
nlohmann::ordered_json comparison_json(const Comparison& c);

}  // namespace pipebench::bench
