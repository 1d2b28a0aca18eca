#pragma once
// The stage workload behind the executor: what one rank computes for each action of a schedule. The
// executor owns communication and timing; a workload only computes, and reports what it holds.
//
// Buffers: `in`/`out` (forward) and `grad_out`/`grad_in` (backward) are p2p_bytes() long and live
// in the memory the communication backend uses; null where there is no neighbour stage (first stage's
// input, last stage's output, ...).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace pipebench::kernels {

// A tensor-parallel all-reduce (sum, in place) that a workload calls inside F and B; the executor
// provides it (and records it). element_bytes is 4 (float) or 8 (double).
using TpAllReduce = std::function<void(void* data, std::size_t bytes, int element_bytes)>;

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
  virtual void optimizer_step() = 0;

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

}  // namespace pipebench::kernels
