// pipebench comm's measuring loops on the NCCL backend (device buffers, ncclGroupStart/End): every
// operation with its data check finds no wrong element, in place and out of place, for each type NCCL
// reduces. Skips (does not fail) without a GPU, or with fewer GPUs on a node than ranks.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <string>

#include "comm/bench_harness.hpp"
#include "comm/factory.hpp"

using namespace pipebench::comm;
using namespace pipebench::comm::bench;

namespace {

std::unique_ptr<Communicator> nccl_world_or_skip(std::string& why) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local = 0;
  MPI_Comm_size(node, &local);
  MPI_Comm_free(&node);
  if (devices < local) {
    why = std::to_string(local) + " rank(s) on a node with " + std::to_string(devices) + " GPU(s)";
    return nullptr;
  }
  return make_communicator("nccl", MPI_COMM_WORLD, "bench");
}

}  // namespace

TEST(NcclCommBench, EveryOperationChecksOut) {
  std::string why;
  auto group = nccl_world_or_skip(why);
  if (!group) GTEST_SKIP() << why;
  auto world = make_communicator("mpi", MPI_COMM_WORLD, "world");
  for (const OpRow& row : op_rows()) {
    if (pairs_members(row)) continue;  // PointToPointOnPairs
    const BenchOp op = row.op;
    for (DType t : {DType::f32, DType::f16, DType::bf16, DType::i32}) {
      Spec spec;
      spec.op = op;
      spec.dtype = t;
      spec.redop = ReduceOp::max;
      spec.iters = 3;
      spec.warmup = 1;
      spec.check = true;
      Harness h(*group, *world, spec, true, 1 << 16);
      for (std::uint64_t bytes : {8ull, 4096ull, 65536ull}) {
        const Sample s = h.run(bytes);
        EXPECT_EQ(s.wrong[0], 0) << bench_op_name(op) << " " << dtype_name(t) << " " << bytes;
        EXPECT_EQ(s.wrong[1], 0) << bench_op_name(op) << " in place " << dtype_name(t) << " " << bytes;
        EXPECT_GT(s.time_s[0], 0);
      }
    }
  }
}

TEST(NcclCommBench, PointToPointOnPairs) {
  std::string why;
  auto group = nccl_world_or_skip(why);
  if (!group) GTEST_SKIP() << why;
  if (group->size() < 2) GTEST_SKIP() << "point-to-point needs 2 ranks";
  auto world = make_communicator("mpi", MPI_COMM_WORLD, "world");
  for (const OpRow& row : op_rows()) {
    if (!pairs_members(row)) continue;
    const BenchOp op = row.op;
    Spec spec;
    spec.op = op;
    spec.iters = 3;
    spec.warmup = 1;
    spec.check = true;
    Harness h(*group, *world, spec, true, 1 << 20);
    const Sample s = h.run(1 << 20);
    EXPECT_EQ(s.wrong[0], 0) << bench_op_name(op);
    EXPECT_GT(s.time_s[0], 0) << bench_op_name(op);
  }
}
