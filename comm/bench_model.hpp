#pragma once
// The arithmetic of `pipebench comm` (docs/comm-bench.md), free of MPI so that it is tested alone: the
// operations and their names, nccl-tests' size sweep and bus-bandwidth factors, the buffer shapes of
// each operation, the reduction of per-rank times to a row, and the latency-bandwidth fit.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "topology/grid.hpp"

namespace pipebench::comm::bench {

enum class BenchOp { all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv, latency, bw, bibw };
inline constexpr BenchOp kBenchOps[] = {BenchOp::all_reduce, BenchOp::all_gather, BenchOp::reduce_scatter,
                                        BenchOp::broadcast,  BenchOp::reduce,     BenchOp::alltoall,
                                        BenchOp::sendrecv,   BenchOp::latency,    BenchOp::bw,
                                        BenchOp::bibw};
const char* bench_op_name(BenchOp op);
// UsageError naming the text and the allowed names.
BenchOp parse_bench_op(const std::string& text);

// OSU-style point-to-point tests (rows with latency_us or bandwidth_MBps, no in-place variant).
bool is_p2p(BenchOp op);
// Operations that reduce (and so take -o and need the backend to reduce the type).
bool reduces(BenchOp op);
// Operations with a root (-r).
bool has_root(BenchOp op);
// Operations measured in place as well as out of place (nccl-tests' two column sets).
bool has_in_place(BenchOp op);

// The groups a benchmark runs on: every group of one kind of the grid (topology/grid.hpp), the whole
// world, or the pairs of pipeline neighbours (each member exchanging with the stage before and after it
// at once).
enum class GroupChoice { world, tp, pp, dp, pp_pairs, cp, dp_cp, tp_cp, ep, expert_tp, expert_dp, tp_ep };
inline constexpr GroupChoice kGroupChoices[] = {
    GroupChoice::world, GroupChoice::tp,    GroupChoice::pp,    GroupChoice::dp,        GroupChoice::pp_pairs,
    GroupChoice::cp,    GroupChoice::dp_cp, GroupChoice::tp_cp, GroupChoice::ep,        GroupChoice::expert_tp,
    GroupChoice::expert_dp, GroupChoice::tp_ep};
const char* group_choice_name(GroupChoice g);  // "world", "pp-pairs", or the kind's name: "tp", "dp-cp", ...
GroupChoice parse_group_choice(const std::string& text);
// The kind of grid group a choice runs over: pp for pp-pairs. Error for world, which is no kind.
topology::GroupKind group_kind(GroupChoice g);

// nccl-tests' bus-bandwidth factor for a group of n ranks (its doc/PERFORMANCE.md): all_reduce
// 2(n-1)/n; all_gather, reduce_scatter and alltoall (n-1)/n; broadcast, reduce, sendrecv and the
// point-to-point tests 1.
double bus_factor(BenchOp op, int n);

// The sizes of a sweep in bytes, as nccl-tests makes them: from min_bytes, multiplied by `factor`, or
// with `increment` > 0 adding it, while <= max_bytes. Validated by check_sweep().
std::vector<std::uint64_t> size_list(std::uint64_t min_bytes, std::uint64_t max_bytes, std::uint64_t factor,
                                     std::uint64_t increment);
// UsageError (one line naming the values) for min > max, a factor below 2 without an increment, or a
// sweep of more than kMaxSizes sizes.
inline constexpr std::size_t kMaxSizes = 4096;
void check_sweep(std::uint64_t min_bytes, std::uint64_t max_bytes, std::uint64_t factor, std::uint64_t increment);

// One row's buffers. bytes: the size column (nccl-tests' convention: the whole buffer of all_reduce,
// broadcast and reduce; all_gather's receive buffer; reduce_scatter's send buffer; alltoall's send
// buffer; what a point-to-point message carries); count = bytes / element size; block = elements per
// member for all_gather, reduce_scatter and alltoall (else count). The requested size is rounded down
// to a whole number of elements (of blocks), and up to one element (block) when it would be empty.
struct Shape {
  std::uint64_t bytes = 0, count = 0, block = 0;
  std::uint64_t send_elems = 0, recv_elems = 0;
};
Shape shape_of(BenchOp op, std::uint64_t requested_bytes, std::size_t elem_size, int n);

// t(bytes) = alpha + bytes / beta, fitted to (bytes, seconds) points by least squares on the relative
// error (each point weighted 1/t^2), so that the small sizes fix alpha and the large ones beta. alpha is
// kept >= 0 and beta > 0 (a point set that wants otherwise gets the best fit with that bound).
// max_rel_error: the largest |fit - t| / t over the points.
struct Fit {
  double alpha_s = 0, beta_Bps = 0, max_rel_error = 0;
  std::int64_t points = 0;
};
Fit fit_alpha_beta(const std::vector<std::uint64_t>& bytes, const std::vector<double>& seconds);

// Time of a set of groups from per-rank times (seconds; < 0 for a rank that did not take part):
// a group's time is the largest of its members', and over the groups that took part `slowest` is the
// largest, `fastest` the smallest; groups = how many took part.
struct GroupTimes {
  double slowest = 0, fastest = 0;
  int groups = 0;
};
GroupTimes group_times(const std::vector<double>& per_rank, const std::vector<std::vector<int>>& groups);

// nccl-tests' units: algbw = bytes / time in GB/s (1e9 bytes/s); OSU's MB/s are 1e6 bytes/s.
inline double algbw_GBps(std::uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0;
}

// The check pattern: small integers, exact in every type and in sums over thousands of ranks in
// float (values 0..3: bfloat16 sums stay exact up to 85 members, half up to 682).
inline int pattern(int rank, std::uint64_t index) { return static_cast<int>((static_cast<std::uint64_t>(rank) + index) % 4); }
// Host conversions of the check values into and out of each type.
void store_value(DType t, void* base, std::uint64_t index, double v);
double load_value(DType t, const void* base, std::uint64_t index);
// The expected result of reducing the values of all `n` members at `index` with `op`.
double reduce_pattern(ReduceOp op, int n, std::uint64_t index);

}  // namespace pipebench::comm::bench
