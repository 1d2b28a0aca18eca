#pragma once
// The MPI backend: non-blocking MPI calls on a private duplicate of the given communicator (so its
// tags never meet other traffic), errors returned as pipebench::Error instead of aborting.
#include <mpi.h>

#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "topology/mpi_grid.hpp"

namespace pipebench::comm {

class MpiCommunicator final : public Communicator {
 public:
  // Collective over `comm`; `comm` may be freed afterwards.
  MpiCommunicator(MPI_Comm comm, std::string name, const WaitPolicy& policy = {});

  const char* backend() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(world_ranks_.size()); }
  int world_rank() const override { return world_rank_; }
  int world_rank_of(int peer) const override;

  Request isend(const void* buf, std::size_t bytes, int peer, int tag) override;
  Request irecv(void* buf, std::size_t bytes, int peer, int tag) override;
  Request iallreduce_sum(void* buf, std::size_t count, DType type) override;
  Request iallgather(const void* send, void* recv, std::size_t bytes_per_rank) override;
  Request ireduce_scatter_sum(const void* send, void* recv, std::size_t count_per_rank, DType type) override;
  Request ibarrier() override;
  bool supports(DType type, ReduceOp op) const override;
  Request iallreduce(const void* send, void* recv, std::size_t count, DType type, ReduceOp op) override;
  Request ireduce_scatter(const void* send, void* recv, std::size_t count_per_rank, DType type, ReduceOp op) override;
  Request ibroadcast(const void* send, void* recv, std::size_t count, DType type, int root) override;
  Request ireduce(const void* send, void* recv, std::size_t count, DType type, ReduceOp op, int root) override;
  Request ialltoall(const void* send, void* recv, std::size_t count_per_rank, DType type) override;
  Request ialltoallv(const void* send, const std::vector<std::size_t>& send_bytes, void* recv,
                     const std::vector<std::size_t>& recv_bytes) override;

  // The benchmarks' blocking mode (pipebench comm with --poll-us 0): the collectives call MPI's
  // blocking functions (MPI_Allreduce, ...) and return a completed Request, so that their times are
  // those of the library's own blocking algorithms, as OSU's tests time them (MPICH's non-blocking
  // schedules are slower for small messages). No timeout covers such a call: the caller guards it
  // (a watchdog). Off by default; point-to-point stays non-blocking.
  void set_blocking_collectives(bool on) { blocking_ = on; }
  // The same for isend/irecv (MPI_Send, MPI_Recv): only for strictly alternating traffic such as a
  // ping-pong, where a blocking send cannot wait for a receive this rank has yet to post.
  void set_blocking_point_to_point(bool on) { blocking_p2p_ = on; }

  Buffer allocate(std::size_t bytes) override;
  void copy_to_buffer(void* dst, const void* host_src, std::size_t bytes) override;
  void copy_from_buffer(void* host_dst, const void* src, std::size_t bytes) override;

 private:
  void check_peer(int peer, int tag, const char* op) const;
  int checked_count(std::size_t n, const char* what) const;

  topology::MpiComm comm_;
  int rank_ = 0;
  int world_rank_ = 0;
  int tag_ub_ = 32767;
  std::vector<int> world_ranks_;
  bool blocking_ = false;
  bool blocking_p2p_ = false;
};

}  // namespace pipebench::comm
