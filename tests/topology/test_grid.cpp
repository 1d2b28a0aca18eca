// Grid arithmetic: docs/formulas.md's examples exactly, round trips under every axis order, bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "analysis/error.hpp"
#include "topology/grid.hpp"

using pipebench::UsageError;
using pipebench::topology::Axis;
using pipebench::topology::Coords;
using pipebench::topology::Grid;
using pipebench::topology::GroupKind;
using Groups = std::vector<std::vector<int>>;

namespace {
// Coordinates of a t x p x d grid, whose expert layout (cp = ep = 1) is the dense one.
Coords tpd(int tp, int pp, int dp) {
  Coords c;
  c.tp = c.etp = tp, c.pp = pp, c.dp = c.edp = dp;
  return c;
}
}  // namespace

TEST(Grid, ReferenceExampleTpDpPp) {
  const Grid g(2, 2, 2);  // t, p, d; default order tp-dp-pp
  EXPECT_EQ(g.order(), "tp-dp-pp");
  EXPECT_EQ(g.groups(GroupKind::tp), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(g.groups(GroupKind::dp), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(g.groups(GroupKind::pp), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(g.rank_formula(), "rank = tp + 2*dp + 4*pp");
  EXPECT_EQ(g.coords(6), tpd(0, 1, 1));  // tp 0, pp 1, dp 1
}

TEST(Grid, ReferenceExampleTpPpDp) {
  const Grid g(2, 2, 2, 1, "tp-pp-dp");
  EXPECT_EQ(g.groups(GroupKind::tp), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(g.groups(GroupKind::dp), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(g.groups(GroupKind::pp), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(g.rank_formula(), "rank = tp + 2*pp + 4*dp");
}

TEST(Grid, MegatronOrderWithSizeOneCpEp) {
  const Grid a(2, 3, 4, 1, "TP-CP-EP-DP-PP");
  const Grid b(2, 3, 4, 1, "tp-dp-pp");
  EXPECT_EQ(a.order(), "tp-cp-ep-dp-pp");
  for (int r = 0; r < a.world_size(); ++r) EXPECT_EQ(a.coords(r), b.coords(r));
}

// Every permutation of the three axes on sizes with distinct primes, so a mixed-up stride shows.
TEST(Grid, CoordinatesRoundTripUnderEveryOrder) {
  std::vector<std::string> axes{"dp", "pp", "tp"};
  const int sizes[][3] = {{2, 3, 5}, {1, 4, 2}, {3, 1, 1}, {8, 2, 3}};
  int orders = 0;
  do {
    ++orders;
    const std::string order = axes[0] + "-" + axes[1] + "-" + axes[2];
    for (const auto& s : sizes) {
      const Grid g(s[0], s[1], s[2], 1, order);
      ASSERT_EQ(g.world_size(), s[0] * s[1] * s[2]);
      // The fastest axis has stride 1, the next the size of the fastest.
      EXPECT_EQ(g.stride(axes[0] == "tp" ? Axis::tp : axes[0] == "pp" ? Axis::pp : Axis::dp), 1) << order;
      std::vector<int> seen(static_cast<std::size_t>(g.world_size()), 0);
      for (int r = 0; r < g.world_size(); ++r) {
        const Coords c = g.coords(r);
        ASSERT_EQ(g.rank_of(c), r) << order;
        ++seen[static_cast<std::size_t>(g.rank_of(c))];
        for (GroupKind k : pipebench::topology::kGroupKinds) {
          const auto members = g.group(k, r);
          ASSERT_EQ(static_cast<int>(members.size()), g.size(k));
          // Member i has coordinate i on the axis and the same coordinates elsewhere.
          EXPECT_EQ(members[static_cast<std::size_t>(g.coord(k, r))], r) << order;
          for (int i = 0; i < g.size(k); ++i) {
            Coords expect = c;
            (k == GroupKind::tp ? expect.tp : k == GroupKind::pp ? expect.pp : expect.dp) = i;
            expect.etp = expect.tp, expect.edp = expect.dp;  // cp = ep = 1: the expert layout is the dense one
            EXPECT_EQ(g.coords(members[static_cast<std::size_t>(i)]), expect) << order;
          }
        }
      }
      EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
      // Groups of a kind partition the world, numbered by their lowest member.
      for (GroupKind k : pipebench::topology::kGroupKinds) {
        const auto gs = g.groups(k);
        ASSERT_EQ(static_cast<int>(gs.size()), g.num_groups(k));
        std::vector<int> all;
        for (std::size_t i = 0; i < gs.size(); ++i) {
          if (i > 0) {
            EXPECT_LT(gs[i - 1][0], gs[i][0]);
          }
          for (int m : gs[i]) EXPECT_EQ(g.group_index(k, m), static_cast<int>(i));
          all.insert(all.end(), gs[i].begin(), gs[i].end());
        }
        std::sort(all.begin(), all.end());
        for (int r = 0; r < g.world_size(); ++r) EXPECT_EQ(all[static_cast<std::size_t>(r)], r);
      }
    }
  } while (std::next_permutation(axes.begin(), axes.end()));
  EXPECT_EQ(orders, 6);
}

TEST(Grid, LlamaLayoutStrides) {
  const Grid g(8, 16, 128);  // Llama 3 405B: 16,384 ranks
  EXPECT_EQ(g.world_size(), 16384);
  EXPECT_EQ(g.stride(Axis::tp), 1);
  EXPECT_EQ(g.stride(Axis::dp), 8);
  EXPECT_EQ(g.stride(Axis::pp), 1024);
  EXPECT_EQ(g.coords(16383), tpd(7, 15, 127));
  EXPECT_EQ(Grid(2, 4, 1).rank_formula(), "rank = tp + 2*pp");
  EXPECT_EQ(Grid(1, 1, 1).rank_formula(), "rank = 0");
  EXPECT_EQ(g.group(GroupKind::pp, 9).back(), 9 + 15 * 1024);
}

namespace {
std::string usage_message(int t, int p, int d, const std::string& order, int v = 1) {
  try {
    Grid g(t, p, d, v, order);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST(Grid, BadInputNamesValueAndAllowedSet) {
  EXPECT_EQ(usage_message(0, 2, 2, "tp-dp-pp"), "t (tensor-parallel size) = 0: must be at least 1");
  EXPECT_EQ(usage_message(2, -1, 2, "tp-dp-pp"), "p (pipeline-parallel size) = -1: must be at least 1");
  EXPECT_EQ(usage_message(2, 2, 2, "tp-dp-pp", 0), "v (chunks per pipeline rank) = 0: must be at least 1");
  EXPECT_NE(usage_message(2, 2, 2, "tp-xp-pp").find("order 'tp-xp-pp': unknown axis 'xp'; allowed: tp, pp, dp"),
            std::string::npos);
  EXPECT_NE(usage_message(2, 2, 2, "tp-dp-tp-pp").find("axis 'tp' appears twice"), std::string::npos);
  EXPECT_NE(usage_message(2, 2, 2, "tp-cp-cp-dp-pp").find("axis 'cp' appears twice"), std::string::npos);
  EXPECT_NE(usage_message(2, 2, 2, "tp-dp").find("axis 'pp' is missing"), std::string::npos);
  EXPECT_NE(usage_message(2, 2, 2, "tp--dp-pp").find("unknown axis ''"), std::string::npos);
  EXPECT_EQ(usage_message(2, 2, 2, ""), "no error");  // empty: the default order (flags refuse an empty value)
  EXPECT_NE(usage_message(4096, 4096, 4096, "tp-dp-pp").find("t*p*d = 68719476736 ranks"), std::string::npos);
  const Grid g(2, 2, 2);
  EXPECT_THROW(g.coords(8), UsageError);
  EXPECT_THROW(g.coords(-1), UsageError);
  EXPECT_THROW(g.rank_of(Coords{2, 0, 0}), UsageError);
  EXPECT_THROW(g.group_members(GroupKind::dp, 4), UsageError);
}
