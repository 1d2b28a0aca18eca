#pragma once
// Runs one rank's share of a schedule for real: posts its receives early, computes each action with the
// workload, sends outputs without blocking, then does the data-parallel gradient sync and the optimizer
// step. Every action and every communication is recorded with this rank's clock (MPI_Wtime); the
// caller aligns clocks and turns records into metrics (bench/run/measure.hpp).
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "analysis/schedule.hpp"
#include "bench/results/records.hpp"
#include "comm/communicator.hpp"
#include "comm/roll.hpp"
#include "kernels/workload.hpp"

namespace pipebench::bench {
class Links;
}

namespace pipebench::bench {

struct ExecutorConfig {
  // Receives are posted ahead as far as this much buffer memory allows (all of them in most runs).
  std::size_t recv_ahead_bytes = std::size_t{1} << 30;
  // 0: each chunk's gradients are all-reduced after the flush. k > 0: in k buckets per chunk, each
  // launched as soon as the chunk's last backward action ends (overlapped with the remaining backwards).
  int dp_buckets = 0;
  // The ZeRO stage (kernels/workload.hpp, zero_shards). 1: the buckets are reduce-scattered instead of
  // all-reduced, each rank steps the optimizer on its shards only, and the weights are all-gathered
  // after. 2: as 1, and once reduced the rank keeps its shards of the gradients only (the whole buffer
  // is freed until the next backward: Workload::shard). 3 (FSDP): as 2, and between uses the rank keeps
  // its shards of the weights only: the whole buffer is allocated and gathered before the actions
  // analysis::gather_plan names and freed after (bench/run/executor_zero.cpp). Needs d > 1 and a
  // workload with weight_data().
  int zero = 0;
  bool reshard_after_forward = true;  // ZeRO-3: analysis/zero.hpp
  bool prefetch = true;  // ZeRO-3: the next action's gathers are posted before this action computes
  // Test-only: the k-th weight all-gather / gradient reduce-scatter (ZeRO >= 1) of each step is not made
  // (the weights outside the shard stay dropped or stale; the shard keeps this rank's own gradients); -1: none.
  int test_drop_gather = -1, test_drop_reduce_scatter = -1;
  // Test-only, the same for the routed experts' buckets over expert_dp: the k-th stage gather of a step
  // without its expert buckets, the k-th expert bucket's reduce-scatter.
  int test_drop_expert_gather = -1, test_drop_expert_reduce_scatter = -1;
  // How often the workload lets pending communication progress while it computes (0: never).
  double progress_interval = 250e-6;
  // Where the step's start is announced, so that a rank that does not come is named with its host (null:
  // the executor keeps its own), and what the messages call the run: "configuration 3".
  comm::Roll* roll = nullptr;
  std::string where;
  // Where set, pipeline messages go over these per-direction links instead of `pp`, matched by order:
  // every receive of a step is posted at its start, in the order the sender sends (bench/run/links.hpp),
  // with tag 0 on the wire (recv_ahead_bytes does not apply). Needed by NCCL; null for MPI.
  const Links* links = nullptr;
  // The expert-parallel group of the synthetic stage's expert traffic (bench/run/executor_ep.cpp); null
  // without it.
  comm::Communicator* ep = nullptr;
  // The expert-data-parallel group (cp d / ep ranks holding the same experts), over which the routed
  // experts' gradients (Workload::expert_grads) are all-reduced, or under ZeRO reduce-scattered and
  // their weights sharded and gathered; null: not reduced, not sharded (ep = cp d). With ep = 1 it is
  // the data-parallel group itself.
  comm::Communicator* expert_dp = nullptr;
  // Test-only: the expert gradients' all-reduce leaves out the second half of the range.
  bool test_half_expert_reduce = false;
  // Test-only (PIPEBENCH_TEST_FAULT ...:step, bench/run/configuration.hpp): stop this process (SIGSTOP)
  // after the first action of the first timed step.
  bool test_stop = false;
  // Test-only (PIPEBENCH_TEST_FAULT ...:term): raise SIGTERM at the same point instead.
  bool test_term = false;
};

// The largest tag the executor uses for a schedule: 2 * m * stages - 1 (comm/tags.hpp).
long long largest_tag(const analysis::Schedule& s);

struct StepTiming {
  double begin = 0;         // local clock right after the step's barrier
  double pipeline_end = 0;  // end of this rank's last pipeline action
  double end = 0;           // after the DP sync and the optimizer step
  double compute = 0;       // sum of action durations
  double waited = 0;        // time blocked waiting for inputs
  double gather_waited = 0; // ZeRO-3: time blocked waiting for weight gathers before actions (exposed)
  double gathered_peak = 0; // ZeRO-3: the most gathered weight bytes held at once (staging included)
  int actions = 0;
};

class Executor {
 public:
  // `pp` ranks are pipeline ranks (pp rank i holds the stages with stage_rank == i). `tp` and `dp` may be
  // null when their size is 1. The workload is not owned.
  Executor(const analysis::Schedule& schedule, comm::Communicator& pp, comm::Communicator* tp, comm::Communicator* dp,
           comm::Communicator& world, kernels::Workload& workload, ExecutorConfig cfg = {});

  // One step. Records go to `actions`/`comms` when they are not null (timed steps).
  StepTiming run_step(int step, std::vector<ActionRecord>* actions, std::vector<CommRecord>* comms);

  // The tensor-parallel all-reduce the workload calls inside F and B (recorded when recording).
  void tp_allreduce(void* data, std::size_t bytes, int element_bytes);
  // Sequence parallelism's all-gather and reduce-scatter over the tensor-parallel group (recorded, with
  // the whole buffer's bytes as nccl-tests counts them: the gathered output, the scattered input).
  void tp_allgather(const void* send, void* recv, std::size_t bytes_per_rank, int element_bytes);
  void tp_reduce_scatter(const void* send, void* recv, std::size_t bytes_per_rank, int element_bytes);

  // The experts' exchanges the workload posts and waits for (kernels::EpOps): an all-to-all-v over
  // cfg.ep, tested by progress() while the workload computes, recorded with its post, the start of its
  // wait and its completion (its exposed time: the part after the wait began).
  int ep_post(const void* send, const std::vector<std::size_t>& send_bytes, void* recv,
              const std::vector<std::size_t>& recv_bytes, int stage, int mb, int exchange);
  void ep_wait(int handle);
  // Throws where an exchange posted during `action` (a schedule position) is still not waited for: a
  // workload waits for every exchange inside the action that posted it.
  void ep_check_waited(std::size_t action) const;

  int pp_rank() const { return me_; }

 private:
  struct Input;
  struct Need;
  int tag(int dest_stage, int mb, bool grad) const;
  void post_receives_up_to(std::size_t action_index);
  void post_link_receives();
  // Posts the receive of `n` on `c` from `src` with `wire_tag` (the pipeline tag, or 0 on a link).
  void post_receive(const Need& n, comm::Communicator& c, int src, int wire_tag);
  // The parts of run_step: the step's start (state, records' room, receives, barrier), one action,
  // its record, and what follows the pipeline's last action.
  void begin_step(int step, std::vector<ActionRecord>* actions, std::vector<CommRecord>* comms);
  std::pair<double, double> run_action(std::size_t i);
  ActionRecord record_of(const analysis::Action& a, double t0, double t1);
  void end_step();
  comm::Communicator& via(int src, int dst) const;  // the communicator a message from src to dst takes
  comm::Buffer take_buffer();
  // A pipeline message's record, timings left to fill (peer: its rank in the pipeline group).
  CommRecord pp_record(CommKind kind, int peer, int stage, int mb, int tag) const;
  // A collective's record over `bytes`, posted now: tensor-parallel, or data-parallel of `stage`.
  CommRecord tp_record(CommKind kind, std::size_t bytes) const;
  CommRecord dp_record(CommKind kind, std::size_t bytes, int stage) const;
  // Tied copies and DualPipe's twin stages: their data-parallel sync waits for the pipeline's flush,
  // since under ZeRO-1 their copies are summed first.
  bool waits_for_flush(int stage) const;
  const void* input(int dest_stage, int src_stage, int mb, bool grad, std::vector<comm::Buffer>& hold);
  void output(int src_stage, int dest_stage, int mb, bool grad, comm::Buffer buf);
  void poll_sends(bool wait);
  void progress();
  void start_barrier(int step);  // tests pending sends and the next pending receive: drives MPI's progress engine
  void launch_dp(int stage);
  void launch_reduce_scatters(int stage);  // ZeRO's part of launch_dp
  void finish_dp();
  // Tied embeddings: the first and the last stage's copies of the shared matrix get the sum of both
  // copies' gradients, bitwise equal (both add first + last, in that order).
  void sync_tied();
  // DualPipe (two model copies, schedule pipes == 2): each stage's gradients plus its twin's, the stage
  // at the same depth of the other copy, so that both copies take the same optimizer step.
  void sync_copies();
  void zero_update_and_gather();
  // ZeRO (bench/run/executor_zero.cpp): the stages' weights at construction (under ZeRO-3 its plan and
  // the shards kept), a stage's gathers posted and completed; ZeRO-3's gathers before action i (and the
  // prefetch of action i + 1's), the releases after it.
  void zero_setup();
  void zero3_before(std::size_t i);
  void zero3_after(std::size_t i);
  void post_gather(int stage);
  void complete_gather(int stage);
  void release_weights(int stage);
  void zero3_progress();
  // The group a shard's bucket is reduce-scattered and gathered over: dp, or the routed experts'
  // expert_dp; null where that group is one rank (the bucket is the rank's own, whole).
  comm::Communicator* zero_group(const kernels::ZeroShard& z) const;
  void ep_progress();
  void note(CommRecord r);

  const analysis::Schedule& s_;
  comm::Communicator& pp_;
  comm::Communicator* tp_;
  comm::Communicator* dp_;
  comm::Communicator& world_;
  kernels::Workload& w_;
  ExecutorConfig cfg_;
  int me_;
  std::size_t msg_bytes_;

  // Per action of this rank, the receives it needs (in action order) and, per stage, the index of the
  // action after which its weight gradients are final (for overlapped DP buckets).
  struct Need {
    std::size_t action;
    int tag;
    int peer;
    int stage;
    int mb;
  };
  std::vector<Need> needs_;
  std::vector<Need> link_order_;  // with links: the same receives, in the order their senders send them
  std::vector<int> last_backward_;  // per action index: stage whose gradients become final, or -1
  std::vector<int> tied_stages_;    // stages of this rank holding a tied copy (their DP waits for the flush)

  // Step state.
  int step_ = 0;
  std::vector<CommRecord>* comms_ = nullptr;
  std::size_t next_need_ = 0;
  std::size_t first_pending_need_ = 0;
  std::size_t posted_ahead_ = 0;
  struct PendingRecv {
    comm::Request req;
    comm::Buffer buf;
    double posted = 0;
    comm::Communicator* via = nullptr;
    int peer = -1;
    int stage = -1, mb = -1;
    bool active = false;
  };
  std::vector<PendingRecv> recvs_;       // indexed by tag
  std::vector<comm::Buffer> local_;      // same-rank hand-offs, indexed by tag
  struct PendingSend {
    comm::Request req;
    comm::Buffer buf;
    comm::Communicator* via = nullptr;
    CommRecord rec;
  };
  std::vector<PendingSend> sends_;
  struct PendingDp {
    comm::Request req;
    comm::Communicator* via = nullptr;  // null: dp_
    CommRecord rec;
    int stage = -1;
    kernels::ZeroShard shard;            // ZeRO-1: the bucket and this rank's part of it
    std::size_t at = 0;                  // ZeRO-2, 3: the part's place in the workload's gradient shards
    std::vector<unsigned char> send, recv;  // ZeRO-1: padded copies (the bucket, this rank's shard)
    bool bf16 = false;                      // the values travel as bfloat16 (send, recv hold them)
    char* decode_to = nullptr;              // an all-reduce in bfloat16: where its decode_n sums go
    std::size_t decode_n = 0;
  };
  std::vector<PendingDp> dp_pending_;
  struct PendingEp {
    comm::Request req;
    CommRecord rec;
    bool active = false;
  };
  std::vector<PendingEp> ep_pending_;  // by handle; a slot is reused once its exchange was waited for
  int reduce_scatters_ = 0;  // this step's, for test_drop_reduce_scatter
  // ZeRO: per stage its gathers in flight (one per bucket) and whether its weights are whole now;
  // ZeRO-3 (fsdp_): the rank's gather plan (analysis/zero.hpp).
  struct PendingGather {
    kernels::ZeroShard z;
    comm::Communicator* via = nullptr;  // the bucket's group (zero_group); null: the rank's own, whole
    std::size_t at = 0;  // where the shard's values are in the gather's source (compact under ZeRO-3)
    std::vector<unsigned char> send, recv;
    comm::Request req;
    CommRecord rec;
    bool dropped = false;
  };
  struct StageWeights {
    std::vector<PendingGather> pending;
    bool whole = false;
    std::size_t bytes = 0;
  };
  std::vector<std::vector<int>> gather_before_, release_after_;
  std::map<int, StageWeights> weights_;
  bool fsdp_ = false;
  int gathers_ = 0, expert_gathers_ = 0;  // this step's, for test_drop_gather and test_drop_expert_gather
  int expert_scatters_ = 0;                // this step's, for test_drop_expert_reduce_scatter
  // ZeRO: per stage the rank's shards (kernels::stage_zero_shards: the dense buckets over dp, the routed
  // experts' over expert_dp).
  std::map<int, std::vector<kernels::ZeroShard>> shards_;
  double gather_waited_ = 0, gathered_peak_ = 0;
  // Receive buffers of the copies' sums, kept across steps: a tied stage's (key: the stage) and a DualPipe
  // stage's for its twin's gradients (key: -1 - the stage).
  std::map<int, comm::Buffer> sum_recv_;
  std::unique_ptr<comm::Roll> own_roll_;
  std::vector<comm::Buffer> pool_;
  std::vector<comm::Buffer> hold_;  // the received inputs of the action being run, back to the pool after it
  double waited_ = 0;
};

}  // namespace pipebench::bench
