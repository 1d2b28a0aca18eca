#pragma once
// What the MPI tests that run Kokkos kernels share (one test executable each; mpi_main.cpp starts
// MPI): Kokkos initialized once around all tests of the executable, and the size of the world
// (world.hpp).
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include "world.hpp"

namespace pipebench::testing {

class KokkosEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { Kokkos::initialize(); }
  void TearDown() override { Kokkos::finalize(); }
};
// Registered once per executable, however many of its files include this header.
[[maybe_unused]] inline ::testing::Environment* const kKokkosEnvironment =
    ::testing::AddGlobalTestEnvironment(new KokkosEnvironment);

}  // namespace pipebench::testing
