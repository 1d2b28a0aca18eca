#pragma once
// The stage workload behind the executor: what one rank computes for each action of a schedule. The
// executor owns communication and timing; a workload only computes, and reports what it holds.
//
// Buffers: `in`/`out` (forward) and `grad_out`/`grad_in` (backward) are p2p_bytes() long and live
// in the memory the communication backend uses; null where there is no neighbour stage (first stage's
// input, last stage's output, ...).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace pipebench::kernels {

// A tensor-parallel all-reduce (sum, in place) that a workload calls inside F and B; the executor
// provides it (and records it). element_bytes is 4 (float) or 8 (double).
using TpAllReduce = std::function<void(void* data, std::size_t bytes, int element_bytes)>;
// Sequence parallelism's collectives over the tensor-parallel group of t ranks, provided (and recorded)
// by the executor: all_gather sends bytes_per_rank and receives t blocks of it in rank order;
// reduce_scatter sends t blocks of bytes_per_rank and receives the sum of everyone's block `rank`.
using TpCollective = std::function<void(const void* send, void* recv, std::size_t bytes_per_rank, int element_bytes)>;
struct TpSequenceOps {
  TpCollective all_gather, reduce_scatter;
};

// The exchanges over the context-parallel group, on the kernels' memory; the caller provides them
// (bench/run/context_parallel.cpp over the cp communicator) and kernels/context_parallel.hpp uses them.
struct CpOps {
  // Sends bytes_per_rank, receives cp blocks of it in rank order.
  std::function<void(const void* send, void* recv, std::size_t bytes_per_rank)> all_gather;
  // Sends cp blocks of count_per_rank elements, receives the sum of every rank's block `rank`.
  std::function<void(const void* send, void* recv, std::size_t count_per_rank, int element_bytes)> reduce_scatter;
  // Posts a send of `bytes` to the next rank of the ring and a receive from the previous one, on the
  // message stream `stream` (0: keys and values, 1: their gradients); returns the wait for both.
  std::function<std::function<void()>(const void* send, void* recv, std::size_t bytes, int stream)> ring;
  // Test-only: the ring's forward leaves out the block of this step (-1: none), so that a test can see
  // a missing step caught.
  int skip_ring_step = -1;
};

// The experts' token exchange over the expert-parallel group (the synthetic stage's expert traffic,
// bench/run/executor_ep.cpp): `post` starts an all-to-all-v that sends send_bytes[j] bytes to member j
// and receives recv_bytes[i] from member i, and returns its handle; the caller (the executor) records it
// and tests it whenever the workload lets communication progress (set_progress); `wait` blocks until it
// is done. `exchange` names it in the records (kernels/synthetic.hpp, EpExchange).
struct EpOps {
  std::function<int(const void* send, const std::vector<std::size_t>& send_bytes, void* recv,
                    const std::vector<std::size_t>& recv_bytes, int stage, int mb, int exchange)>
      post;
  std::function<void(int handle)> wait;
};

struct ZeroShard;  // below

class Workload {
 public:
  virtual ~Workload() = default;
  virtual std::string name() const = 0;

  // Called every `interval` seconds or so while an action computes, so that communication in flight
  // (a rendezvous send, a posted receive) moves on as it would with a GPU's independent progress.
  // A workload calls it where it can (between sleeps, between kernels); it may ignore it.
  void set_progress(std::function<void()> fn, double interval) {
    progress_ = std::move(fn);
    progress_interval_ = interval;
  }

  // Bytes of the activation a stage sends to the next one per micro-batch (its gradient comes back with
  // the same size).
  virtual std::size_t p2p_bytes() const = 0;

  virtual void begin_step(int step) = 0;  // zero gradient accumulators, reset step figures
  virtual void forward(int stage, int mb, const void* in, void* out) = 0;
  virtual void backward_input(int stage, int mb, const void* grad_out, void* grad_in) = 0;
  virtual void backward_weight(int stage, int mb) = 0;
  // Full backward: I then W unless a workload can do better.
  virtual void backward(int stage, int mb, const void* grad_out, void* grad_in) {
    backward_input(stage, mb, grad_out, grad_in);
    backward_weight(stage, mb);
  }
  // DualPipe's overlapped pair: by default one after the other.
  virtual void forward_backward(int f_stage, int f_mb, const void* in, void* out, int b_stage, int b_mb,
                                const void* grad_out, void* grad_in) {
    forward(f_stage, f_mb, in, out);
    backward(b_stage, b_mb, grad_out, grad_in);
  }

  // Weight gradients of one stage, for the data-parallel all-reduce (in place), with the size of one
  // element (4: float, 8: double) so the reduction sums the right type.
  virtual std::size_t grad_bytes(int stage) const = 0;
  virtual void* grad_data(int stage) = 0;
  virtual int element_bytes() const { return 4; }
  // Bytes of a weight as the workload keeps it (weight_data, weight_shard): element_bytes, or 2 where
  // 16-bit weights are kept (kernels/half_weights.hpp), which ZeRO's all-gathers then move.
  virtual int weight_element_bytes() const { return element_bytes(); }
  // True where the data-parallel reduction runs in bfloat16 (--grad-reduce-dtype bf16 over fp32 gradients):
  // the executor sends 2 bytes a value and sums with a bfloat16 rounding after each partial sum.
  virtual bool reduces_grads_in_bf16() const { return false; }
  // False where the gradients are bytes to move, not values (the synthetic workload): the executor
  // still sends them where a step would, but sums nothing (they may be device memory).
  virtual bool grads_hold_values() const { return true; }
  // Copies of one weight summed (DualPipe's twin stages, tied embeddings), in the workload's memory:
  // elements [offset, offset + n) of the stage's gradients become their sum with `other` (n elements in
  // the same memory space: a communicator's buffer or another stage's gradients), or `other` itself
  // with `replace`. Addition commutes, so both copies of a sum end bitwise equal.
  virtual void accumulate_grads(int /*stage*/, std::size_t /*offset*/, const void* /*other*/, std::size_t /*n*/,
                                bool /*replace*/ = false) {}
  virtual void optimizer_step() = 0;
  // Called once per step for each of the rank's stages, after its last backward and before its
  // gradients are read, reduced over the data-parallel group or stepped: work that completes the
  // gradients inside the tensor-parallel group (sequence parallelism's LayerNorm sums).
  virtual void finish_grads(int /*stage*/) {}
  // Sharded data parallelism (ZeRO-1): the stage's flat weights (same layout as the gradients, values of
  // weight_element_bytes), and the
  // optimizer step on elements [lo, hi) only, from the gradients there, with optimizer state for those
  // elements only. A workload without them cannot be sharded (null weights).
  virtual void* weight_data(int) { return nullptr; }
  virtual void optimizer_step_range(int, std::size_t, std::size_t) {}
  // Real ZeRO memory (kernels/zero_state.hpp): from this call on the workload keeps the compact copy of
  // this rank's `shards` (stage_zero_shards of the stage's elements, in order) of the fp32
  // main weights (16-bit storage, zero >= 1), of the gradients (zero >= 2: the executor writes each
  // reduce-scatter's sums there, then calls release_grads, which frees the whole buffer until the next
  // backward that accumulates into it) and of the weights (zero >= 3: the optimizer steps them there;
  // the whole buffer exists from acquire_weights, uninitialised, to release_weights, and weight_data is
  // null without it). grad_shard / weight_shard: the compact copies (null where not sharded).
  virtual void shard(int /*stage*/, int /*zero*/, const std::vector<ZeroShard>& /*shards*/) {}
  virtual void* grad_shard(int) { return nullptr; }
  virtual void* weight_shard(int) { return nullptr; }
  virtual void release_grads(int) {}
  virtual void acquire_weights(int) {}
  virtual void release_weights(int) {}
  // The stage's gradients and weights as this rank holds them now, in the whole buffer's layout
  // (grad_bytes each): the whole buffer where it is allocated, else the shards, NaN elsewhere.
  virtual void copy_state(int /*stage*/, void* /*grads*/, void* /*weights*/) const {}
  // Loss scaling (fp16): whether this rank saw an overflow in the step, and every rank's verdict, given
  // once a step after the gradients' sync (skipped: the optimizer did not run).
  virtual bool loss_scaled() const { return false; }
  virtual bool overflowed() const { return false; }
  virtual void loss_scale_verdict(bool /*skipped*/) {}
  // Tied embeddings: where the stage's copy of the shared matrix lies in its flat gradients (offset and
  // count, in elements); false where the stage holds none.
  virtual bool tied_copy(int, std::size_t&, std::size_t&) const { return false; }
  // Expert parallelism: the elements [offset, offset + count) of the stage's flat gradients that are
  // routed experts' (reduced over the expert-data-parallel group, the rest over the data-parallel one,
  // as Megatron-Core does); false where the stage holds none.
  virtual bool expert_grads(int, std::size_t&, std::size_t&) const { return false; }

  virtual std::int64_t held_activation_bytes() const = 0;  // activation memory held right now
  // The most activation memory held since the previous call (an overlapped pair holds its new
  // forward's and its backward's activations at once, which no before/after snapshot shows).
  virtual std::int64_t take_peak_activation_bytes() = 0;
  virtual double last_flops() const { return 0; }          // FLOPs of the last compute call (0: not counted)
  // Figures of the finished step for the summary, each for a stage (-1: the whole rank). May be empty.
  enum class FigureKind : std::int32_t {
    loss_sum,     // sum of the losses of the micro-batches this stage ended (the last stage)
    loss_count,   // how many
    grad_norm,    // L2 norm of the stage's weight gradients after the step's sync
    model_flops,  // FLOPs the model needs for the step, without recomputation (stage -1)
    optimizer_state_bytes,  // bytes of optimizer state this rank holds (stage -1)
    loss_scale,             // fp16: the loss scale after the step (stage -1)
    skipped_steps,          // fp16: steps skipped for an overflow so far (stage -1)
    main_weight_bytes,      // 16-bit runs: bytes of fp32 main weights this rank holds (stage -1)
    weight_bytes,           // bytes of weights allocated now, whole buffers and shards (stage -1)
    gradient_bytes,         // bytes of gradients allocated now, whole buffers and shards (stage -1)
    moe_aux_loss_sum,       // the sum over the step's micro-batches of this stage's MoE aux losses
    moe_dropped_tokens,     // routes this stage's MoE layers dropped by capacity in the step
    decoded_weight_bytes,   // 16-bit runs: the most fp32 bytes of decoded weights held at once in the step (stage -1)
  };
  struct Figure {
    std::int32_t stage = -1;
    FigureKind kind = FigureKind::loss_sum;
    double value = 0;
  };
  virtual std::vector<Figure> step_figures() const { return {}; }

 protected:
  std::function<void()> progress_;
  double progress_interval_ = 0;
};

// ZeRO-1 shards (Rajbhandari et al. 2020, stage 1; Megatron-LM's distributed optimizer): a stage's
// `count` gradients are cut into `buckets` contiguous buckets (as the all-reduce buckets are), each
// bucket of n elements into d contiguous shards of ceil(n/d) elements (the last ones shorter or empty),
// and data-parallel rank r owns shard r of every bucket. Returns rank r's [lo, hi) ranges, one per bucket,
// and with `bucket` the bucket each belongs to.
struct ZeroShard {
  std::size_t bucket_lo = 0, bucket_hi = 0;  // the bucket
  std::size_t lo = 0, hi = 0;                // rank r's shard of it (lo == hi: empty)
  std::size_t shard = 0;                     // ceil(n/d): every rank's share of the padded bucket
  bool expert = false;                       // a routed experts' bucket (stage_zero_shards)
};
inline std::vector<ZeroShard> zero_shards(std::size_t count, int buckets, int d, int r) {
  std::vector<ZeroShard> out;
  const std::size_t k = static_cast<std::size_t>(std::max(buckets, 1)), dd = static_cast<std::size_t>(std::max(d, 1));
  for (std::size_t b = 0; b < k; ++b) {
    ZeroShard z;
    z.bucket_lo = count * b / k;
    z.bucket_hi = count * (b + 1) / k;
    if (z.bucket_hi == z.bucket_lo) continue;
    z.shard = (z.bucket_hi - z.bucket_lo + dd - 1) / dd;
    z.lo = std::min(z.bucket_hi, z.bucket_lo + z.shard * static_cast<std::size_t>(r));
    z.hi = std::min(z.bucket_hi, z.lo + z.shard);
    out.push_back(z);
  }
  return out;
}

// The data-parallel groups a stage's ZeRO shards are cut over: its dense parameters over the d ranks of
// the data-parallel group (cp d in a run: Megatron-Core's dp-cp), rank r; its routed experts over the
// edp ranks that hold the same experts (the expert-data-parallel group, cp d / ep in a run), rank er.
struct ZeroGroups {
  int d = 1, r = 0, edp = 1, er = 0;
};

// A stage's shards with expert parallelism, as Megatron-Core's distributed optimizer keeps them (its
// DistributedDataParallel holds the experts' parameters in buffers of their own, reduced and sharded
// over the expert-data-parallel group): the dense elements [0, expert_first) cut as zero_shards over
// g.d ranks, then the routed experts' [expert_first, count) (the flat buffer's tail,
// kernels/parameters.cpp) in `buckets` buckets of their own over g.edp ranks, at their place in the
// whole buffer and marked `expert`. With edp = 1 each expert bucket is whole on the rank: not sharded.
inline std::vector<ZeroShard> stage_zero_shards(std::size_t count, std::size_t expert_first, int buckets,
                                                const ZeroGroups& g) {
  std::vector<ZeroShard> out = zero_shards(std::min(expert_first, count), buckets, g.d, g.r);
  if (expert_first >= count) return out;
  for (ZeroShard z : zero_shards(count - expert_first, buckets, g.edp, g.er)) {
    for (std::size_t* x : {&z.bucket_lo, &z.bucket_hi, &z.lo, &z.hi}) *x += expert_first;
    z.expert = true;
    out.push_back(z);
  }
  return out;
}

}  // namespace pipebench::kernels
