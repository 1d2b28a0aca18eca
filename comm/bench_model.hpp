#pragma once
// The arithmetic of `pipebench comm` (docs/comm-bench.md), free of MPI so that it is tested alone:
// nccl-tests' size sweep, the reduction of per-rank times to a row, the latency-bandwidth fit and the
// check values. The operations and their facts are the rows of comm/bench_ops.hpp.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "topology/grid.hpp"

namespace pipebench::comm::bench {

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

// The sizes of a sweep in bytes, as nccl-tests makes them: from min_bytes, multiplied by `factor`, or
// with `increment` > 0 adding it, while <= max_bytes. Validated by check_sweep().
std::vector<std::uint64_t> size_list(std::uint64_t min_bytes, std::uint64_t max_bytes, std::uint64_t factor,
                                     std::uint64_t increment);
// UsageError (one line naming the values) for min > max, a factor below 2 without an increment, or a
// sweep of more than kMaxSizes sizes.
inline constexpr std::size_t kMaxSizes = 4096;
void check_sweep(std::uint64_t min_bytes, std::uint64_t max_bytes, std::uint64_t factor, std::uint64_t increment);

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
// `rank`'s pattern at the n indices from `from`.
std::vector<double> patterns(int rank, std::uint64_t from, std::uint64_t n);
// Host conversions of the check values into and out of each type.
void store_value(DType t, void* base, std::uint64_t index, double v);
double load_value(DType t, const void* base, std::uint64_t index);
// The expected result of reducing the values of all `n` members at `index` with `op`.
double reduce_pattern(ReduceOp op, int n, std::uint64_t index);

}  // namespace pipebench::comm::bench
