#pragma once
// The NCCL backend, built only with PIPEBENCH_HAVE_NCCL (comm/CMakeLists.txt). Its class stays in
// nccl_communicator.cpp so that nothing else includes CUDA or NCCL headers; use make_communicator().
#include <mpi.h>

#include <memory>
#include <string>

#include "comm/communicator.hpp"

namespace pipebench::comm {

// Collective over `comm`. device < 0: the node-local rank from the launcher (MPI_LOCALRANKID,
// OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID) modulo the visible devices, else the current device.
// Error on every rank when any rank has no usable GPU.
std::unique_ptr<Communicator> make_nccl_communicator(MPI_Comm comm, std::string name, const WaitPolicy& policy,
                                                     int device);

// The CUDA device this process works on (the one its NCCL communicators chose, once one is built), as
// nccl-tests' header names it: index, PCI address "0000:04:00" (domain:bus:device) and name.
struct CudaDevice {
  int index = -1;
  std::string pci_bus, name;
};
CudaDevice current_cuda_device();

}  // namespace pipebench::comm
