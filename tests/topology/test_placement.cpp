// Placement summaries checked by hand, including the Llama 3 layout on 8-rank nodes.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "analysis/error.hpp"
#include "topology/placement.hpp"

using pipebench::topology::Grid;
using pipebench::topology::GroupKind;
using pipebench::topology::Placement;
using pipebench::topology::summarize;

TEST(Placement, BlockNumbering) {
  const auto pl = Placement::block(10, 4);
  EXPECT_EQ(pl.num_nodes(), 3);
  EXPECT_EQ(pl.node_of(3), 0);
  EXPECT_EQ(pl.node_of(4), 1);
  EXPECT_EQ(pl.node_of(9), 2);
  EXPECT_EQ(pl.node_name(2), "node2");
  EXPECT_THROW(Placement::block(10, 0), pipebench::UsageError);
}

TEST(Placement, HostsNumberedByFirstAppearance) {
  const auto pl = Placement::from_hosts({"b", "b", "a", "b", "c"});
  EXPECT_EQ(pl.num_nodes(), 3);
  EXPECT_EQ(pl.node_of(3), 0);
  EXPECT_EQ(pl.node_of(2), 1);
  EXPECT_EQ(pl.node_name(1), "a");
  EXPECT_THROW(Placement::from_nodes({0, 2}, {"x", "y"}), pipebench::Error);
}

// t=2 p=2 d=2, tp-dp-pp, 4 ranks per node: node 0 = ranks 0-3 = pp stage 0, node 1 = pp stage 1.
TEST(Placement, SmallGridTwoNodes) {
  const Grid g(2, 2, 2);
  const auto s = summarize(g, Placement::block(8, 4));
  EXPECT_EQ(s.nodes, 2);
  EXPECT_EQ(s.min_ranks_per_node, 4);
  EXPECT_EQ(s[GroupKind::tp].groups, 4);
  EXPECT_EQ(s[GroupKind::tp].spanning, 0);
  EXPECT_EQ(s[GroupKind::dp].spanning, 0);
  EXPECT_EQ(s[GroupKind::pp].spanning, 4);
  EXPECT_EQ(s[GroupKind::pp].max_nodes, 2);
  EXPECT_EQ(s.pp_links, 4);
  EXPECT_EQ(s.pp_links_cross, 4);
  EXPECT_EQ(s.pp_wrap_links, 0);
  EXPECT_TRUE(s.warnings.empty());
}

// 3 ranks per node: nodes {0,1,2} {3,4,5} {6,7}. tp [0,1] [2,3] [4,5] [6,7]: only [2,3] spans.
// dp [0,2] [1,3] [4,6] [5,7]: all but [0,2] span. pp [0,4] [1,5] [2,6] [3,7]: all span.
TEST(Placement, UnevenNodesCutGroups) {
  const Grid g(2, 2, 2);
  const auto s = summarize(g, Placement::block(8, 3));
  EXPECT_EQ(s.nodes, 3);
  EXPECT_EQ(s.min_ranks_per_node, 2);
  EXPECT_EQ(s.max_ranks_per_node, 3);
  EXPECT_EQ(s[GroupKind::tp].spanning, 1);
  EXPECT_EQ(s[GroupKind::dp].spanning, 3);
  EXPECT_EQ(s[GroupKind::pp].spanning, 4);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(s.warnings[0].rfind("1 of 4 tp groups span more than one node", 0), 0u) << s.warnings[0];
}

// Interleaved wrap link pp p-1 -> pp 0: p=4 on 2-rank nodes (t=d=1): nodes {0,1} {2,3}.
TEST(Placement, InterleavedWrapLinks) {
  const Grid g(1, 4, 1, 2);
  const auto s = summarize(g, Placement::from_hosts({"x", "x", "y", "y"}));
  EXPECT_EQ(s.pp_links, 3);
  EXPECT_EQ(s.pp_links_cross, 1);  // 1 -> 2
  EXPECT_EQ(s.pp_wrap_links, 1);
  EXPECT_EQ(s.pp_wrap_cross, 1);   // 3 -> 0
}

TEST(Placement, Llama3TensorFastestKeepsTensorGroupsOnNodes) {
  const Grid g(8, 16, 128);
  const auto s = summarize(g, Placement::block(g.world_size(), 8));
  EXPECT_EQ(s.nodes, 2048);
  EXPECT_EQ(s[GroupKind::tp].groups, 2048);
  EXPECT_EQ(s[GroupKind::tp].spanning, 0);
  EXPECT_EQ(s[GroupKind::tp].max_nodes, 1);
  EXPECT_EQ(s[GroupKind::dp].groups, 128);
  EXPECT_EQ(s[GroupKind::dp].spanning, 128);
  EXPECT_EQ(s[GroupKind::dp].max_nodes, 128);
  EXPECT_EQ(s[GroupKind::pp].groups, 1024);
  EXPECT_EQ(s[GroupKind::pp].spanning, 1024);
  EXPECT_EQ(s[GroupKind::pp].max_nodes, 16);
  EXPECT_EQ(s.pp_links, 1024 * 15);
  EXPECT_EQ(s.pp_links_cross, 1024 * 15);
  EXPECT_TRUE(s.warnings.empty());
}

TEST(Placement, Llama3TensorNotFastestSpansEveryTensorGroup) {
  const Grid g(8, 16, 128, 1, "dp-tp-pp");
  const auto s = summarize(g, Placement::block(g.world_size(), 8));
  EXPECT_EQ(s[GroupKind::tp].spanning, 2048);
  EXPECT_EQ(s[GroupKind::tp].max_nodes, 8);  // stride 128 = 16 nodes apart: each member on its own node
  EXPECT_EQ(s[GroupKind::dp].spanning, 128);  // dp fastest: 128 consecutive ranks = 16 nodes
  EXPECT_EQ(s[GroupKind::dp].max_nodes, 16);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_EQ(s.warnings[0].rfind("2048 of 2048 tp groups span more than one node", 0), 0u);
}

TEST(Placement, WorldSizeMismatchIsAnError) {
  EXPECT_THROW(summarize(Grid(2, 2, 2), Placement::block(6, 2)), pipebench::Error);
}

TEST(Hostfile, HostAndCountLinesWithComments) {
  std::istringstream in("# two nodes\n  gpu01:3 \n\ngpu02   # one rank\ngpu01:1\n");
  EXPECT_EQ(pipebench::topology::parse_hostfile(in, "hosts.txt"),
            (std::vector<std::string>{"gpu01", "gpu01", "gpu01", "gpu02", "gpu01"}));
}

TEST(Hostfile, BadLinesNameFileAndLine) {
  auto message = [](const std::string& text) {
    std::istringstream in(text);
    try {
      pipebench::topology::parse_hostfile(in, "h");
    } catch (const pipebench::UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("a\nb:0\n").rfind("h:2: rank count '0' is not a whole number from 1 to", 0), 0u);
  EXPECT_EQ(message("a:x").rfind("h:1: rank count 'x'", 0), 0u);
  EXPECT_EQ(message(":4"), "h:1: missing host name before ':'");
  EXPECT_EQ(message("# nothing\n"), "h: no hosts listed (lines are `host` or `host:n`)");
}
