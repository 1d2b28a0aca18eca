#pragma once
// What the communication layer was built with, for `pipebench info` and the run metadata.
#include <string>

namespace pipebench::comm {

// MPI library version string (callable before MPI_Init), e.g. "MPICH Version: 4.0.2 ...", first line only.
std::string mpi_library_version();
// "NCCL 2.27.7" or "not built"; CUDA runtime and visible device count, or "not built".
std::string nccl_version();
std::string cuda_runtime();

}  // namespace pipebench::comm
