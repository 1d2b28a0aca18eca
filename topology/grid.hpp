#pragma once
// The t x p x d rank grid (docs/design.md "Layout"): which (tp, pp, dp) coordinates a global rank has and
// which ranks share each kind of group. Pure arithmetic, no MPI, so a 16,384-rank layout can be checked
// on a laptop.
//
// The order string follows Megatron-Core's RankGenerator: axes listed fastest-varying first, and
//   global_rank = sum_i idx_i * prod_{j<i} size_j            (docs/formulas.md, "Rank order")
// cp and ep may appear (Megatron strings such as tp-cp-ep-dp-pp) but always have size 1 here.
#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace pipebench::topology {

enum class GroupKind : int { tp = 0, pp = 1, dp = 2 };
inline constexpr std::array<GroupKind, 3> kGroupKinds{GroupKind::tp, GroupKind::pp, GroupKind::dp};
const char* group_kind_name(GroupKind k);  // "tp", "pp", "dp"

struct Coords {
  int tp = 0, pp = 0, dp = 0;
  int operator[](GroupKind k) const { return k == GroupKind::tp ? tp : k == GroupKind::pp ? pp : dp; }
  bool operator==(const Coords& o) const { return tp == o.tp && pp == o.pp && dp == o.dp; }
  bool operator!=(const Coords& o) const { return !(*this == o); }
};

class Grid {
 public:
  static constexpr std::string_view kDefaultOrder = "tp-dp-pp";
  // Largest world accepted: far above any machine today, small enough that O(world) tables stay cheap.
  static constexpr long long kMaxWorldSize = 1LL << 24;

  // Throws UsageError for sizes < 1, a world above kMaxWorldSize, or a bad order string (unknown,
  // repeated or missing axis), naming the bad value and what is allowed. Order is case-insensitive.
  Grid(int t, int p, int d, int v = 1, std::string_view order = kDefaultOrder);

  int t() const { return size_[0]; }
  int p() const { return size_[1]; }
  int d() const { return size_[2]; }
  int v() const { return v_; }
  int size(GroupKind k) const { return size_[idx(k)]; }
  // Distance in global rank between neighbours along an axis: prod of the sizes of faster axes.
  int stride(GroupKind k) const { return stride_[idx(k)]; }
  int world_size() const { return world_; }
  const std::string& order() const { return order_; }  // normalised: lower case, as given otherwise
  std::string rank_formula() const;                     // e.g. "rank = tp + 2*dp + 4*pp"; size-1 axes left out

  Coords coords(int rank) const;  // UsageError when rank is outside [0, world_size)
  int coord(GroupKind k, int rank) const;
  int rank_of(const Coords& c) const;  // UsageError when a coordinate is outside its axis

  // Groups of one kind, numbered 0..num_groups-1 in increasing order of their lowest member.
  int num_groups(GroupKind k) const { return world_ / size(k); }
  int group_index(GroupKind k, int rank) const;
  // Members in the coordinate order of the axis: member i has coordinate i (and ranks increase).
  std::vector<int> group_members(GroupKind k, int index) const;
  std::vector<int> group(GroupKind k, int rank) const { return group_members(k, group_index(k, rank)); }
  std::vector<std::vector<int>> groups(GroupKind k) const;
  // Lowest member of group `index`; member i is group_first(k, index) + i * stride(k).
  int group_first(GroupKind k, int index) const;

 private:
  static int idx(GroupKind k) { return static_cast<int>(k); }
  void check_rank(int rank) const;

  std::array<int, 3> size_{};
  std::array<int, 3> stride_{};
  std::array<GroupKind, 3> fastest_first_{};  // the three real axes in order, fastest first
  int v_ = 1;
  int world_ = 1;
  std::string order_;
};

}  // namespace pipebench::topology
