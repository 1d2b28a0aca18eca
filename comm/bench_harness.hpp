#pragma once
// The measuring loops of `pipebench comm` (docs/comm-bench.md) on the communicator layer: nccl-tests'
// collectives and sendrecv, OSU's latency, bw and bibw, and the pipeline neighbours' two-way exchange.
// One Harness per rank; run() is collective over the world communicator (every rank calls it for
// every size, also the ranks that only wait under --one-group).
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/bench_model.hpp"
#include "comm/bench_ops.hpp"
#include "comm/communicator.hpp"

namespace pipebench::comm::bench {

struct Spec {
  BenchOp op = BenchOp::all_reduce;
  GroupChoice group = GroupChoice::world;
  DType dtype = DType::f32;
  ReduceOp redop = ReduceOp::sum;
  int root = 0;
  double imbalance = 1;  // alltoallv (comm/bench_ops.hpp)
  int iters = 20;
  int warmup = 5;
  bool check = false;
  // -I: time every iteration on its own (each waited for before the next is posted, also on NCCL),
  // kept by run() for iterations().
  bool per_iter = false;
  // MPI backend: time MPI's blocking collectives (MpiCommunicator::set_blocking_collectives), as
  // OSU's tests do; the caller guards the calls, which no --timeout covers.
  bool blocking = false;
  // Counted up after every completed operation (when set): a watchdog that sees it stand still for
  // --timeout knows a blocking call hangs.
  std::atomic<std::uint64_t>* progress = nullptr;
};

// One rank's figures for one size: per variant (0 out of place, 1 in place) the time of one operation
// in seconds (< 0: not measured on this rank) and the wrong elements it saw.
struct Sample {
  double time_s[2] = {-1, -1};
  std::int64_t wrong[2] = {0, 0};
};

class Harness {
 public:
  // `group`: this rank's communicator of the chosen kind (for pp-pairs, its pipeline); `world`: every
  // rank, for the start of each size. `takes_part`: false for the ranks that wait (--one-group).
  // Allocates the buffers for `max_bytes` now (Error when memory is short), before any traffic.
  Harness(Communicator& group, Communicator& world, const Spec& spec, bool takes_part, std::uint64_t max_bytes);
  // The bytes one taking-part rank's constructor allocates for `max_bytes` in a group of `n`: the
  // buffers and the host copy they are first written from (what a memory check must count).
  static std::uint64_t buffer_bytes(const Spec& spec, std::uint64_t max_bytes, int n);

  // Collective over `world`: a barrier, then warm-up and timed iterations of each variant (with -c 1 a
  // checked run first).
  Sample run(std::uint64_t requested_bytes);

  // The world members this rank pairs with in point-to-point tests (-1: none): member m with m^1 of its
  // group.
  int partner() const;
  // Under spec.per_iter, the last run()'s time of each timed iteration of variant v, in seconds, as
  // time_s reports it (one operation; OSU: one message): empty where this rank measured nothing.
  const std::vector<double>& iterations(int v) const { return iter_s_[v]; }
  const Spec& spec() const { return spec_; }

 private:
  Request post_collective(const Shape& s, bool in_place);
  double time_collective(const Shape& s, bool in_place);  // and sendrecv's ring
  std::int64_t check_collective(const Shape& s, bool in_place);
  void exchange(std::size_t bytes, std::vector<Request>& out);  // sendrecv / pp-pairs, one round
  std::int64_t check_exchange(const Shape& s);
  double time_p2p(std::size_t bytes);
  std::int64_t check_p2p(std::size_t bytes);
  void beat() {
    if (spec_.progress) spec_.progress->fetch_add(1, std::memory_order_relaxed);
  }
  void fill(void* dev, std::uint64_t elems, const std::vector<double>& values);
  std::int64_t count_wrong(const void* dev, std::uint64_t offset, const std::vector<double>& expected);

  Communicator& group_;
  Communicator& world_;
  Spec spec_;
  const OpRow& row_;
  bool takes_part_;
  int me_, n_;
  Buffer send_, recv_, recv2_, ack_;
  std::vector<double> iter_s_[2];
};

// Every rank's Sample, on every rank (index = world rank): one all-gather over `world`.
std::vector<Sample> gather_samples(Communicator& world, const Sample& mine);
// Under -I: per variant and timed iteration, the largest time over the world's ranks that measured it
// (nccl-tests' -I takes the slowest process's time of each iteration). One all-gather over `world`;
// every rank passes its harness's iterations() (empty: measured nothing) and the same `iters`.
std::vector<std::vector<double>> gather_iterations(Communicator& world, const Harness& mine, int iters);

}  // namespace pipebench::comm::bench
