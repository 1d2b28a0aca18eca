#pragma once
// Picks a communicator backend by name ("mpi", "nccl") and says clearly when one is unavailable.
#include <mpi.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "comm/communicator.hpp"

namespace pipebench::comm {

struct CommOptions {
  WaitPolicy wait;
  int device = -1;  // NCCL only; see make_nccl_communicator
};

// Backends compiled into this build: "mpi", plus "nccl" with PIPEBENCH_HAVE_NCCL.
std::vector<std::string> built_backends();

// Collective over `comm`. UsageError for an unknown name or a backend not built in; Error when the
// backend cannot start (for NCCL: no usable GPU on some rank).
std::unique_ptr<Communicator> make_communicator(std::string_view backend, MPI_Comm comm, std::string name,
                                                const CommOptions& options = {});

}  // namespace pipebench::comm
