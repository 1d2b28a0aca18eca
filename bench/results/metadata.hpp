#pragma once
// The metadata a procurement report records with every run (docs/formulas.md, "Result metadata").
// Collected once, on rank 0, from what the caller gathered.
#include <ctime>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace pipebench::bench {

struct MetadataInput {
  std::string command_line;
  std::vector<std::string> hosts;  // host name of each global rank, index = rank
  std::vector<std::string> affinities;  // cpu_affinity() of each global rank (empty: not gathered)
  int warmup_steps = 0;
  int timed_steps = 0;
  std::string statistic;  // how per-step figures become one, e.g. "median over timed steps"
};

// The CPUs this process may run on (sched_getaffinity) and the OpenMP threads it starts with
// (OMP_NUM_THREADS, else one per CPU of the mask, OpenMP's default): "cpus 0-1 (2), omp 2".
std::string cpu_affinity();
// The ranks' cpu_affinity() in one line: "every rank: cpus 0-1 (2), omp 2", or where they differ
// "rank 0: cpus 0 (1), omp 1; rank 1: ..." ("" for none).
std::string affinity_summary(const std::vector<std::string>& affinities);

// Keys and their meaning: docs/results-schema.md. Environment variables appear as "env.<NAME>"; every
// value is valid UTF-8 (utf8_escaped). job_id, writer_host and writer_pid name the process that writes.
std::map<std::string, std::string> collect_metadata(const MetadataInput& in);
// The same with the environment and /proc/cpuinfo text given, for tests.
std::map<std::string, std::string> collect_metadata(const MetadataInput& in, const std::vector<std::string>& environ_entries,
                                                     const std::string& cpuinfo);

// Whether an environment variable is recorded: SLURM_*, OMP_*, KOKKOS_*, NCCL_*, CUDA_*, MPICH_*,
// MPIR_CVAR_* and OPENBLAS_*. Nothing else, so no credentials or paths of unrelated tools leak in.
bool environment_allowed(std::string_view name);
// The allowed subset of "NAME=value" entries.
std::map<std::string, std::string> allowed_environment(const std::vector<std::string>& environ_entries);

// The batch system's job id from "NAME=value" entries (SLURM_JOB_ID, PBS_JOBID, LSB_JOBID, JOB_ID,
// FLUX_JOB_ID), or "none".
std::string job_id(const std::vector<std::string>& environ_entries);

// Rank placement as runs of consecutive ranks on one host, in rank order: "node01:0-3,node02:4-7";
// a host that comes back gets another entry ("a:0,b:1,a:2").
std::string placement_summary(const std::vector<std::string>& hosts);
// Ranks per host in Slurm's SLURM_TASKS_PER_NODE notation, hosts in order of their first rank:
// {a,a,b,b} -> "2(x2)", {a,a,a,b} -> "3,1".
std::string tasks_per_node(const std::vector<std::string>& hosts);
// "2024-05-01T12:00:00Z".
std::string utc_iso8601(std::time_t t);
// The "model name" of the first processor in /proc/cpuinfo text (or "Hardware"/"CPU part" lines on
// Arm, where there is no model name), with the number of logical CPUs: "AMD EPYC 7763 (x 128)".
std::string cpu_model(const std::string& cpuinfo);

}  // namespace pipebench::bench
