#pragma once
// What `pipebench comm` (bench/cmd/comm.cpp) works from: its settings as the flags give them, what they
// come to once checked (without MPI, then with the world size), the configuration it records, a row
// from every rank's samples, and the watchdog of its blocking collectives (docs/comm-bench.md).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/parse.hpp"
#include "bench/render/sink.hpp"
#include "bench/results/comm_results.hpp"
#include "comm/bench_harness.hpp"
#include "topology/grid.hpp"

namespace pipebench::bench {

struct CommSettings {
  std::string op_text;
  std::string group = "world";
  std::vector<Mapping> mappings;
  std::string order = topology::default_order();  // not given: the default of the sizes given
  int cp = 1, ep = 1;
  std::string backend = "mpi";
  bool one_group = false;
  std::uint64_t min_bytes = 8, max_bytes = 32ull << 20, increment = 0;
  int factor = 2;
  int iters = 20, warmup = 5, check = 1;
  int per_iter = 0;  // -I 1: nccl-tests' per-iteration columns and the raw times in --json
  std::string dtype = "float", redop = "sum";
  int root = 0;
  double imbalance = 1;  // alltoallv: the busiest member receives this times the mean
  std::string p2p;
  int seq = 4096, micro_batch = 1, hidden = 8192;
  std::string precision = "bf16";
  // The flags given whose effect depends on --p2p (as the user names them: "--seq", "-d", "-f", ...):
  // a flag that would be ignored is refused (resolve_flags).
  std::vector<std::string> given;
  std::string out;
  bool append = false, json = false, csv = false;
  Duration timeout = seconds(60);
  int poll_us = 0;
  std::string command_line;
};

// What the flags come to, the same on every rank.
struct Resolved {
  Format format = Format::text;
  comm::bench::BenchOp op = comm::bench::BenchOp::all_reduce;
  comm::bench::GroupChoice group = comm::bench::GroupChoice::world;
  comm::DType dtype = comm::DType::f32;
  comm::ReduceOp redop = comm::ReduceOp::sum;
  Mapping mapping;
  std::vector<std::uint64_t> sizes;
  int group_size = 1;
};

// nccl-tests' sizes: a number of bytes with an optional K, M or G meaning 2^10, 2^20, 2^30 (as its
// -b/-e/-i read them); the explicit forms of pipebench's byte sizes (KiB, MB, ...) are read as
// everywhere else (bench/parse.hpp). UsageError naming `flag` otherwise.
std::uint64_t parse_size(const std::string& text, const std::string& flag, bool zero_ok);
// The operations for comm's help, in the table's order, the default marked.
std::string op_help();
// The rank grid of a mapping under the flags' order, cp and ep; UsageError for a bad layout.
topology::Grid comm_grid(const CommSettings& s, const Mapping& m);
// Everything the flags alone decide; UsageError otherwise. Needs no MPI.
Resolved resolve_flags(CommSettings& s);
// What needs the world size: the mapping and the group size; UsageError otherwise.
void resolve_world(const CommSettings& s, Resolved& r, int world);
// The config/ entries of the /comm group.
std::map<std::string, std::string> config_of(const CommSettings& s, const Resolved& r);
// The row of variant v (0 out of place, 1 in place) of one size from every rank's sample; groups_ran
// gets the number of groups that took part.
CommBenchRow make_row(const Resolved& r, std::uint64_t requested, const std::vector<comm::bench::Sample>& all, int v,
                      const std::vector<std::vector<int>>& groups, bool checked, std::int64_t& groups_ran);

}  // namespace pipebench::bench
