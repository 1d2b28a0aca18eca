#include "comm/communicator.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

namespace pipebench::comm {

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::i32: return 4;
  }
  return 1;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::f16: return "half";
    case DType::bf16: return "bfloat16";
    case DType::i32: return "int32";
  }
  return "?";
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "?";
}

const char* op_name(Op op) {
  switch (op) {
    case Op::send: return "send";
    case Op::recv: return "recv";
    case Op::allreduce: return "allreduce";
    case Op::allgather: return "allgather";
    case Op::reduce_scatter: return "reduce_scatter";
    case Op::barrier: return "barrier";
    case Op::broadcast: return "broadcast";
    case Op::reduce: return "reduce";
    case Op::alltoall: return "alltoall";
    case Op::alltoallv: return "alltoallv";
  }
  return "?";
}

bool Request::poll() {
  if (op_ && op_->poll()) op_.reset();
  return done();
}

Communicator::Communicator(std::string name, const WaitPolicy& policy) : name_(std::move(name)) {
  set_wait_policy(policy);
}

std::chrono::microseconds WaitPolicy::sleep_after(std::chrono::duration<double> waited) const {
  const auto grown = std::chrono::duration_cast<std::chrono::microseconds>(waited / 64);
  return std::clamp(grown, poll_interval, max_poll_interval);
}

std::chrono::microseconds WaitPolicy::sleep_within(std::chrono::duration<double> waited,
                                                   std::chrono::duration<double> limit) const {
  using us = std::chrono::microseconds;
  const us cap = std::min(std::chrono::duration_cast<us>(limit - waited), std::chrono::duration_cast<us>(limit / 16));
  return std::clamp(sleep_after(waited), us(0), std::max(cap, us(0)));
}

void Communicator::set_wait_policy(const WaitPolicy& p) {
  if (p.poll_interval.count() < 0)
    throw UsageError("poll interval " + std::to_string(p.poll_interval.count()) + " us: must be 0 or more");
  if (p.max_poll_interval < p.poll_interval)
    throw UsageError("largest poll interval " + std::to_string(p.max_poll_interval.count()) +
                     " us: must be at least the poll interval (" + std::to_string(p.poll_interval.count()) + " us)");
  if (!(p.timeout.count() > 0))
    throw UsageError("wait timeout " + std::to_string(p.timeout.count()) + " s: must be more than 0");
  policy_ = p;
}

std::string Communicator::describe(const RequestInfo& info) const {
  std::string s = op_name(info.op);
  if (info.peer >= 0) {
    s += info.op == Op::send ? " to rank " : " from rank ";
    s += std::to_string(info.peer) + " (global " + std::to_string(world_rank_of(info.peer)) + ")";
  } else if (info.peer == kAnySource) {
    s += " from any rank";
  }
  s += " of '" + name_ + "' (" + std::to_string(size()) + " ranks, " + backend() + ")";
  if (info.tag >= 0) s += ", tag " + std::to_string(info.tag);
  return s + ", " + std::to_string(info.bytes) + " bytes";
}

void Communicator::timed_out(const Request& first_pending, std::size_t pending, double waited_s) const {
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.3g", waited_s);
  std::string what = "rank " + std::to_string(world_rank()) + ": timed out after " + secs + " s waiting for ";
  if (pending > 1) what += std::to_string(pending) + " requests, the first still pending: ";
  what += describe(first_pending.info());
  throw TimeoutError(what, world_rank(), name_, first_pending.info(), waited_s);
}

namespace {

std::function<void()>& idle_hook() {
  static std::function<void()> hook;
  return hook;
}

void idle() {
  if (idle_hook()) idle_hook()();
}

}  // namespace

// Poll, then sleep: a waiting rank costs some microseconds of CPU per poll instead of a whole core.
void Communicator::wait(Request& r, std::chrono::duration<double> limit) {
  if (r.poll()) return;
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  std::chrono::duration<double> waited{0};
  while (true) {
    std::this_thread::sleep_for(policy_.sleep_within(waited, limit));
    if (r.poll()) return;
    idle();
    waited = clock::now() - start;
    if (waited >= limit) timed_out(r, 1, waited.count());
  }
}

void Communicator::wait_all(std::vector<Request>& rs, std::chrono::duration<double> limit) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  while (true) {
    const Request* first = nullptr;
    std::size_t pending = 0;
    for (Request& r : rs)
      if (!r.poll()) {
        if (!first) first = &r;
        ++pending;
      }
    if (pending == 0) return;
    const std::chrono::duration<double> waited = clock::now() - start;
    if (waited >= limit) timed_out(*first, pending, waited.count());
    idle();
    std::this_thread::sleep_for(policy_.sleep_within(waited, limit));
  }
}

void Communicator::set_idle_hook(std::function<void()> hook) { idle_hook() = std::move(hook); }

void Communicator::send(const void* buf, std::size_t bytes, int peer, int tag) {
  Request r = isend(buf, bytes, peer, tag);
  wait(r);
}

void Communicator::recv(void* buf, std::size_t bytes, int peer, int tag) {
  Request r = irecv(buf, bytes, peer, tag);
  wait(r);
}

void Communicator::allreduce_sum(void* buf, std::size_t count, DType type) {
  Request r = iallreduce_sum(buf, count, type);
  wait(r);
}

bool Communicator::supports(DType type, ReduceOp op) const {
  return op == ReduceOp::sum && (type == DType::f32 || type == DType::f64);
}

namespace {
[[noreturn]] void cannot(const Communicator& c, const char* what) {
  throw UsageError(std::string("communication backend '") + c.backend() + "' does not implement " + what);
}
}  // namespace

Request Communicator::iallreduce(const void*, void*, std::size_t, DType, ReduceOp) { cannot(*this, "all_reduce"); }
Request Communicator::ireduce_scatter(const void*, void*, std::size_t, DType, ReduceOp) {
  cannot(*this, "reduce_scatter");
}
Request Communicator::ibroadcast(const void*, void*, std::size_t, DType, int) { cannot(*this, "broadcast"); }
Request Communicator::ireduce(const void*, void*, std::size_t, DType, ReduceOp, int) { cannot(*this, "reduce"); }
Request Communicator::ialltoall(const void*, void*, std::size_t, DType) { cannot(*this, "alltoall"); }
Request Communicator::ialltoallv(const void*, const std::vector<std::size_t>&, void*, const std::vector<std::size_t>&) {
  cannot(*this, "alltoallv");
}

void Communicator::barrier() {
  Request r = ibarrier();
  wait(r);
}

}  // namespace pipebench::comm
