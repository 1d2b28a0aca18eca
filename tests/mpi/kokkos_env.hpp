#pragma once
// What the MPI tests that run Kokkos kernels share (one test executable each; mpi_main.cpp starts
// MPI): Kokkos initialized once around all tests of the executable, and the size of the world.
#include <gtest/gtest.h>
#include <mpi.h>

#include <Kokkos_Core.hpp>

namespace pipebench::testing {

class KokkosEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { Kokkos::initialize(); }
  void TearDown() override { Kokkos::finalize(); }
};
// Registered once per executable, however many of its files include this header.
[[maybe_unused]] inline ::testing::Environment* const kKokkosEnvironment =
    ::testing::AddGlobalTestEnvironment(new KokkosEnvironment);

inline int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

}  // namespace pipebench::testing
