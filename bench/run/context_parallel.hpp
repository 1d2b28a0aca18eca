#pragma once
// Context parallelism's exchanges (kernels::CpOps) over a cp communicator: the ring's sends to the next
// rank and receives from the previous one, posted together and waited for later (the kernels compute
// in between), and the all-gather and reduce-scatter of the keys, values and their gradients. Every
// wait polls with the communicator's wait policy (a short sleep between polls, never a spin).
#include <cstdint>
#include <memory>

#include "comm/communicator.hpp"
#include "kernels/workload.hpp"

namespace pipebench::bench {

// Bytes this rank sent through the ops, by exchange (the traffic check of docs/formulas.md).
struct CpTraffic {
  std::uint64_t ring = 0, all_gather = 0, reduce_scatter = 0;
};

// `cp` must outlive the ops. `traffic`, if not null, is added to as the ops send.
kernels::CpOps make_cp_ops(comm::Communicator& cp, std::shared_ptr<CpTraffic> traffic = nullptr);

}  // namespace pipebench::bench
