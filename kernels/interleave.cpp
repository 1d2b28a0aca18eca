#include "kernels/interleave.hpp"

#include <ucontext.h>

#include <cstdint>
#include <utility>

#include "analysis/error.hpp"

namespace pipebench::kernels {

namespace {
// A pass's stack: the kernels' calls (Kokkos, the host BLAS, MPI) are shallow, but a thread's default
// (8 MiB on Linux) leaves no doubt; only the pages a pass touches are ever committed (new char[], not
// zeroed).
constexpr std::size_t kStackBytes = std::size_t{8} << 20;
}  // namespace

struct Interleaver::Context {
  ucontext_t main{}, pass[2]{};
  std::unique_ptr<char[]> stack[2];
  bool started[2] = {false, false};
};

Interleaver::Interleaver() : ctx_(std::make_unique<Context>()) {}
Interleaver::~Interleaver() = default;

void Interleaver::run(const std::function<void()>& first, const std::function<void()>& second) {
  if (running()) throw Error("interleaver: run() inside a pass of run()");
  pass_[0] = &first, pass_[1] = &second;
  done_[0] = done_[1] = false;
  ctx_->started[0] = ctx_->started[1] = false;
  error_ = nullptr;
  current_ = -1;
  switch_to(0);  // back here once both passes ended, or one threw
  current_ = -1;
  pass_[0] = pass_[1] = nullptr;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

void Interleaver::yield() {
  if (current_ < 0 || done_[1 - current_]) return;
  switch_to(1 - current_);
}

// makecontext passes int arguments only: `this` in two halves.
void Interleaver::entry(unsigned hi, unsigned lo) {
  auto* self = reinterpret_cast<Interleaver*>(static_cast<std::uintptr_t>(hi) << 32 | static_cast<std::uintptr_t>(lo));
  const int me = self->current_;
  try {
    (*self->pass_[me])();
  } catch (...) {
    self->error_ = std::current_exception();
  }
  self->done_[me] = true;
  if (self->error_ || self->done_[1 - me]) setcontext(&self->ctx_->main);  // to run(), never back here
  self->switch_to(1 - me);  // the other pass resumes; this context is never resumed
}

void Interleaver::switch_to(int next) {
  Context& c = *ctx_;
  ucontext_t* from = current_ < 0 ? &c.main : &c.pass[current_];
  if (current_ >= 0) ++switches_;
  current_ = next;
  if (!c.started[next]) {
    c.started[next] = true;
    if (!c.stack[next]) c.stack[next].reset(new char[kStackBytes]);
    if (getcontext(&c.pass[next]) != 0) throw Error("interleaver: getcontext failed");
    c.pass[next].uc_stack.ss_sp = c.stack[next].get();
    c.pass[next].uc_stack.ss_size = kStackBytes;
    c.pass[next].uc_link = &c.main;
    const auto p = reinterpret_cast<std::uintptr_t>(this);
    makecontext(&c.pass[next], reinterpret_cast<void (*)()>(&Interleaver::entry), 2,
                static_cast<unsigned>(p >> 32), static_cast<unsigned>(p & 0xffffffffu));
  }
  if (swapcontext(from, &c.pass[next]) != 0) throw Error("interleaver: swapcontext failed");
}

}  // namespace pipebench::kernels
