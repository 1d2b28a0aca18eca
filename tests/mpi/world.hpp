#pragma once
// The size of MPI_COMM_WORLD, for the MPI tests (mpi_main.cpp starts MPI).
#include <mpi.h>

namespace pipebench::testing {

inline int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

}  // namespace pipebench::testing
