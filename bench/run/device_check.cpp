#include "bench/run/device_check.hpp"

#include "analysis/catalog.hpp"
#include "analysis/error.hpp"

namespace pipebench::bench {

namespace {

std::string none_usable(const kernels::DeviceInfo& dev) {
  return dev.error.empty() ? std::string("no device found") : dev.error;
}

}  // namespace

std::string device_refusal(const kernels::DeviceInfo& dev, bool nccl_built, const RunSettings& rs, int ranks_per_node,
                           int world_size) {
  const bool nccl = rs.backend == "nccl";
  if (nccl && !nccl_built)
    return "--backend nccl: this pipebench was built without NCCL (configure it with CUDA and NCCL, e.g. the "
           "kokkos4-cuda preset: docs/gpu.md); use --backend mpi";
  if (dev.device_build && dev.count < 1)
    return "this pipebench runs its kernels on Kokkos' " + dev.space + " backend, but no " + dev.space +
           " device is usable here (" + none_usable(dev) + "); run it on a GPU node or use a host build (docs/gpu.md)";
  if (nccl && !dev.device_build)
    return "--backend nccl needs the kernels on a CUDA device, but this pipebench's Kokkos runs on " + dev.space +
           " (host memory); use --backend mpi or a CUDA build (docs/gpu.md)";
  if (nccl && ranks_per_node > dev.count)
    return "--backend nccl needs one GPU per rank: " + std::to_string(ranks_per_node) +
           " ranks run on rank 0's node, which has " + std::to_string(dev.count) + " GPU(s); start at most " +
           std::to_string(dev.count) + " ranks per node or use --backend mpi";
  if (dev.device_build && rs.workload == WorkloadKind::transformer &&
      (rs.precision == kernels::Precision::bf16 || rs.precision == kernels::Precision::fp16))
    return std::string("--precision ") + kernels::to_string(rs.precision) + ": this build runs its kernels on " +
           dev.space + ", and 16-bit storage runs on the host only (16-bit GEMMs on a device are not built yet); "
           "use --precision fp32 or a host build";
  if (!dev.device_build || rs.workload != WorkloadKind::transformer || nccl) return {};
  // The transformer's gradients and activations live in device memory in a device build. The MPI
  // backend would take them as they are for its all-reduces and for the exchanges of DualPipe's twin
  // stages and of tied embeddings, and this MPI is not CUDA-aware (NCCL takes them).
  for (const auto& mp : sweep_mappings(rs, world_size))
    if (mp.t > 1 || mp.d > 1)
      return "--mapping " + to_string(mp) + ": tensor- and data-parallel all-reduces of the transformer would "
             "hand device memory to MPI, which is not CUDA-aware here; use --backend nccl, or pipeline-only "
             "mappings 1xPx1 on a " + dev.space + " build (docs/gpu.md)";
  for (const auto& name : rs.schedules) {
    const analysis::ScheduleRow* row = analysis::find_schedule(name);
    if (!row || row->pipes == 1) continue;
    const analysis::ScheduleRow* one = analysis::one_copy_form(*row);
    return "--schedule " + name + ": the transformer's two model copies would exchange their gradients, device "
           "memory, over MPI, which is not CUDA-aware here; use --backend nccl or " +
           (one ? one->name : std::string("a schedule with one model copy")) + " (docs/gpu.md)";
  }
  if (rs.model.tie_embeddings)
    return "--tie-embeddings: the tied copies would exchange their gradients, device memory, over MPI, which "
           "is not CUDA-aware here; use --backend nccl (docs/gpu.md)";
  return {};
}

void check_device(const RunSettings& rs, int ranks_per_node, int world_size) {
#ifdef PIPEBENCH_HAVE_NCCL
  constexpr bool nccl_built = true;
#else
  constexpr bool nccl_built = false;
#endif
  const std::string why = device_refusal(kernels::device_info(), nccl_built, rs, ranks_per_node, world_size);
  if (!why.empty()) throw UsageError(why);
}

}  // namespace pipebench::bench
