// The MPI test harness itself: every rank takes part and sees the same world.
#include <gtest/gtest.h>
#include <mpi.h>

TEST(MpiHarness, AllRanksAgreeOnSum) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int sum = 0;
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(sum, size * (size - 1) / 2);
}
