#pragma once
// The rank grid of five axes (docs/topology.md), as Megatron-Core's parallel_state builds it: the dense
// layers split the world into t x cp x p x d (tensor, context, pipeline, data), the expert layers
// regroup the same ranks into t x ep x edp x p (expert-tensor = t, expert, expert-data = cp*d/ep,
// pipeline), both under one order string (Megatron's decoupled expert rank generator). Pure arithmetic,
// no MPI and no table over the ranks: every query is a few multiplications, so a 16M-rank layout is
// checked on a laptop.
//
// The order string follows Megatron-Core's RankGenerator: axes listed fastest-varying first, and in
// each layout, with its own sizes (ep = 1 in the dense one, cp = 1 in the expert one),
//   global_rank = sum_i idx_i * prod_{j<i} size_j            (docs/formulas.md, "Rank order")
#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace pipebench::topology {

// The names an order string is made of.
enum class Axis : int { tp = 0, cp = 1, ep = 2, dp = 3, pp = 4 };
inline constexpr int kNumAxes = 5;
const char* axis_name(Axis a);  // "tp", "cp", "ep", "dp", "pp"

// A kind of group: the ranks that differ only on some axes of one layout. tp, pp, dp, cp, dp-cp (where
// dense gradients are reduced) and tp-cp are dense; ep, expert-tp, expert-dp (where expert gradients are
// reduced) and tp-ep are expert. pp is the same in both (the constructor refuses a layout where not).
enum class GroupKind : int { tp, pp, dp, cp, dp_cp, tp_cp, ep, expert_tp, expert_dp, tp_ep };
inline constexpr int kNumGroupKinds = 10;
// The kinds of the t x p x d grid: what `run` builds, and all there is to show when cp = ep = 1.
inline constexpr std::array<GroupKind, 3> kGroupKinds{GroupKind::tp, GroupKind::pp, GroupKind::dp};
inline constexpr std::array<GroupKind, kNumGroupKinds> kAllGroupKinds{
    GroupKind::tp, GroupKind::cp,        GroupKind::pp,        GroupKind::dp,   GroupKind::dp_cp,
    GroupKind::tp_cp, GroupKind::ep, GroupKind::expert_tp, GroupKind::expert_dp, GroupKind::tp_ep};
const char* group_kind_name(GroupKind k);  // "tp", "dp-cp", "expert-dp", ...

struct Sizes {
  int t = 1, cp = 1, p = 1, d = 1, ep = 1;
};

// A rank's coordinates: tp, pp, dp and cp in the dense layout; etp, ep and edp (expert-tensor, expert,
// expert-data) in the expert layout, whose pp coordinate is the dense one.
struct Coords {
  int tp = 0, pp = 0, dp = 0;
  int cp = 0, ep = 0, etp = 0, edp = 0;
  bool operator==(const Coords& o) const {
    return tp == o.tp && pp == o.pp && dp == o.dp && cp == o.cp && ep == o.ep && etp == o.etp && edp == o.edp;
  }
  bool operator!=(const Coords& o) const { return !(*this == o); }
};

// Megatron-Core's default order, tp-cp-ep-dp-pp, named without cp and ep where their size is 1: the name
// a layout prints and stores when no order was given ("tp-dp-pp" for cp = ep = 1).
std::string default_order(int cp = 1, int ep = 1);

class Grid {
 public:
  static constexpr std::string_view kDefaultOrder = "tp-cp-ep-dp-pp";
  // Largest world accepted: far above any machine today, small enough that per-rank work stays cheap.
  static constexpr long long kMaxWorldSize = 1LL << 24;

  // Throws UsageError, one line naming the value and what is allowed, for sizes below 1, a world above
  // kMaxWorldSize, ep not dividing cp*d, a bad order (unknown, repeated or missing axis: tp, pp and dp
  // always, cp and ep where their size is above 1), pp not last unless p = 1 or ep = cp (Megatron's
  // assert), or pipeline groups that the two layouts would make differently. Order is case-insensitive
  // and printed in lower case as given; empty means default_order(cp, ep).
  Grid(const Sizes& sizes, int v = 1, std::string_view order = {});
  Grid(int t, int p, int d, int v = 1, std::string_view order = {}) : Grid(Sizes{t, 1, p, d, 1}, v, order) {}

  int t() const { return sizes_.t; }
  int cp() const { return sizes_.cp; }
  int p() const { return sizes_.p; }
  int d() const { return sizes_.d; }
  int ep() const { return sizes_.ep; }
  int edp() const { return sizes_.cp * sizes_.d / sizes_.ep; }  // expert-data size
  const Sizes& sizes() const { return sizes_; }
  int v() const { return v_; }
  int world_size() const { return world_; }
  const std::string& order() const { return order_; }
  // "t*p*d", or "t*cp*p*d" when cp > 1: what messages say the world is made of.
  std::string product_name() const;
  // Distance in global rank between neighbours along an axis, in the dense and in the expert layout
  // (the product of the sizes of the faster axes).
  int stride(Axis a) const { return dense_stride_[static_cast<std::size_t>(a)]; }
  int expert_stride(Axis a) const { return expert_stride_[static_cast<std::size_t>(a)]; }
  std::string rank_formula() const;         // e.g. "rank = tp + 2*dp + 4*pp"; size-1 axes left out
  std::string expert_rank_formula() const;  // e.g. "rank = etp + 2*ep + 4*edp + 8*pp"

  Coords coords(int rank) const;       // UsageError when rank is outside [0, world_size)
  int rank_of(const Coords& c) const;  // from tp, cp, pp, dp; UsageError when one is outside its axis

  int size(GroupKind k) const { return table(k).size; }  // ranks per group
  // Groups of one kind, numbered 0..num_groups-1 in increasing order of their lowest member (what
  // MPI_Comm_split takes as a colour).
  int num_groups(GroupKind k) const { return world_ / size(k); }
  int group_index(GroupKind k, int rank) const;
  // The rank's position among its group's members (its coordinate, for a kind of one axis).
  int coord(GroupKind k, int rank) const;
  // Member i of group `index`; members are in coordinate order (the masked axes fastest first, as
  // Megatron lists them), so ranks increase along them.
  int member(GroupKind k, int index, int i) const;
  int group_first(GroupKind k, int index) const { return member(k, index, 0); }
  // The distance between consecutive members where every group of the kind is evenly spaced, else 0.
  int even_stride(GroupKind k) const;
  std::vector<int> group_members(GroupKind k, int index) const;
  std::vector<int> group(GroupKind k, int rank) const { return group_members(k, group_index(k, rank)); }
  std::vector<std::vector<int>> groups(GroupKind k) const;
  // Whether two kinds make the same groups, members and numbering (with cp = ep = 1, dp-cp is dp).
  bool same_groups(GroupKind a, GroupKind b) const;
  // Calls f(rank) for each member of group `index` in order: no multiplication per member.
  template <class F>
  void for_each_member(GroupKind k, int index, F&& f) const;

  // A group's members as mixed-radix digits: (size, stride) per axis of size > 1, fastest first, with
  // axes that are adjacent in rank merged into one.
  struct Dim {
    int size = 1, stride = 1;
    bool operator==(const Dim& o) const { return size == o.size && stride == o.stride; }
  };
  struct KindTable {
    std::array<Dim, kNumAxes> in{}, out{};  // the group's own axes, and those that number the groups
    int n_in = 0, n_out = 0;
    int size = 1;
  };

 private:
  const KindTable& table(GroupKind k) const { return kinds_[static_cast<std::size_t>(k)]; }
  void parse_order(const std::string& what);   // fastest_first_, named_ and the order's rules
  void make_layouts(const std::string& what);  // strides, the pipeline check, kinds_
  void check_rank(int rank) const;
  void check_group(GroupKind k, int index) const;

  Sizes sizes_;
  int v_ = 1;
  int world_ = 1;
  std::string order_;
  std::array<Axis, kNumAxes> fastest_first_{};  // the axes named in the order, fastest first
  int named_ = 0;                                // how many axes the order names
  std::array<int, kNumAxes> dense_stride_{}, expert_stride_{};
  std::array<KindTable, kNumGroupKinds> kinds_{};
};

template <class F>
void Grid::for_each_member(GroupKind k, int index, F&& f) const {
  const KindTable& t = table(k);
  std::array<int, kNumAxes> digit{};
  int rank = member(k, index, 0);
  for (int i = 0; i < t.size; ++i) {
    f(rank);
    for (int a = 0; a < t.n_in; ++a) {  // the next member: an odometer over the group's axes
      const Dim& dim = t.in[static_cast<std::size_t>(a)];
      rank += dim.stride;
      if (++digit[static_cast<std::size_t>(a)] < dim.size) break;
      rank -= dim.stride * dim.size;
      digit[static_cast<std::size_t>(a)] = 0;
    }
  }
}

}  // namespace pipebench::topology
