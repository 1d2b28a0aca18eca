// The NCCL backend on GPUs: a ring inside one group and an exact all-reduce on device buffers. Without
// a GPU the factory must say so clearly (asserted), and the test skips.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "comm/factory.hpp"

using namespace pipebench::comm;

TEST(NcclComm, RingAndAllReduceOnDevices) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local = 0;
  MPI_Comm_size(node, &local);
  MPI_Comm_free(&node);
  if (devices > 0 && devices < local) GTEST_SKIP() << local << " ranks share " << devices << " GPU(s) on a node";

  std::unique_ptr<Communicator> c;
  try {
    c = make_communicator("nccl", MPI_COMM_WORLD, "world");
  } catch (const pipebench::Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(devices, 0) << what;
    EXPECT_TRUE(what.find("NCCL backend: no usable CUDA device") != std::string::npos ||
                what.find("NCCL backend: another rank of 'world' has no usable GPU") != std::string::npos)
        << what;
    GTEST_SKIP() << what;
  }
  const int n = c->size(), r = c->rank(), right = (r + 1) % n, left = (r + n - 1) % n;
  const std::size_t count = 1 << 16;

  std::vector<float> host(count);
  for (std::size_t i = 0; i < count; ++i) host[i] = static_cast<float>(r * 1000 + static_cast<int>(i % 1000));
  Buffer out = c->allocate(count * sizeof(float)), in = c->allocate(count * sizeof(float));
  c->copy_to_buffer(out.data(), host.data(), count * sizeof(float));
  c->group_start();
  Request rs[] = {c->irecv(in.data(), count * sizeof(float), left, 0),
                  c->isend(out.data(), count * sizeof(float), right, 0)};
  c->group_end();
  for (Request& q : rs) c->wait(q);
  std::vector<float> got(count);
  c->copy_from_buffer(got.data(), in.data(), count * sizeof(float));
  for (std::size_t i = 0; i < count; i += 997)
    EXPECT_EQ(got[i], static_cast<float>(left * 1000 + static_cast<int>(i % 1000)));

  c->allreduce_sum(out.data(), count, DType::f32);
  c->copy_from_buffer(got.data(), out.data(), count * sizeof(float));
  for (std::size_t i = 0; i < count; i += 997)
    EXPECT_EQ(got[i], static_cast<float>(1000 * n * (n - 1) / 2 + n * static_cast<int>(i % 1000)));
  c->barrier();
}
