// The expert exchanges of the synthetic stage (kernels/synthetic.hpp, docs/run.md "Expert traffic"):
// all-to-all-v over the expert-parallel group, posted by the workload, progressed by the executor's
// progress() between the pieces of the workload's compute, and recorded with their exposed time.
#include <mpi.h>

#include "analysis/error.hpp"
#include "bench/run/executor.hpp"

namespace pipebench::bench {

int Executor::ep_post(const void* send, const std::vector<std::size_t>& send_bytes, void* recv,
                      const std::vector<std::size_t>& recv_bytes, int stage, int mb, int exchange) {
  if (!cfg_.ep) throw Error("executor: an expert exchange was posted, but there is no expert-parallel group");
  std::size_t slot = 0;
  while (slot < ep_pending_.size() && ep_pending_[slot].active) ++slot;
  if (slot == ep_pending_.size()) ep_pending_.emplace_back();
  PendingEp& p = ep_pending_[slot];
  p.rec = CommRecord{};
  p.rec.step = step_;
  p.rec.global_rank = world_.world_rank();
  p.rec.kind = CommKind::AllToAll;
  p.rec.group = CommGroup::ep;
  // The expert side's bytes, as DeepEP counts them: received in a dispatch-shaped exchange (even
  // numbers: the forward's dispatch, the backward's combine), sent in a combine-shaped one.
  std::size_t bytes = 0;
  for (std::size_t b : exchange % 2 == 0 ? recv_bytes : send_bytes) bytes += b;
  p.rec.bytes = static_cast<std::int64_t>(bytes);
  p.rec.stage = stage;
  p.rec.mb = mb;
  p.rec.tag = exchange;
  p.rec.t_posted = MPI_Wtime();
  p.req = cfg_.ep->ialltoallv(send, send_bytes, recv, recv_bytes);
  p.active = true;
  return static_cast<int>(slot);
}

void Executor::ep_progress() {
  for (PendingEp& p : ep_pending_)
    if (p.active && !p.req.done() && cfg_.ep->test(p.req)) p.rec.t_done = MPI_Wtime();
}

void Executor::ep_wait(int handle) {
  if (handle < 0 || static_cast<std::size_t>(handle) >= ep_pending_.size() || !ep_pending_[handle].active)
    throw Error("executor: expert exchange " + std::to_string(handle) + " is not in flight");
  PendingEp& p = ep_pending_[static_cast<std::size_t>(handle)];
  p.rec.t_wait = MPI_Wtime();
  if (!p.req.done()) {
    cfg_.ep->wait(p.req);
    p.rec.t_done = MPI_Wtime();
  }
  note(p.rec);
  p.active = false;
}

void Executor::ep_check_waited(std::size_t action) const {
  for (const PendingEp& p : ep_pending_)
    if (p.active)
      throw Error("executor: expert exchange " + std::to_string(p.rec.tag) + " of stage " + std::to_string(p.rec.stage) +
                  ", micro-batch " + std::to_string(p.rec.mb) + " was posted in action " + std::to_string(action) +
                  " of step " + std::to_string(step_) + " but never waited for");
}

}  // namespace pipebench::bench
