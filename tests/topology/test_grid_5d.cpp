// The five-axis grid against an independent derivation of Megatron-Core's groups: a masked-orthogonal
// rank generator written here from prefix products (as parallel_state.RankGenerator builds them, one
// for the dense layers and one for the expert layers), over random layouts and orders; plus the rules
// that refuse a layout, and the derivation that those rules are exactly what keeps the two layouts'
// pipeline groups equal.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "analysis/error.hpp"
#include "topology/grid.hpp"

using pipebench::UsageError;
using pipebench::topology::Grid;
using pipebench::topology::GroupKind;
using pipebench::topology::Sizes;
using pipebench::topology::kAllGroupKinds;
using Groups = std::vector<std::vector<int>>;

namespace {

// Megatron's RankGenerator: the order's names (those it leaves out appended, of size 1), each with a
// size; a group is the ranks that differ only on the masked names.
struct Generator {
  std::vector<std::string> names;  // fastest first
  std::vector<long long> sizes;

  Generator(const std::vector<std::string>& order, std::map<std::string, long long> size_of) {
    names = order;
    for (const char* n : {"tp", "cp", "ep", "dp", "pp"})
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
    for (const auto& n : names) sizes.push_back(size_of[n]);
  }
  static std::vector<long long> prefix_products(const std::vector<long long>& shape) {
    std::vector<long long> out{1};
    for (long long s : shape) out.push_back(out.back() * s);
    return out;
  }
  // Member i of group g of the mask.
  long long rank(const std::set<std::string>& mask, long long g, long long i) const {
    const auto global = prefix_products(sizes);
    std::vector<long long> in_shape, in_stride, out_shape, out_stride;
    for (std::size_t a = 0; a < names.size(); ++a) {
      (mask.count(names[a]) ? in_shape : out_shape).push_back(sizes[a]);
      (mask.count(names[a]) ? in_stride : out_stride).push_back(global[a]);
    }
    const auto in_pre = prefix_products(in_shape), out_pre = prefix_products(out_shape);
    long long r = 0;
    for (std::size_t a = 0; a < in_shape.size(); ++a) r += (i / in_pre[a]) % in_shape[a] * in_stride[a];
    for (std::size_t a = 0; a < out_shape.size(); ++a) r += (g / out_pre[a]) % out_shape[a] * out_stride[a];
    return r;
  }
  long long group_size(const std::set<std::string>& mask) const {
    long long n = 1;
    for (std::size_t a = 0; a < names.size(); ++a)
      if (mask.count(names[a])) n *= sizes[a];
    return n;
  }
  long long world() const { return prefix_products(sizes).back(); }
  Groups groups(const std::set<std::string>& mask) const {
    Groups out;
    const long long n = group_size(mask);
    for (long long g = 0; g < world() / n; ++g) {
      out.emplace_back();
      for (long long i = 0; i < n; ++i) out.back().push_back(static_cast<int>(rank(mask, g, i)));
    }
    return out;
  }
};

struct Layout {
  Sizes s;
  std::vector<std::string> order;
};

std::string joined(const std::vector<std::string>& order) {
  std::string s;
  for (const auto& n : order) s += (s.empty() ? "" : "-") + n;
  return s;
}

Generator dense_of(const Layout& l) {
  return Generator(l.order, {{"tp", l.s.t}, {"cp", l.s.cp}, {"ep", 1}, {"dp", l.s.d}, {"pp", l.s.p}});
}
Generator expert_of(const Layout& l) {
  return Generator(l.order, {{"tp", l.s.t}, {"cp", 1}, {"ep", l.s.ep}, {"dp", 1LL * l.s.cp * l.s.d / l.s.ep}, {"pp", l.s.p}});
}

// Which generator and mask make each kind: Megatron's get_ranks() tokens.
struct KindSource {
  GroupKind kind;
  bool expert;
  std::set<std::string> mask;
};
const std::vector<KindSource>& sources() {
  static const std::vector<KindSource> all = {
      {GroupKind::tp, false, {"tp"}},         {GroupKind::cp, false, {"cp"}},
      {GroupKind::pp, false, {"pp"}},         {GroupKind::dp, false, {"dp"}},
      {GroupKind::dp_cp, false, {"dp", "cp"}}, {GroupKind::tp_cp, false, {"tp", "cp"}},
      {GroupKind::ep, true, {"ep"}},          {GroupKind::expert_tp, true, {"tp"}},
      {GroupKind::expert_dp, true, {"dp"}},   {GroupKind::tp_ep, true, {"tp", "ep"}}};
  return all;
}

// What Megatron-Core's initialize_model_parallel accepts: its assert on the order, and its assert that
// the pipeline groups of the two generators are equal.
bool megatron_accepts(const Layout& l) {
  const bool pp_last = l.order.back() == "pp";
  if (!(pp_last || l.s.p == 1 || 1LL * l.s.cp * l.s.d / l.s.ep == l.s.d)) return false;
  return dense_of(l).groups({"pp"}) == expert_of(l).groups({"pp"});
}

// Every kind's groups, in order, with every member in order; and the per-rank queries agree with them.
void expect_megatron_groups(const Grid& g, const Layout& l) {
  const Generator dense = dense_of(l), expert = expert_of(l);
  for (const KindSource& src : sources()) {
    const Groups want = (src.expert ? expert : dense).groups(src.mask);
    const std::string what = joined(l.order) + " " + pipebench::topology::group_kind_name(src.kind);
    ASSERT_EQ(g.groups(src.kind), want) << what;
    ASSERT_EQ(g.num_groups(src.kind), static_cast<int>(want.size())) << what;
    for (std::size_t gi = 0; gi < want.size(); ++gi)
      for (std::size_t i = 0; i < want[gi].size(); ++i) {
        const int r = want[gi][i];
        ASSERT_EQ(g.group_index(src.kind, r), static_cast<int>(gi)) << what << " rank " << r;
        ASSERT_EQ(g.coord(src.kind, r), static_cast<int>(i)) << what << " rank " << r;
        ASSERT_EQ(g.member(src.kind, static_cast<int>(gi), static_cast<int>(i)), r) << what;
      }
  }
  for (int r = 0; r < g.world_size(); ++r) ASSERT_EQ(g.rank_of(g.coords(r)), r) << joined(l.order);
}

// Sizes with small factors, ep a random divisor of cp*d, and a random order: all five names, or
// without cp and/or ep where their size is 1.
Layout random_layout(std::mt19937& rng) {
  const int factors[] = {1, 1, 2, 2, 3, 4};
  const auto pick = [&] { return factors[std::uniform_int_distribution<int>(0, 5)(rng)]; };
  Layout l;
  l.s = Sizes{pick(), pick(), pick(), pick(), 1};
  std::vector<int> divisors;
  for (int e = 1; e <= l.s.cp * l.s.d; ++e)
    if (l.s.cp * l.s.d % e == 0) divisors.push_back(e);
  l.s.ep = divisors[std::uniform_int_distribution<std::size_t>(0, divisors.size() - 1)(rng)];
  l.order = {"tp", "cp", "ep", "dp", "pp"};
  std::shuffle(l.order.begin(), l.order.end(), rng);
  for (const auto& [name, size] : {std::pair<std::string, int>{"cp", l.s.cp}, {"ep", l.s.ep}})
    if (size == 1 && std::bernoulli_distribution(0.4)(rng)) l.order.erase(std::find(l.order.begin(), l.order.end(), name));
  return l;
}

}  // namespace

TEST(Grid5D, RandomLayoutsMakeMegatronsGroups) {
  std::mt19937 rng(20);
  int accepted = 0, refused = 0, with_both = 0, tries = 0;
  while (accepted < 300 && ++tries < 5000) {
    const Layout l = random_layout(rng);
    bool ok = true;
    try {
      const Grid g(l.s, 1, joined(l.order));
      expect_megatron_groups(g, l);
      if (testing::Test::HasFatalFailure()) return;
      ++accepted;
      if (l.s.cp > 1 && l.s.ep > 1) ++with_both;
    } catch (const UsageError&) {
      ok = false;
      ++refused;
    }
    // Accepted exactly where Megatron-Core accepts: its two asserts are the rules.
    ASSERT_EQ(ok, megatron_accepts(l)) << joined(l.order) << " t=" << l.s.t << " cp=" << l.s.cp << " p=" << l.s.p
                                       << " d=" << l.s.d << " ep=" << l.s.ep;
  }
  EXPECT_EQ(accepted, 300);
  EXPECT_GT(refused, 0);
  EXPECT_GT(with_both, 30);
}

// The derivation behind the rules: with the order's assert satisfied (pp last, p = 1 or ep = cp), the
// two layouts give pp the same stride, hence the same groups, unless ep = cp > 1 stand on different
// sides of pp; the Grid refuses exactly that case. Every order of the five names, on sizes that reach
// each case.
TEST(Grid5D, PipelineGroupsOfBothLayoutsAgreeWheneverTheRulesPass) {
  std::vector<std::string> order{"cp", "dp", "ep", "pp", "tp"};
  const Sizes sizes[] = {{2, 2, 2, 2, 2}, {1, 2, 3, 2, 4}, {2, 1, 2, 4, 2}, {1, 3, 2, 1, 3}, {2, 2, 1, 2, 4}};
  int refused_by_strides = 0, orders = 0;
  do {
    ++orders;
    for (const Sizes& s : sizes) {
      const Layout l{s, order};
      const auto cp_at = std::find(order.begin(), order.end(), "cp") - order.begin();
      const auto ep_at = std::find(order.begin(), order.end(), "ep") - order.begin();
      const auto pp_at = std::find(order.begin(), order.end(), "pp") - order.begin();
      const bool order_rule = order.back() == "pp" || s.p == 1 || s.ep == s.cp;
      const bool split = s.cp == s.ep && s.cp > 1 && s.p > 1 && ((cp_at < pp_at) != (ep_at < pp_at));
      try {
        const Grid g(s, 1, joined(order));
        EXPECT_TRUE(order_rule && !split) << joined(order);
        EXPECT_EQ(dense_of(l).groups({"pp"}), expert_of(l).groups({"pp"})) << joined(order);
        if (s.p > 1) {
          EXPECT_EQ(g.stride(pipebench::topology::Axis::pp), g.expert_stride(pipebench::topology::Axis::pp));
        }
      } catch (const UsageError& e) {
        EXPECT_FALSE(order_rule && !split) << joined(order) << ": " << e.what();
        if (order_rule) {
          ++refused_by_strides;
          EXPECT_NE(dense_of(l).groups({"pp"}), expert_of(l).groups({"pp"})) << joined(order);
          EXPECT_NE(std::string(e.what()).find("pipeline groups"), std::string::npos) << e.what();
        }
      }
    }
  } while (std::next_permutation(order.begin(), order.end()));
  EXPECT_EQ(orders, 120);
  EXPECT_GT(refused_by_strides, 0);
}

// 2^24 ranks with cp and ep: queries take strides, not tables; sampled groups match the generator.
TEST(Grid5D, SixteenMillionRanksStayCheap) {
  const Layout l{Sizes{8, 4, 16, 32768, 16}, {"tp", "cp", "ep", "dp", "pp"}};
  const Grid g(l.s, 1);
  EXPECT_EQ(g.world_size(), 1 << 24);
  EXPECT_EQ(g.order(), "tp-cp-ep-dp-pp");
  EXPECT_EQ(g.edp(), 8192);
  const Generator dense = dense_of(l), expert = expert_of(l);
  std::mt19937 rng(7);
  for (const KindSource& src : sources()) {
    const int groups = g.num_groups(src.kind);
    for (int n = 0; n < 20; ++n) {
      const int gi = std::uniform_int_distribution<int>(0, groups - 1)(rng);
      const int i = std::uniform_int_distribution<int>(0, g.size(src.kind) - 1)(rng);
      const long long want = (src.expert ? expert : dense).rank(src.mask, gi, i);
      ASSERT_EQ(g.member(src.kind, gi, i), want) << pipebench::topology::group_kind_name(src.kind);
      ASSERT_EQ(g.group_index(src.kind, static_cast<int>(want)), gi);
    }
  }
}

TEST(Grid5D, DefaultOrderIsMegatronsNamedWithoutSizeOneAxes) {
  EXPECT_EQ(pipebench::topology::default_order(), "tp-dp-pp");
  EXPECT_EQ(pipebench::topology::default_order(2, 1), "tp-cp-dp-pp");
  EXPECT_EQ(pipebench::topology::default_order(2, 4), "tp-cp-ep-dp-pp");
  EXPECT_EQ(Grid(2, 2, 2).order(), "tp-dp-pp");
  EXPECT_EQ(Grid(Sizes{2, 1, 2, 2, 2}).order(), "tp-ep-dp-pp");
  EXPECT_EQ(Grid(Sizes{2, 2, 2, 2, 4}).rank_formula(), "rank = tp + 2*cp + 4*dp + 8*pp");
  EXPECT_EQ(Grid(Sizes{2, 2, 2, 2, 4}).expert_rank_formula(), "rank = etp + 2*ep + 8*pp");
  // Given, it is printed as given (lower case), size-1 axes and all.
  EXPECT_EQ(Grid(2, 2, 2, 1, "TP-CP-EP-DP-PP").order(), "tp-cp-ep-dp-pp");
  // With cp = ep = 1 every extra kind repeats a kind of the t x p x d grid or is single ranks.
  const Grid g(Sizes{2, 1, 3, 4, 1}, 1, "tp-cp-ep-dp-pp");
  EXPECT_TRUE(g.same_groups(GroupKind::dp_cp, GroupKind::dp));
  EXPECT_TRUE(g.same_groups(GroupKind::expert_dp, GroupKind::dp));
  EXPECT_TRUE(g.same_groups(GroupKind::expert_tp, GroupKind::tp));
  EXPECT_EQ(g.size(GroupKind::ep), 1);
  EXPECT_FALSE(g.same_groups(GroupKind::dp, GroupKind::tp));
}

namespace {
std::string refusal(const Sizes& s, const std::string& order) {
  try {
    Grid g(s, 1, order);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST(Grid5D, BadLayoutsAreOneLineNamingTheValue) {
  EXPECT_EQ(refusal({2, 0, 2, 2, 1}, ""), "cp (context-parallel size) = 0: must be at least 1");
  EXPECT_EQ(refusal({2, 1, 2, 2, -3}, ""), "ep (expert-parallel size) = -3: must be at least 1");
  EXPECT_EQ(refusal({256, 256, 256, 2, 1}, ""), "t*cp*p*d = 33554432 ranks: at most 16777216 are supported");
  EXPECT_EQ(refusal({1 << 24, 1, 1 << 24, 1 << 24, 1}, ""), "t*p*d = more than 2^63 ranks: at most 16777216 are supported");
  EXPECT_EQ(refusal({1, 2, 2, 3, 4}, "").rfind("ep (expert-parallel size) = 4 does not divide cp*d = 6: allowed 1, 2, 3, "
                                               "6 (the expert layers split",
                                               0),
            0u);
  EXPECT_EQ(refusal({1, 1, 1, 5040, 11}, "").rfind("ep (expert-parallel size) = 11 does not divide cp*d = 5040: allowed "
                                                   "a divisor of cp*d (",
                                                   0),
            0u);
  EXPECT_EQ(refusal({1, 2, 2, 2, 1}, "tp-dp-pp").rfind("order 'tp-dp-pp': axis 'cp' is missing, and cp = 2 needs a place "
                                                       "in it; allowed: tp, pp, dp",
                                                       0),
            0u);
  EXPECT_EQ(refusal({1, 1, 2, 2, 2}, "tp-cp-dp-pp").rfind("order 'tp-cp-dp-pp': axis 'ep' is missing, and ep = 2", 0), 0u);
  EXPECT_EQ(refusal({1, 1, 2, 2, 1}, "tp-cp-pp").rfind("order 'tp-cp-pp': axis 'dp' is missing; allowed", 0), 0u);
  EXPECT_EQ(refusal({1, 2, 2, 2, 1}, "tp-cp-dp-cp-pp").rfind("order 'tp-cp-dp-cp-pp': axis 'cp' appears twice", 0), 0u);
  EXPECT_EQ(refusal({1, 1, 2, 2, 1}, "tp-xp-dp-pp").rfind("order 'tp-xp-dp-pp': unknown axis 'xp'; allowed", 0), 0u);
  EXPECT_EQ(refusal({1, 2, 2, 2, 4}, "tp-cp-ep-pp-dp"),
            "order 'tp-cp-ep-pp-dp' with p = 2, cp = 2 and ep = 4: pp must be the last axis unless p = 1 or ep = cp "
            "(the expert layers' data-parallel size cp*d/ep then equals d), as Megatron-Core requires");
  EXPECT_EQ(refusal({1, 2, 2, 2, 2}, "TP-CP-PP-EP-DP"),
            "order 'TP-CP-PP-EP-DP' with cp = 2 and ep = 2: the dense layers' pipeline groups (pp stride 2) and the "
            "expert layers' (pp stride 1) differ; put cp and ep on the same side of pp, or pp last, as Megatron-Core "
            "requires");
  // pp not last is fine with p = 1, or with ep = cp on one side of pp.
  EXPECT_EQ(refusal({2, 2, 1, 2, 4}, "pp-tp-cp-ep-dp"), "no error");
  EXPECT_EQ(refusal({2, 2, 2, 2, 2}, "tp-pp-cp-ep-dp"), "no error");
}

// Combined kinds whose axes are apart in rank are no progression: even_stride says so.
TEST(Grid5D, EvenStrideOnlyForProgressions) {
  const Grid g(Sizes{2, 2, 2, 2, 1}, 1, "cp-tp-dp-pp");  // rank = cp + 2*tp + 4*dp + 8*pp
  EXPECT_EQ(g.even_stride(GroupKind::tp), 2);
  EXPECT_EQ(g.even_stride(GroupKind::tp_cp), 1);  // cp and tp adjacent: 0..3
  EXPECT_EQ(g.group_members(GroupKind::dp_cp, 0), (std::vector<int>{0, 1, 4, 5}));
  EXPECT_EQ(g.even_stride(GroupKind::dp_cp), 0);
  EXPECT_EQ(g.even_stride(GroupKind::ep), 1);  // single ranks
}
