#include "comm/build_info.hpp"

#include <mpi.h>

#ifdef PIPEBENCH_HAVE_NCCL
#include <cuda_runtime_api.h>
#include <nccl.h>
#endif

namespace pipebench::comm {

std::string mpi_library_version() {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(buf, &len);
  std::string s(buf, static_cast<std::size_t>(len));
  if (auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  // MPICH separates fields with tabs; keep the line readable.
  for (char& c : s)
    if (c == '\t') c = ' ';
  int major = 0, minor = 0;
  MPI_Get_version(&major, &minor);
  return s + " (MPI " + std::to_string(major) + "." + std::to_string(minor) + ")";
}

#ifdef PIPEBENCH_HAVE_NCCL
std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "built, version unknown";
  // NCCL encodes major*10000 + minor*100 + patch since 2.9.
  return "NCCL " + std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100);
}

std::string cuda_runtime() {
  int rt = 0;
  cudaRuntimeGetVersion(&rt);
  std::string s = "CUDA runtime " + std::to_string(rt / 1000) + "." + std::to_string((rt % 1000) / 10);
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) return s + ", no usable device (" + cudaGetErrorString(err) + ")";
  s += ", " + std::to_string(n) + " device(s)";
  if (n > 0) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) s += std::string(": ") + prop.name;
  }
  return s;
}
#else
std::string nccl_version() { return "not built"; }
std::string cuda_runtime() { return "not built"; }
#endif

}  // namespace pipebench::comm
