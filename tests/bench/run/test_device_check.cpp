// The device check of `run` (bench/run/device_check.hpp): every refusal of issue 14's "Bad input", from
// the facts alone, so it is tested on a machine without a GPU.
#include <gtest/gtest.h>

#include "bench/run/device_check.hpp"

namespace pipebench::bench {
namespace {

kernels::DeviceInfo host() { return {false, "Serial", 0, ""}; }
kernels::DeviceInfo cuda(int n, std::string error = "") { return {true, "Cuda", n, std::move(error)}; }

RunSettings settings(const std::string& backend, WorkloadKind w = WorkloadKind::synthetic) {
  RunSettings rs;
  rs.backend = backend;
  rs.workload = w;
  return rs;
}

TEST(DeviceCheck, MpiOnAHostBuildRuns) {
  EXPECT_EQ(device_refusal(host(), false, settings("mpi"), 4, 4), "");
  EXPECT_EQ(device_refusal(host(), true, settings("mpi", WorkloadKind::transformer), 4, 4), "");
}

// --precision bf16|fp16 is 16-bit storage over host memory: refused on a device build, over either backend.
TEST(DeviceCheck, SixteenBitPrecisionOnADeviceBuild) {
  for (const char* backend : {"mpi", "nccl"})
    for (auto p : {kernels::Precision::bf16, kernels::Precision::fp16}) {
      RunSettings rs = settings(backend, WorkloadKind::transformer);
      rs.precision = p;
      const std::string why = device_refusal(cuda(4), true, rs, 1, 1);
      EXPECT_NE(why.find(std::string("--precision ") + kernels::to_string(p) + ": this build runs its kernels on Cuda"),
                std::string::npos)
          << why;
      EXPECT_EQ(device_refusal(host(), true, rs, 1, 1).find("--precision"), std::string::npos);
    }
}

TEST(DeviceCheck, NcclWithoutNcclInTheBuild) {
  const std::string why = device_refusal(host(), false, settings("nccl"), 1, 1);
  EXPECT_NE(why.find("--backend nccl: this pipebench was built without NCCL"), std::string::npos) << why;
  EXPECT_NE(why.find("--backend mpi"), std::string::npos) << why;
}

TEST(DeviceCheck, NcclOnAHostBuild) {
  const std::string why = device_refusal(host(), true, settings("nccl"), 1, 1);
  EXPECT_NE(why.find("--backend nccl needs the kernels on a CUDA device"), std::string::npos) << why;
  EXPECT_NE(why.find("Serial"), std::string::npos) << why;
}

TEST(DeviceCheck, DeviceBuildWithoutADevice) {
  for (const char* backend : {"mpi", "nccl"}) {
    const std::string why = device_refusal(cuda(0, "cudaGetDeviceCount: no CUDA-capable device is detected"), true,
                                           settings(backend), 1, 1);
    EXPECT_NE(why.find("Kokkos' Cuda backend, but no Cuda device is usable here (cudaGetDeviceCount: no CUDA-capable"),
              std::string::npos)
        << why;
  }
  EXPECT_NE(device_refusal(cuda(0), true, settings("mpi"), 1, 1).find("(no device found)"), std::string::npos);
}

TEST(DeviceCheck, NcclNeedsOneGpuPerRank) {
  const std::string why = device_refusal(cuda(1), true, settings("nccl"), 4, 4);
  EXPECT_NE(why.find("--backend nccl needs one GPU per rank: 4 ranks run on rank 0's node, which has 1 GPU(s)"),
            std::string::npos)
      << why;
  // The MPI backend shares one GPU between ranks.
  EXPECT_EQ(device_refusal(cuda(1), true, settings("mpi"), 4, 4), "");
}

TEST(DeviceCheck, TensorAndDataParallelTransformerOnADeviceOverMpi) {
  RunSettings rs = settings("mpi", WorkloadKind::transformer);
  EXPECT_EQ(device_refusal(cuda(1), true, rs, 4, 4), "");  // no --mapping: 1x4x1
  rs.mappings = {{1, 4, 1}, {2, 2, 1}};
  const std::string why = device_refusal(cuda(1), true, rs, 4, 4);
  EXPECT_NE(why.find("--mapping 2x2x1: tensor- and data-parallel all-reduces"), std::string::npos) << why;
  EXPECT_NE(why.find("not CUDA-aware here; use --backend nccl"), std::string::npos) << why;
  rs.mappings = {{1, 2, 2}};
  EXPECT_NE(device_refusal(cuda(1), true, rs, 4, 4).find("--mapping 1x2x2"), std::string::npos);
  // The synthetic workload's all-reduces take host buffers over MPI.
  rs.workload = WorkloadKind::synthetic;
  EXPECT_EQ(device_refusal(cuda(1), true, rs, 4, 4), "");
  // A host build keeps everything in host memory.
  rs.workload = WorkloadKind::transformer;
  EXPECT_EQ(device_refusal(host(), false, rs, 4, 4), "");
}

TEST(DeviceCheck, NcclRunsSyntheticPipelinesOnOneGpuPerRank) {
  EXPECT_EQ(device_refusal(cuda(4), true, settings("nccl"), 4, 4), "");
  RunSettings rs = settings("nccl");
  rs.mappings = {{1, 4, 1}, {1, 2, 1}};
  EXPECT_EQ(device_refusal(cuda(4), true, rs, 4, 4), "");
}

// Over NCCL the transformer's all-reduces take its device memory: any mapping, one GPU per rank.
TEST(DeviceCheck, NcclRunsTheTransformer) {
  RunSettings rs = settings("nccl", WorkloadKind::transformer);
  rs.mappings = {{1, 4, 1}, {2, 2, 1}, {1, 2, 2}};
  EXPECT_EQ(device_refusal(cuda(4), true, rs, 4, 4), "");
  rs.schedules = {"dualpipe"};
  rs.model.tie_embeddings = true;
  EXPECT_EQ(device_refusal(cuda(4), true, rs, 4, 4), "");  // their copies' sums on the device
}

// The synthetic workload's TP all-reduce buffer and gradients are device memory over NCCL.
TEST(DeviceCheck, NcclRunsSyntheticTensorAndDataParallelMappings) {
  RunSettings rs = settings("nccl");
  rs.mappings = {{1, 2, 1}, {2, 2, 1}, {1, 2, 2}, {2, 1, 2}};
  rs.schedules = {"1f1b", "dualpipe"};
  EXPECT_EQ(device_refusal(cuda(4), true, rs, 4, 4), "");
}

// DualPipe's twins and tied embeddings exchange gradient copies: over MPI not with device memory.
TEST(DeviceCheck, CopiesOfTheTransformerOnADeviceNeedNccl) {
  RunSettings rs = settings("mpi", WorkloadKind::transformer);
  rs.schedules = {"1f1b", "dualpipe"};
  std::string why = device_refusal(cuda(4), true, rs, 4, 4);
  EXPECT_NE(why.find("--schedule dualpipe: the transformer's two model copies would exchange their gradients"),
            std::string::npos) << why;
  EXPECT_NE(why.find("use --backend nccl or dualpipev"), std::string::npos) << why;
  rs.schedules = {"dualpipev"};
  EXPECT_EQ(device_refusal(cuda(4), true, rs, 4, 4), "");
  rs.model.tie_embeddings = true;
  why = device_refusal(cuda(4), true, rs, 4, 4);
  EXPECT_NE(why.find("--tie-embeddings: the tied copies would exchange their gradients"), std::string::npos) << why;
  EXPECT_EQ(device_refusal(host(), false, rs, 4, 4), "");  // host memory: MPI takes it
  rs.schedules = {"dualpipe"};
  rs.backend = "nccl";
  EXPECT_EQ(device_refusal(cuda(4), true, rs, 4, 4), "");
  rs.backend = "mpi";
  rs.model.tie_embeddings = false;
  rs.workload = WorkloadKind::synthetic;
  EXPECT_EQ(device_refusal(cuda(4), true, rs, 4, 4), "");
}

}  // namespace
}  // namespace pipebench::bench
