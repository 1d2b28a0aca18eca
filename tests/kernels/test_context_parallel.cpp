// Context parallelism's positions and the windows of a block that a rank's queries see
// (kernels/cp_positions.hpp, kernels/context_parallel.hpp); the attention itself against one rank is
// tests/mpi/test_context_parallel.cpp.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/context_parallel.hpp"

namespace pipebench::kernels::test {
namespace {

std::vector<int> positions(int cp, int rank, int local, CpChunks chunks) {
  const CpPositions pos{cp, rank, local, chunks};
  std::vector<int> out;
  for (int i = 0; i < local; ++i) out.push_back(pos(i));
  return out;
}

TEST(ContextParallelPositions, ZigzagGivesRankIChunksIAndTwoCpMinusOneMinusI) {
  // s = 16, cp = 2: 4 chunks of 4; rank 0 holds chunks 0 and 3, rank 1 chunks 1 and 2.
  EXPECT_EQ(positions(2, 0, 8, CpChunks::zigzag), (std::vector<int>{0, 1, 2, 3, 12, 13, 14, 15}));
  EXPECT_EQ(positions(2, 1, 8, CpChunks::zigzag), (std::vector<int>{4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(positions(4, 1, 2, CpChunks::zigzag), (std::vector<int>{1, 6}));
  EXPECT_EQ(positions(2, 1, 4, CpChunks::contiguous), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(positions(1, 0, 3, CpChunks::zigzag), (std::vector<int>{0, 1, 2}));
}

// Zigzag: half of every other rank's block (a lower rank's first chunk to all queries, a higher rank's
// whole block to the second chunk's queries); contiguous: a lower rank's whole block, a higher rank's
// nothing; the rank's own block whole (its diagonal).
TEST(ContextParallelPositions, WindowsAreWhatTheCausalMaskLeaves) {
  auto window = [](int rank, int owner, CpChunks chunks) {
    const cp_detail::Window w = cp_detail::visible(CpPositions{4, rank, 8, chunks}, owner);
    return std::vector<int>{w.q0, w.nq, w.nk};
  };
  EXPECT_EQ(window(2, 2, CpChunks::zigzag), (std::vector<int>{0, 8, 8}));
  EXPECT_EQ(window(2, 0, CpChunks::zigzag), (std::vector<int>{0, 8, 4}));
  EXPECT_EQ(window(2, 3, CpChunks::zigzag), (std::vector<int>{4, 4, 8}));
  EXPECT_EQ(window(2, 0, CpChunks::contiguous), (std::vector<int>{0, 8, 8}));
  EXPECT_TRUE(cp_detail::visible(CpPositions{4, 2, 8, CpChunks::contiguous}, 3).empty());
}

}  // namespace
}  // namespace pipebench::kernels::test
