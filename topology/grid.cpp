#include "topology/grid.hpp"

#include <algorithm>
#include <cctype>
#include <limits>

#include "analysis/error.hpp"
#include "analysis/text.hpp"

namespace pipebench::topology {

namespace {

constexpr const char* kAllowedAxes =
    "allowed: tp, pp, dp (each exactly once) and cp, ep (at most once each, required when their size is above "
    "1), fastest-varying first, joined by '-', e.g. tp-dp-pp or tp-cp-ep-dp-pp";

constexpr std::array<Axis, kNumAxes> kAxes{Axis::tp, Axis::cp, Axis::ep, Axis::dp, Axis::pp};

std::size_t at(Axis a) { return static_cast<std::size_t>(a); }

// Which layout a kind lives in and which axes its groups span (Megatron's mask of get_ranks()).
struct KindSpec {
  bool expert;
  std::array<bool, kNumAxes> mask;  // indexed by Axis
};

KindSpec spec_of(GroupKind k) {
  //                          tp     cp     ep     dp     pp
  switch (k) {
    case GroupKind::tp: return {false, {true, false, false, false, false}};
    case GroupKind::pp: return {false, {false, false, false, false, true}};
    case GroupKind::dp: return {false, {false, false, false, true, false}};
    case GroupKind::cp: return {false, {false, true, false, false, false}};
    case GroupKind::dp_cp: return {false, {false, true, false, true, false}};
    case GroupKind::tp_cp: return {false, {true, true, false, false, false}};
    case GroupKind::ep: return {true, {false, false, true, false, false}};
    case GroupKind::expert_tp: return {true, {true, false, false, false, false}};
    case GroupKind::expert_dp: return {true, {false, false, false, true, false}};
    case GroupKind::tp_ep: return {true, {true, false, true, false, false}};
  }
  return {false, {}};
}

// The product of the sizes, or -1 above what a long long holds (sizes come from flags up to 2^24 each).
long long product(const Sizes& s) {
  long long n = 1;
  for (int x : {s.t, s.cp, s.p, s.d}) {
    if (n > std::numeric_limits<long long>::max() / x) return -1;
    n *= x;
  }
  return n;
}

void check_sizes(const Sizes& s, int v) {
  const std::pair<int, const char*> sizes[] = {{s.t, "t (tensor-parallel size)"},
                                               {s.p, "p (pipeline-parallel size)"},
                                               {s.d, "d (data-parallel size)"},
                                               {s.cp, "cp (context-parallel size)"},
                                               {s.ep, "ep (expert-parallel size)"}};
  for (const auto& [value, name] : sizes)
    if (value < 1) throw UsageError(std::string(name) + " = " + std::to_string(value) + ": must be at least 1");
  if (v < 1) throw UsageError("v (chunks per pipeline rank) = " + std::to_string(v) + ": must be at least 1");
}

// "1, 2, 3, 6": the divisors of n, or "a divisor of cp*d" where they are too many for one line.
std::string divisors_text(int n) {
  std::string s;
  int count = 0;
  for (int k = 1; k <= n && count <= 16; ++k)
    if (n % k == 0) s += (count++ ? ", " : "") + std::to_string(k);
  return count > 16 ? "a divisor of cp*d" : s;
}

// Appends d to the digits, merged with the last one when it continues it (then the two axes are one
// run of consecutive ranks), so that equal groups have equal digits.
void push_dim(std::array<Grid::Dim, kNumAxes>& dims, int& n, Grid::Dim d) {
  if (d.size == 1) return;
  if (n > 0) {
    Grid::Dim& last = dims[static_cast<std::size_t>(n - 1)];
    if (static_cast<long long>(last.stride) * last.size == d.stride) {
      last.size *= d.size;
      return;
    }
  }
  dims[static_cast<std::size_t>(n++)] = d;
}

}  // namespace

const char* axis_name(Axis a) {
  switch (a) {
    case Axis::tp: return "tp";
    case Axis::cp: return "cp";
    case Axis::ep: return "ep";
    case Axis::dp: return "dp";
    case Axis::pp: return "pp";
  }
  return "?";
}

const char* group_kind_name(GroupKind k) {
  switch (k) {
    case GroupKind::tp: return "tp";
    case GroupKind::pp: return "pp";
    case GroupKind::dp: return "dp";
    case GroupKind::cp: return "cp";
    case GroupKind::dp_cp: return "dp-cp";
    case GroupKind::tp_cp: return "tp-cp";
    case GroupKind::ep: return "ep";
    case GroupKind::expert_tp: return "expert-tp";
    case GroupKind::expert_dp: return "expert-dp";
    case GroupKind::tp_ep: return "tp-ep";
  }
  return "?";
}

std::string default_order(int cp, int ep) {
  std::string s;
  for (Axis a : kAxes)
    if ((a != Axis::cp || cp != 1) && (a != Axis::ep || ep != 1)) s += (s.empty() ? "" : "-") + std::string(axis_name(a));
  return s;
}

Grid::Grid(const Sizes& sizes, int v, std::string_view order) : sizes_(sizes), v_(v) {
  check_sizes(sizes_, v_);
  const long long world = product(sizes_);
  if (world < 0 || world > kMaxWorldSize)
    throw UsageError(product_name() + " = " + (world < 0 ? "more than 2^63" : std::to_string(world)) +
                     " ranks: at most " + std::to_string(kMaxWorldSize) + " are supported");
  world_ = static_cast<int>(world);
  const int cpd = sizes_.cp * sizes_.d;  // at most the world size
  if (cpd % sizes_.ep != 0)
    throw UsageError("ep (expert-parallel size) = " + std::to_string(sizes_.ep) + " does not divide cp*d = " +
                     std::to_string(cpd) + ": allowed " + divisors_text(cpd) +
                     " (the expert layers split the cp*d ranks of each tensor and pipeline position into ep x "
                     "expert-data)");
  const std::string given(order);
  order_ = given.empty() ? default_order(sizes_.cp, sizes_.ep) : given;
  std::transform(order_.begin(), order_.end(), order_.begin(), [](unsigned char c) { return std::tolower(c); });
  const std::string what = "order " + pipebench::quoted(given.empty() ? order_ : given);
  parse_order(what);
  make_layouts(what);
}

void Grid::parse_order(const std::string& what) {
  std::array<bool, kNumAxes> seen{};
  std::size_t pos = 0;
  while (true) {
    const std::size_t dash = order_.find('-', pos);
    const std::string name = order_.substr(pos, dash == std::string::npos ? std::string::npos : dash - pos);
    const auto known = std::find_if(kAxes.begin(), kAxes.end(), [&](Axis a) { return name == axis_name(a); });
    if (known == kAxes.end())
      throw UsageError(what + ": unknown axis " + pipebench::quoted(name) + "; " + kAllowedAxes);
    if (seen[at(*known)]) throw UsageError(what + ": axis '" + name + "' appears twice; " + kAllowedAxes);
    seen[at(*known)] = true;
    fastest_first_[static_cast<std::size_t>(named_++)] = *known;
    if (dash == std::string::npos) break;
    pos = dash + 1;
  }
  for (Axis a : kAxes) {
    const int size = a == Axis::cp ? sizes_.cp : a == Axis::ep ? sizes_.ep : 0;
    if (seen[at(a)]) continue;
    if (size == 0) throw UsageError(what + ": axis '" + axis_name(a) + "' is missing; " + kAllowedAxes);
    if (size > 1)
      throw UsageError(what + ": axis '" + axis_name(a) + "' is missing, and " + axis_name(a) + " = " +
                       std::to_string(size) + " needs a place in it; " + kAllowedAxes);
  }
  // Megatron-Core's assert: otherwise the expert layers would put their data-parallel ranks where the
  // dense layers have pipeline neighbours.
  const bool pp_last = fastest_first_[static_cast<std::size_t>(named_ - 1)] == Axis::pp;
  if (!pp_last && sizes_.p > 1 && sizes_.ep != sizes_.cp)
    throw UsageError(what + " with p = " + std::to_string(sizes_.p) + ", cp = " + std::to_string(sizes_.cp) +
                     " and ep = " + std::to_string(sizes_.ep) +
                     ": pp must be the last axis unless p = 1 or ep = cp (the expert layers' data-parallel size "
                     "cp*d/ep then equals d), as Megatron-Core requires");
}

// The strides of both layouts, then each kind's digits. The unnamed axes have size 1: they come last
// (as Megatron appends them) and never count.
void Grid::make_layouts(const std::string& what) {
  const auto dense_size = [this](Axis a) {
    return a == Axis::tp ? sizes_.t : a == Axis::cp ? sizes_.cp : a == Axis::dp ? sizes_.d : a == Axis::pp ? sizes_.p : 1;
  };
  const auto expert_size = [this](Axis a) {
    return a == Axis::tp ? sizes_.t : a == Axis::ep ? sizes_.ep : a == Axis::dp ? edp() : a == Axis::pp ? sizes_.p : 1;
  };
  dense_stride_.fill(world_);
  expert_stride_.fill(world_);
  for (int i = 0, ds = 1, es = 1; i < named_; ++i) {
    const Axis a = fastest_first_[static_cast<std::size_t>(i)];
    dense_stride_[at(a)] = ds, expert_stride_[at(a)] = es;
    ds *= dense_size(a), es *= expert_size(a);
  }
  // Megatron asserts the two layouts' pipeline groups equal; with pp not last and ep = cp they differ
  // exactly when cp and ep stand on different sides of pp (derived in tests/topology/test_grid_5d.cpp).
  if (sizes_.p > 1 && stride(Axis::pp) != expert_stride(Axis::pp))
    throw UsageError(what + " with cp = " + std::to_string(sizes_.cp) + " and ep = " +
                     std::to_string(sizes_.ep) + ": the dense layers' pipeline groups (pp stride " +
                     std::to_string(stride(Axis::pp)) + ") and the expert layers' (pp stride " +
                     std::to_string(expert_stride(Axis::pp)) +
                     ") differ; put cp and ep on the same side of pp, or pp last, as Megatron-Core requires");
  for (GroupKind k : kAllGroupKinds) {
    const KindSpec spec = spec_of(k);
    KindTable& t = kinds_[static_cast<std::size_t>(k)];
    for (int i = 0; i < named_; ++i) {
      const Axis a = fastest_first_[static_cast<std::size_t>(i)];
      const Dim d{spec.expert ? expert_size(a) : dense_size(a), spec.expert ? expert_stride(a) : stride(a)};
      if (spec.mask[at(a)]) {
        push_dim(t.in, t.n_in, d);
        t.size *= d.size;
      } else {
        push_dim(t.out, t.n_out, d);
      }
    }
  }
}

std::string Grid::product_name() const { return sizes_.cp == 1 ? "t*p*d" : "t*cp*p*d"; }

namespace {

std::string formula(const std::array<Axis, kNumAxes>& axes, int named, const std::array<int, kNumAxes>& stride,
                    const std::array<int, kNumAxes>& size, const std::array<const char*, kNumAxes>& names) {
  std::string s = "rank =";
  bool first = true;
  for (int i = 0; i < named; ++i) {
    const std::size_t a = at(axes[static_cast<std::size_t>(i)]);
    if (size[a] == 1) continue;  // its coordinate is always 0
    s += first ? " " : " + ";
    first = false;
    if (stride[a] != 1) s += std::to_string(stride[a]) + "*";
    s += names[a];
  }
  return first ? s + " 0" : s;
}

}  // namespace

std::string Grid::rank_formula() const {
  return formula(fastest_first_, named_, dense_stride_, {sizes_.t, sizes_.cp, 1, sizes_.d, sizes_.p},
                 {"tp", "cp", "ep", "dp", "pp"});
}

std::string Grid::expert_rank_formula() const {
  return formula(fastest_first_, named_, expert_stride_, {sizes_.t, 1, sizes_.ep, edp(), sizes_.p},
                 {"etp", "cp", "ep", "edp", "pp"});
}

void Grid::check_rank(int rank) const {
  if (rank < 0 || rank >= world_)
    throw UsageError("rank " + std::to_string(rank) + " is outside the grid: allowed 0.." + std::to_string(world_ - 1));
}

void Grid::check_group(GroupKind k, int index) const {
  if (index < 0 || index >= num_groups(k))
    throw UsageError(std::string(group_kind_name(k)) + " group " + std::to_string(index) +
                     " does not exist: allowed 0.." + std::to_string(num_groups(k) - 1));
}

Coords Grid::coords(int rank) const {
  check_rank(rank);
  Coords c;
  c.tp = coord(GroupKind::tp, rank);
  c.pp = coord(GroupKind::pp, rank);
  c.dp = coord(GroupKind::dp, rank);
  c.cp = coord(GroupKind::cp, rank);
  c.ep = coord(GroupKind::ep, rank);
  c.etp = coord(GroupKind::expert_tp, rank);
  c.edp = coord(GroupKind::expert_dp, rank);
  return c;
}

int Grid::rank_of(const Coords& c) const {
  const std::pair<Axis, int> dense[] = {{Axis::tp, c.tp}, {Axis::cp, c.cp}, {Axis::dp, c.dp}, {Axis::pp, c.pp}};
  const int size[] = {sizes_.t, sizes_.cp, sizes_.d, sizes_.p};
  int rank = 0, i = 0;
  for (const auto& [a, x] : dense) {
    if (x < 0 || x >= size[i])
      throw UsageError(std::string(axis_name(a)) + " coordinate " + std::to_string(x) +
                       " is outside the grid: allowed 0.." + std::to_string(size[i] - 1));
    rank += x * stride(a);
    ++i;
  }
  return rank;
}

// The digits of the axes outside the group, read as a mixed-radix number with the same significance
// as in the global rank: monotone in the group's lowest member.
int Grid::group_index(GroupKind k, int rank) const {
  check_rank(rank);
  const KindTable& t = table(k);
  int index = 0;
  for (int a = t.n_out - 1; a >= 0; --a) {
    const Dim& d = t.out[static_cast<std::size_t>(a)];
    index = index * d.size + (rank / d.stride) % d.size;
  }
  return index;
}

int Grid::coord(GroupKind k, int rank) const {
  check_rank(rank);
  const KindTable& t = table(k);
  int index = 0;
  for (int a = t.n_in - 1; a >= 0; --a) {
    const Dim& d = t.in[static_cast<std::size_t>(a)];
    index = index * d.size + (rank / d.stride) % d.size;
  }
  return index;
}

int Grid::member(GroupKind k, int index, int i) const {
  check_group(k, index);
  const KindTable& t = table(k);
  if (i < 0 || i >= t.size)
    throw UsageError(std::string(group_kind_name(k)) + " member " + std::to_string(i) +
                     " does not exist: allowed 0.." + std::to_string(t.size - 1));
  int rank = 0;
  for (int a = 0; a < t.n_out; ++a) {
    const Dim& d = t.out[static_cast<std::size_t>(a)];
    rank += (index % d.size) * d.stride;
    index /= d.size;
  }
  for (int a = 0; a < t.n_in; ++a) {
    const Dim& d = t.in[static_cast<std::size_t>(a)];
    rank += (i % d.size) * d.stride;
    i /= d.size;
  }
  return rank;
}

int Grid::even_stride(GroupKind k) const {
  const KindTable& t = table(k);
  return t.n_in == 0 ? 1 : t.n_in == 1 ? t.in[0].stride : 0;
}

bool Grid::same_groups(GroupKind a, GroupKind b) const {
  const KindTable &x = table(a), &y = table(b);
  return x.n_in == y.n_in && x.n_out == y.n_out && std::equal(x.in.begin(), x.in.begin() + x.n_in, y.in.begin()) &&
         std::equal(x.out.begin(), x.out.begin() + x.n_out, y.out.begin());
}

std::vector<int> Grid::group_members(GroupKind k, int index) const {
  check_group(k, index);
  std::vector<int> members;
  members.reserve(static_cast<std::size_t>(size(k)));
  for_each_member(k, index, [&members](int r) { members.push_back(r); });
  return members;
}

std::vector<std::vector<int>> Grid::groups(GroupKind k) const {
  std::vector<std::vector<int>> out;
  out.reserve(static_cast<std::size_t>(num_groups(k)));
  for (int g = 0; g < num_groups(k); ++g) out.push_back(group_members(k, g));
  return out;
}

}  // namespace pipebench::topology
