// Kokkos is initialised once for the whole test program (library code never does it), and the host BLAS
// runs one thread: ctest runs tests in parallel on few cores, and single-threaded BLAS keeps every
// product's summation order fixed, which the bitwise comparisons rely on.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include "kernels/host_tuning.hpp"

namespace {

class KokkosEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    Kokkos::initialize();
    pipebench::kernels::set_blas_threads(1);
  }
  void TearDown() override { Kokkos::finalize(); }
};

[[maybe_unused]] ::testing::Environment* const kokkos_environment =
    ::testing::AddGlobalTestEnvironment(new KokkosEnvironment);

}  // namespace
