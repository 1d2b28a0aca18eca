#include "topology/grid.hpp"

#include <algorithm>
#include <cctype>

#include "analysis/error.hpp"
#include "analysis/text.hpp"

namespace pipebench::topology {

namespace {

constexpr const char* kAllowedAxes =
    "allowed: tp, pp, dp (each exactly once) and optionally cp, ep (size 1), fastest-varying first, "
    "joined by '-', e.g. tp-dp-pp or tp-cp-ep-dp-pp";

// The two axes other than k, fastest first, as they appear in the order.
std::array<GroupKind, 2> others(const std::array<GroupKind, 3>& fastest_first, GroupKind k) {
  std::array<GroupKind, 2> out{};
  int n = 0;
  for (GroupKind a : fastest_first)
    if (a != k) out[n++] = a;
  return out;
}

}  // namespace

const char* group_kind_name(GroupKind k) {
  switch (k) {
    case GroupKind::tp: return "tp";
    case GroupKind::pp: return "pp";
    case GroupKind::dp: return "dp";
  }
  return "?";
}

Grid::Grid(int t, int p, int d, int v, std::string_view order) : size_{t, p, d}, v_(v) {
  const char* names[] = {"t (tensor-parallel size)", "p (pipeline-parallel size)", "d (data-parallel size)"};
  for (int i = 0; i < 3; ++i)
    if (size_[i] < 1)
      throw UsageError(std::string(names[i]) + " = " + std::to_string(size_[i]) + ": must be at least 1");
  if (v < 1) throw UsageError("v (chunks per pipeline rank) = " + std::to_string(v) + ": must be at least 1");
  const long long world = static_cast<long long>(t) * p * d;
  if (world > kMaxWorldSize)
    throw UsageError("t*p*d = " + std::to_string(world) + " ranks: at most " + std::to_string(kMaxWorldSize) +
                     " are supported");
  world_ = static_cast<int>(world);

  std::string lower(order);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  const std::string what = "order " + pipebench::quoted(std::string(order));
  std::array<bool, 3> seen{};
  bool seen_cp = false, seen_ep = false;
  int n = 0;
  std::size_t pos = 0;
  while (true) {
    const std::size_t dash = lower.find('-', pos);
    const std::string axis = lower.substr(pos, dash == std::string::npos ? std::string::npos : dash - pos);
    if (axis == "cp" || axis == "ep") {
      bool& s = axis == "cp" ? seen_cp : seen_ep;
      if (s) throw UsageError(what + ": axis '" + axis + "' appears twice; " + kAllowedAxes);
      s = true;
    } else if (axis == "tp" || axis == "pp" || axis == "dp") {
      const GroupKind k = axis == "tp" ? GroupKind::tp : axis == "pp" ? GroupKind::pp : GroupKind::dp;
      if (seen[idx(k)]) throw UsageError(what + ": axis '" + axis + "' appears twice; " + kAllowedAxes);
      seen[idx(k)] = true;
      fastest_first_[n++] = k;
    } else {
      throw UsageError(what + ": unknown axis " + pipebench::quoted(axis) + "; " + kAllowedAxes);
    }
    if (dash == std::string::npos) break;
    pos = dash + 1;
  }
  for (GroupKind k : kGroupKinds)
    if (!seen[idx(k)])
      throw UsageError(what + ": axis '" + group_kind_name(k) + "' is missing; " + kAllowedAxes);
  order_ = lower;

  int stride = 1;
  for (GroupKind k : fastest_first_) {
    stride_[idx(k)] = stride;
    stride *= size_[idx(k)];
  }
}

// Axes of size 1 are left out: their coordinate is always 0.
std::string Grid::rank_formula() const {
  std::string s = "rank =";
  bool first = true;
  for (GroupKind k : fastest_first_) {
    if (size(k) == 1) continue;
    s += first ? " " : " + ";
    first = false;
    if (stride(k) != 1) s += std::to_string(stride(k)) + "*";
    s += group_kind_name(k);
  }
  return first ? s + " 0" : s;
}

void Grid::check_rank(int rank) const {
  if (rank < 0 || rank >= world_)
    throw UsageError("rank " + std::to_string(rank) + " is outside the grid: allowed 0.." + std::to_string(world_ - 1));
}

int Grid::coord(GroupKind k, int rank) const {
  check_rank(rank);
  return (rank / stride(k)) % size(k);
}

Coords Grid::coords(int rank) const {
  return Coords{coord(GroupKind::tp, rank), coord(GroupKind::pp, rank), coord(GroupKind::dp, rank)};
}

int Grid::rank_of(const Coords& c) const {
  int rank = 0;
  for (GroupKind k : kGroupKinds) {
    if (c[k] < 0 || c[k] >= size(k))
      throw UsageError(std::string(group_kind_name(k)) + " coordinate " + std::to_string(c[k]) +
                       " is outside the grid: allowed 0.." + std::to_string(size(k) - 1));
    rank += c[k] * stride(k);
  }
  return rank;
}

// A group is identified by the coordinates on the two other axes. Numbering them as a mixed-radix
// number with the same significance as in the global rank keeps the numbering monotone in the group's
// lowest member, which is also what MPI_Comm_split needs as a colour.
int Grid::group_index(GroupKind k, int rank) const {
  const auto [a, b] = others(fastest_first_, k);
  return coord(a, rank) + size(a) * coord(b, rank);
}

int Grid::group_first(GroupKind k, int index) const {
  if (index < 0 || index >= num_groups(k))
    throw UsageError(std::string(group_kind_name(k)) + " group " + std::to_string(index) +
                     " does not exist: allowed 0.." + std::to_string(num_groups(k) - 1));
  const auto [a, b] = others(fastest_first_, k);
  return (index % size(a)) * stride(a) + (index / size(a)) * stride(b);
}

std::vector<int> Grid::group_members(GroupKind k, int index) const {
  const int first = group_first(k, index);
  std::vector<int> members(static_cast<std::size_t>(size(k)));
  for (int i = 0; i < size(k); ++i) members[static_cast<std::size_t>(i)] = first + i * stride(k);
  return members;
}

std::vector<std::vector<int>> Grid::groups(GroupKind k) const {
  std::vector<std::vector<int>> out;
  out.reserve(static_cast<std::size_t>(num_groups(k)));
  for (int g = 0; g < num_groups(k); ++g) out.push_back(group_members(k, g));
  return out;
}

}  // namespace pipebench::topology
