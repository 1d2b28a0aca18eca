#include "comm/factory.hpp"

#include "comm/mpi_communicator.hpp"
#ifdef PIPEBENCH_HAVE_NCCL
#include "comm/nccl_communicator.hpp"
#endif

namespace pipebench::comm {

std::vector<std::string> built_backends() {
#ifdef PIPEBENCH_HAVE_NCCL
  return {"mpi", "nccl"};
#else
  return {"mpi"};
#endif
}

std::unique_ptr<Communicator> make_communicator(std::string_view backend, MPI_Comm comm, std::string name,
                                                const CommOptions& options) {
  if (backend == "mpi") return std::make_unique<MpiCommunicator>(comm, std::move(name), options.wait);
  if (backend == "nccl") {
#ifdef PIPEBENCH_HAVE_NCCL
    return make_nccl_communicator(comm, std::move(name), options.wait, options.device);
#else
    throw UsageError("communication backend 'nccl' is not built into this pipebench: configure with CUDA and "
                     "NCCL installed (PIPEBENCH_ENABLE_NCCL=ON or AUTO); built backends: mpi");
#endif
  }
  std::string allowed;
  for (const auto& b : built_backends()) allowed += (allowed.empty() ? "" : ", ") + b;
  throw UsageError("unknown communication backend '" + std::string(backend) + "': allowed " + allowed);
}

}  // namespace pipebench::comm
