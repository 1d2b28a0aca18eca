#pragma once
// Two passes of a stage run alternately on one host thread, switching where one has an exchange in
// flight: DualPipe's overlapped F&B pair (DeepSeek-V3 report, section 3.2.1; Megatron-Core's
// --overlap-moe-expert-parallel-comm) on the transformer workload (docs/transformer.md "Overlap").
//
// Each pass runs on its own stack (POSIX ucontext), so a pass is the ordinary call of the stage's
// forward or backward and is resumed exactly where it stopped: nothing of the kernels is cut into
// phases, and each micro-batch's arithmetic is the same, in the same order, as without the overlap
// (only the two passes' parts take turns). A pass that posts an exchange calls exchange(): the other
// pass runs until it posts one of its own (or ends), then this one resumes and waits. The passes
// never run at once: one thread, no locks; the kernels, MPI and Kokkos see one caller.
//
// A pass that throws ends the pair: the error is rethrown by run() once control is back, and the other
// pass, if it was suspended, is abandoned with its stack (a runtime error ends the job: exit code 1).
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>

namespace pipebench::kernels {

class Interleaver {
 public:
  Interleaver();
  ~Interleaver();
  Interleaver(const Interleaver&) = delete;
  Interleaver& operator=(const Interleaver&) = delete;

  // Runs `first` until it hands over, then `second`, alternating until both have returned.
  void run(const std::function<void()>& first, const std::function<void()>& second);
  // Inside a pass of run(): hands over to the other pass if it has not ended and returns when this
  // pass is resumed; outside run(), or with the other pass ended, returns at once.
  void yield();
  // An exchange of the running pass: post() starts it and returns its handle, the other pass computes,
  // wait(handle) completes it when this pass resumes. Outside run(): post, then wait.
  template <class Post, class Wait>
  void exchange(const Post& post, const Wait& wait) {
    const auto handle = post();
    yield();
    wait(handle);
  }
  bool running() const { return current_ >= 0; }
  // Hand-overs since construction (a test sees that the passes took turns).
  long switches() const { return switches_; }

 private:
  struct Context;
  static void entry(unsigned hi, unsigned lo);
  void switch_to(int next);

  std::unique_ptr<Context> ctx_;
  const std::function<void()>* pass_[2] = {nullptr, nullptr};
  bool done_[2] = {false, false};
  int current_ = -1;  // the running pass, -1 outside run()
  long switches_ = 0;
  std::exception_ptr error_;
};

}  // namespace pipebench::kernels
