// Clock offsets by ping-pong: on one host every rank shares rank 0's clock, so the true offset is 0
// and the estimate must lie within its stated uncertainty (Cristian's bound: half the round trip).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>

#include "bench/run/clock_sync.hpp"
#include "comm/factory.hpp"
#include "topology/mpi_grid.hpp"

using namespace pipebench;

TEST(ClockSync, PingPongEstimateBracketsTheTrueOffset) {
  auto world = comm::make_communicator("mpi", MPI_COMM_WORLD, "world");
  const bench::ClockOffset o = bench::estimate_clock_offset(*world, nullptr, 10);
  if (world->rank() == 0) {
    EXPECT_EQ(o.offset, 0.0);
    EXPECT_EQ(o.uncertainty, 0.0);
    return;
  }
  EXPECT_GT(o.uncertainty, 0.0);
  EXPECT_LE(std::abs(o.offset), o.uncertainty + 1e-6) << "offset " << o.offset << " s";
}

TEST(ClockSync, RanksOnRankZerosHostShareItsClock) {
  auto world = comm::make_communicator("mpi", MPI_COMM_WORLD, "world");
  const topology::MpiGrid mg(topology::Grid(1, world->size(), 1));
  const bench::ClockOffset o =
      bench::estimate_clock_offset(*world, [&mg](int r) { return mg.placement().node_of(r); });
  EXPECT_EQ(o.offset, 0.0);
  EXPECT_EQ(o.uncertainty, 0.0);
}
