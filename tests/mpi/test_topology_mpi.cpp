// Communicators built by MpiGrid have exactly the members the Grid says, in coordinate order (the
// t x p x d kinds by default, every kind of the five axes when asked), and the node detection agrees
// with the processor names.
#include <gtest/gtest.h>
#include <mpi.h>

#include <set>
#include <string>
#include <vector>

#include "analysis/error.hpp"
#include "topology/mpi_grid.hpp"
#include "world.hpp"

using namespace pipebench::topology;
using pipebench::testing::world_size;

namespace {

// Every grid of the right size from the brief, both orders where they differ.
std::vector<Grid> grids_for(int n) {
  if (n == 8) return {Grid(2, 2, 2, 1, "tp-dp-pp"), Grid(2, 2, 2, 1, "tp-pp-dp"), Grid(2, 4, 1), Grid(1, 2, 4, 1, "dp-pp-tp")};
  if (n == 4) return {Grid(1, 4, 1), Grid(2, 2, 1), Grid(2, 2, 1, 1, "pp-tp-dp"), Grid(1, 2, 2, 1, "tp-pp-dp")};
  if (n == 2) return {Grid(2, 1, 1), Grid(1, 2, 1), Grid(1, 1, 2)};
  return {};
}

std::vector<int> members_in_comm_order(const MpiComm& c, int world_rank) {
  std::vector<int> out(static_cast<std::size_t>(c.size()));
  MPI_Allgather(&world_rank, 1, MPI_INT, out.data(), 1, MPI_INT, c.get());
  return out;
}

}  // namespace

TEST(MpiGrid, CommunicatorsHaveTheGridsMembers) {
  const auto grids = grids_for(world_size());
  if (grids.empty()) GTEST_SKIP() << "no grid listed for " << world_size() << " ranks";
  for (const Grid& g : grids) {
    const MpiGrid mg(g);
    const int r = mg.rank();
    EXPECT_EQ(mg.coords(), g.coords(r));
    for (GroupKind k : kGroupKinds) {
      const MpiComm& c = mg.comm(k);
      EXPECT_EQ(c.size(), g.size(k)) << g.order() << " " << group_kind_name(k);
      EXPECT_EQ(c.rank(), g.coord(k, r)) << g.order() << " " << group_kind_name(k);
      EXPECT_EQ(members_in_comm_order(c, r), g.group(k, r)) << g.order() << " " << group_kind_name(k);
    }
  }
}

// 8 ranks with cp and ep above 1, orders with pp last and not: the communicators of every kind asked
// for, dense and expert, have the Grid's members; what is not asked for is not built.
TEST(MpiGrid, FiveAxisCommunicatorsHaveTheGridsMembers) {
  if (world_size() != 8) GTEST_SKIP() << "the five-axis grids are for 8 ranks";
  const std::vector<GroupKind> kinds(kAllGroupKinds.begin(), kAllGroupKinds.end());
  // Sizes are t, cp, p, d, ep.
  const Grid grids[] = {Grid(Sizes{1, 2, 2, 2, 4}), Grid(Sizes{2, 2, 1, 2, 2}, 1, "ep-tp-cp-dp-pp"),
                        Grid(Sizes{1, 2, 2, 2, 2}, 1, "tp-pp-cp-ep-dp"), Grid(Sizes{2, 2, 1, 2, 4}, 1, "cp-dp-tp-ep-pp"),
                        Grid(Sizes{1, 4, 1, 2, 8}, 1, "dp-ep-cp-tp-pp")};
  for (const Grid& g : grids) {
    const MpiGrid mg(g, MPI_COMM_WORLD, kinds);
    const int r = mg.rank();
    EXPECT_EQ(mg.coords(), g.coords(r));
    for (GroupKind k : kinds) {
      const MpiComm& c = mg.comm(k);
      EXPECT_EQ(c.size(), g.size(k)) << g.order() << " " << group_kind_name(k);
      EXPECT_EQ(c.rank(), g.coord(k, r)) << g.order() << " " << group_kind_name(k);
      EXPECT_EQ(members_in_comm_order(c, r), g.group(k, r)) << g.order() << " " << group_kind_name(k);
    }
  }
  const MpiGrid only_ep(Grid(Sizes{1, 2, 2, 2, 2}), MPI_COMM_WORLD, {GroupKind::ep});
  EXPECT_EQ(only_ep.comm(GroupKind::ep).size(), 2);
  EXPECT_THROW(only_ep.comm(GroupKind::tp), pipebench::Error);
  const MpiGrid plain(Grid(Sizes{1, 2, 2, 2, 2}));  // tp, pp, dp only, as `run` builds them
  EXPECT_THROW(plain.comm(GroupKind::dp_cp), pipebench::Error);
  EXPECT_EQ(plain.comm(GroupKind::dp).size(), 2);
}

TEST(MpiGrid, NodesMatchProcessorNames) {
  const int n = world_size();
  const MpiGrid mg(Grid(1, n, 1));
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  std::vector<char> all(static_cast<std::size_t>(n) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
  std::set<std::string> hosts;
  int same_host = 0;
  for (int i = 0; i < n; ++i) {
    const std::string h(all.data() + static_cast<std::size_t>(i) * MPI_MAX_PROCESSOR_NAME);
    hosts.insert(h);
    if (h == name) ++same_host;
  }
  const Placement& pl = mg.placement();
  EXPECT_EQ(pl.world_size(), n);
  EXPECT_EQ(pl.num_nodes(), static_cast<int>(hosts.size()));
  EXPECT_EQ(pl.node_name(pl.node_of(mg.rank())), name);
  EXPECT_EQ(mg.node_comm().size(), same_host);
  EXPECT_EQ(pl.node_of(0), 0);
}

TEST(MpiGrid, WrongWorldSizeIsAUsageErrorOnEveryRank) {
  const int n = world_size();
  try {
    MpiGrid mg(Grid(n, 2, 1));
    FAIL() << "no error";
  } catch (const pipebench::UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "t*p*d = " + std::to_string(2 * n) + " (t=" + std::to_string(n) +
                                         ", p=2, d=1) but the job has " + std::to_string(n) + " ranks");
  }
  try {
    MpiGrid mg(Grid(Sizes{1, 2, n, 1, 1}));
    FAIL() << "no error";
  } catch (const pipebench::UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "t*cp*p*d = " + std::to_string(2 * n) + " (t=1, cp=2, p=" + std::to_string(n) +
                                         ", d=1) but the job has " + std::to_string(n) + " ranks");
  }
}
