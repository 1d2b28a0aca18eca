#pragma once
// The synthetic stage: configurable F, B, W durations executed as sleeps or as busy waiting, activation
// memory really held and written at F and released at the last backward part (kept for reuse, as a
// caching allocator does), boundary messages of a chosen size, optional tensor-parallel all-reduces
// inside F and B, and a gradient buffer for the data-parallel all-reduce.
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "kernels/workload.hpp"

namespace pipebench::kernels {

struct SyntheticConfig {
  // Times for one rank's whole share of layers, seconds (docs/design.md "Vocabulary"): a chunk of a rank holding v
  // chunks takes 1/v of them, times its stage's multiplier.
  double tf = 2e-3, tb = 4e-3, tw = 2e-3;
  double t_overlap = -1;  // overlapped F&B pair for the whole share; < 0: tf + tb
  int v = 1;
  std::vector<double> stage_mult;  // per stage of a model copy (depth); empty: all 1
  int stages_per_pipe = 1;
  bool spin = false;  // busy-wait instead of sleeping
  std::size_t activation_bytes = 0;  // per micro-batch for the whole share (a chunk holds 1/v)
  std::size_t p2p_bytes = 0;    // per micro-batch message between stages
  // Every buffer handed to a communicator is device memory (NCCL): the boundary messages, the
  // tensor-parallel all-reduce buffer and the gradients. No header is written or checked in the messages
  // then (the MPI backend's host messages carry one naming stage, micro-batch and step, checked on arrival).
  bool device_buffers = false;
  std::size_t tp_allreduce_bytes = 0;  // per all-reduce; two in F and two in I (Megatron's pattern)
  std::size_t grad_bytes = 0;          // weight gradients for the whole share (a chunk holds 1/v)
  // Expert traffic (docs/run.md "Expert traffic"): one MoE layer per chunk, whose F dispatches
  // ep_alltoall_bytes of this rank's tokens over the ep members and combines them back, and whose B
  // (or I) exchanges their gradients the same way, four all-to-all-v over the expert-parallel group of
  // `ep` members (this rank is member ep_rank). Member 0 holds the busiest experts: it receives
  // routing_imbalance times the mean (comm::bench::uneven_blocks, the blocks of `comm alltoallv`).
  // ep_overlap: an overlapped F&B pair posts each exchange and computes a piece of the other
  // micro-batch before it waits (DualPipe); off, every exchange is waited for as soon as it is posted.
  int ep = 1, ep_rank = 0;
  std::size_t ep_alltoall_bytes = 0;  // sent per rank per dispatch; 0: no expert traffic
  double routing_imbalance = 1;
  bool ep_overlap = true;
};

// The four exchanges of a chunk's MoE layer, as the records name them (CommRecord::tag): the forward's
// dispatch and combine, the backward's exchange of the combine's gradients (shaped as a dispatch) and of
// the dispatch's gradients (shaped as a combine).
enum class EpExchange : int { f_dispatch = 0, f_combine = 1, b_combine = 2, b_dispatch = 3 };

// Bytes of one exchange (docs/run.md "Expert traffic"): what `member` of `ep` sends to each member
// (send) and receives from each (recv) when every rank dispatches `bytes` and member 0 receives
// `imbalance` times the mean.
struct EpCounts {
  std::vector<std::size_t> send, recv;
};
EpCounts ep_counts(EpExchange e, std::size_t bytes, int ep, int member, double imbalance);
// Bytes of each of the two exchange buffers (send, receive) that `member` holds: the larger side of a
// dispatch (the busiest member, 0, receives imbalance times what it sends). The workload allocates two
// of them; the run's memory check counts the same two (bench/run/plan.cpp).
std::size_t ep_buffer_bytes(std::size_t bytes, int ep, int member, double imbalance);

class SyntheticWorkload final : public Workload {
 public:
  // `tp_allreduce(data, bytes)` runs one tensor-parallel all-reduce; may be empty when t = 1.
  // `ep_ops` runs the expert exchanges (needed when cfg.ep_alltoall_bytes > 0).
  SyntheticWorkload(SyntheticConfig cfg, TpAllReduce tp_allreduce, EpOps ep_ops = {});
  ~SyntheticWorkload() override;

  std::string name() const override { return "synthetic"; }
  std::size_t p2p_bytes() const override { return cfg_.p2p_bytes; }
  void begin_step(int step) override;
  void forward(int stage, int mb, const void* in, void* out) override;
  void backward_input(int stage, int mb, const void* grad_out, void* grad_in) override;
  void backward_weight(int stage, int mb) override;
  void backward(int stage, int mb, const void* grad_out, void* grad_in) override;
  void forward_backward(int f_stage, int f_mb, const void* in, void* out, int b_stage, int b_mb,
                        const void* grad_out, void* grad_in) override;
  std::size_t grad_bytes(int stage) const override;
  void* grad_data(int stage) override;
  bool grads_hold_values() const override { return false; }
  void optimizer_step() override {}
  std::int64_t held_activation_bytes() const override { return held_; }
  std::int64_t take_peak_activation_bytes() override {
    const std::int64_t p = peak_;
    peak_ = held_;
    return p;
  }

  // Duration of one chunk's action on `stage` (seconds): what the simulator is fed for a prediction.
  double chunk_time(char kind, int stage) const;

 private:
  // Sleeps or spins until `deadline` (CLOCK_MONOTONIC seconds). Each action's compute time is fixed
  // when it starts, so what it does besides waiting (touching its activation memory) is included in it.
  void work_until(double deadline);
  // `seconds` of compute from now, split around `allreduces` TP all-reduces (whose time comes on top).
  void work_with_tp(double seconds, std::size_t allreduces, double already_spent);
  // Expert traffic: an action's compute in pieces, each after its exchange (if any) is posted: computed
  // before the exchange is waited for (overlap) or after. Every piece with compute has one TP all-reduce.
  struct Piece {
    int exchange;  // an EpExchange, or -1: none
    int stage, mb;
    double seconds;
  };
  void pieces(const std::vector<Piece>& list, bool overlap, double start);
  // A backward's (B or I) compute, with its two exchanges where there is expert traffic.
  void backward_pieces(double seconds, int stage, int mb, double start);
  bool expert_traffic() const { return cfg_.ep_alltoall_bytes > 0; }
  void hold(int stage, int mb);
  void release(int stage, int mb);
  void check_header(const void* in, int stage, int mb, const char* what) const;
  void write_header(void* out, int stage, int mb) const;
  // `bytes` of zeroes for a communicator: device memory with device_buffers, else host memory.
  std::shared_ptr<char> comm_buffer(std::size_t bytes, const char* label) const;

  SyntheticConfig cfg_;
  TpAllReduce tp_allreduce_;
  EpOps ep_ops_;
  std::shared_ptr<char> ep_send_, ep_recv_;  // one exchange's buffers (one is in flight at a time)
  std::shared_ptr<char> tp_buffer_;  // tp_allreduce_bytes, when there are TP all-reduces
  // Activation memory: device memory in a device build (kernels/device.hpp), else host memory.
  std::map<std::pair<int, int>, std::shared_ptr<char>> held_buffers_;
  std::vector<std::shared_ptr<char>> spare_;  // released activation buffers, reused by hold()
  bool device_memory_ = false;  // the buffers above come from device_bytes()
  std::int64_t held_ = 0;
  std::int64_t peak_ = 0;
  std::map<int, std::shared_ptr<char>> grads_;  // grad_bytes(stage) each
  int step_ = 0;
};

}  // namespace pipebench::kernels
