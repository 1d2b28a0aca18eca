#include "bench/run/context_parallel.hpp"

#include <vector>

#include "comm/tags.hpp"

namespace pipebench::bench {

kernels::CpOps make_cp_ops(comm::Communicator& cp, std::shared_ptr<CpTraffic> traffic) {
  if (!traffic) traffic = std::make_shared<CpTraffic>();
  kernels::CpOps ops;
  const int n = cp.size(), me = cp.rank();
  ops.ring = [&cp, traffic, n, me](const void* send, void* recv, std::size_t bytes, int stream) {
    const int tag = stream == 0 ? comm::tags::kCpRingKv : comm::tags::kCpRingGrad;
    auto reqs = std::make_shared<std::vector<comm::Request>>();
    reqs->push_back(cp.irecv(recv, bytes, (me + n - 1) % n, tag));
    reqs->push_back(cp.isend(send, bytes, (me + 1) % n, tag));
    traffic->ring += bytes;
    return [&cp, reqs] { cp.wait_all(*reqs); };
  };
  ops.all_gather = [&cp, traffic, n](const void* send, void* recv, std::size_t bytes) {
    comm::Request r = cp.iallgather(send, recv, bytes);
    traffic->all_gather += bytes * static_cast<std::uint64_t>(n - 1);  // to each other rank
    cp.wait(r);
  };
  ops.reduce_scatter = [&cp, traffic, n](const void* send, void* recv, std::size_t count, int element_bytes) {
    comm::Request r = cp.ireduce_scatter_sum(send, recv, count, element_bytes == 8 ? comm::DType::f64 : comm::DType::f32);
    traffic->reduce_scatter += count * static_cast<std::uint64_t>(element_bytes) * static_cast<std::uint64_t>(n - 1);
    cp.wait(r);
  };
  return ops;
}

}  // namespace pipebench::bench
