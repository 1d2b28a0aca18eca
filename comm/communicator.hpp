#pragma once
// One communicator interface for the executor and the benchmarks, with an MPI backend and an NCCL
// backend behind it (docs/design.md "Layout"). Every operation is non-blocking and returns a Request; the
// Communicator waits on requests by polling with a short sleep between polls, so that 4-8 waiting ranks
// on 2 cores do not steal the cores from the ranks that compute, and every wait ends after a timeout
// with a TimeoutError that names the rank, the operation, the peer and the tag.
//
// Ranks in calls are ranks within this communicator. Buffers are pointers and byte counts (element
// counts and a DType for reductions); the NCCL backend needs device memory: get it from allocate().
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "analysis/error.hpp"

namespace pipebench::comm {

enum class DType { f32, f64, f16, bf16, i32 };
std::size_t dtype_size(DType t);
const char* dtype_name(DType t);  // nccl-tests' names: float, double, half, bfloat16, int32

// The reductions of the general collectives (pipebench comm, -o as nccl-tests names it).
enum class ReduceOp { sum, max, min };
const char* reduce_op_name(ReduceOp op);  // "sum", "max", "min"

// How a wait polls. The sleep between two polls starts at poll_interval and, once a wait has lasted
// long, grows to 1/64 of the time already waited, up to max_poll_interval: a message that comes soon
// is seen within ~poll_interval, one that comes late costs at most ~1.6 % extra wait, and a long wait
// costs almost no CPU (docs/comm.md has the figures). max_poll_interval = poll_interval turns the
// growth off; both 0 poll without sleeping (a dedicated core).
struct WaitPolicy {
  std::chrono::microseconds poll_interval{50};
  std::chrono::microseconds max_poll_interval{1000};
  // A wait that lasts longer throws TimeoutError.
  std::chrono::duration<double> timeout{60.0};

  // The sleep before the next poll after `waited`.
  std::chrono::microseconds sleep_after(std::chrono::duration<double> waited) const;
  // The same, cut to the time left before `limit` and to 1/16 of `limit`: a poll interval of minutes
  // must neither stretch a wait of seconds nor starve a protocol of several rounds (a non-blocking
  // collective advances only while its members poll) of the polls it needs within the limit.
  std::chrono::microseconds sleep_within(std::chrono::duration<double> waited,
                                         std::chrono::duration<double> limit) const;
};

enum class Op { send, recv, allreduce, allgather, reduce_scatter, barrier, broadcast, reduce, alltoall, alltoallv };
const char* op_name(Op op);

// What a request waits for: enough to say what was waited for and from whom.
struct RequestInfo {
  Op op = Op::barrier;
  int peer = -1;  // rank within the communicator, -1 for collectives
  int tag = -1;   // -1 for collectives
  std::size_t bytes = 0;
};

// A wait that ran past WaitPolicy::timeout. The caller reports it and aborts the job (MPI_Abort).
class TimeoutError : public Error {
 public:
  TimeoutError(const std::string& what, int rank, std::string comm, RequestInfo request, double waited_s)
      : Error(what), rank_(rank), comm_(std::move(comm)), request_(request), waited_s_(waited_s) {}
  int rank() const { return rank_; }  // global rank of the waiting process
  const std::string& comm_name() const { return comm_; }
  const RequestInfo& request() const { return request_; }
  double waited_s() const { return waited_s_; }

 private:
  int rank_;
  std::string comm_;
  RequestInfo request_;
  double waited_s_;
};

namespace detail {
// A backend's in-flight operation. Destroying one that is still pending must not block.
class PendingOp {
 public:
  virtual ~PendingOp() = default;
  virtual bool poll() = 0;  // true once complete; throws Error when the backend reports a failure
};

struct FreeFn {
  void (*free)(void*) = nullptr;
  void operator()(void* p) const {
    if (free) free(p);
  }
};
}  // namespace detail

// Handle of one non-blocking operation. Move-only; a default-constructed Request is complete.
class Request {
 public:
  Request() = default;
  Request(RequestInfo info, std::unique_ptr<detail::PendingOp> op) : info_(info), op_(std::move(op)) {}
  const RequestInfo& info() const { return info_; }
  bool done() const { return op_ == nullptr; }
  // Checks once without waiting; true when complete.
  bool poll();

 private:
  RequestInfo info_;
  std::unique_ptr<detail::PendingOp> op_;
};

// Memory a backend can communicate from: host memory for MPI, device memory for NCCL. Move-only.
class Buffer {
 public:
  using Free = void (*)(void*);
  Buffer() = default;
  Buffer(void* data, std::size_t bytes, Free free) : data_(data, detail::FreeFn{free}), bytes_(bytes) {}
  void* data() const { return data_.get(); }
  std::size_t bytes() const { return bytes_; }

 private:
  std::unique_ptr<void, detail::FreeFn> data_;
  std::size_t bytes_ = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  virtual const char* backend() const = 0;  // "mpi", "nccl"
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int world_rank() const = 0;              // this process in MPI_COMM_WORLD
  virtual int world_rank_of(int peer) const = 0;  // a member in MPI_COMM_WORLD
  const std::string& name() const { return name_; }

  // irecv's peer for a message from any member (the MPI backend only).
  static constexpr int kAnySource = -2;
  // Point to point. NCCL matches messages in posting order per peer and ignores the tag (it is kept
  // for the request's description); MPI matches by tag.
  virtual Request isend(const void* buf, std::size_t bytes, int peer, int tag) = 0;
  virtual Request irecv(void* buf, std::size_t bytes, int peer, int tag) = 0;
  // Sum over all members, in place: `count` elements of `type` at buf.
  virtual Request iallreduce_sum(void* buf, std::size_t count, DType type) = 0;
  // recv (size()*bytes_per_rank) receives every member's send block, in rank order.
  virtual Request iallgather(const void* send, void* recv, std::size_t bytes_per_rank) = 0;
  // send holds size()*count_per_rank elements; member i gets the sum of block i in recv.
  virtual Request ireduce_scatter_sum(const void* send, void* recv, std::size_t count_per_rank, DType type) = 0;
  virtual Request ibarrier() = 0;

  // The general collectives of the communication benchmarks (pipebench comm, docs/comm-bench.md), with
  // nccl-tests' buffer conventions: out of place when send != recv, in place when they are equal
  // (all_gather, above: send = recv + rank * bytes_per_rank). reduce_scatter in place (send == recv,
  // the whole input): the result lands in the first block on MPI (MPI_IN_PLACE) and in block `rank` on
  // NCCL (its in-place form). Counts are elements of `type`. The defaults throw UsageError (the backend
  // cannot). supports(): whether the backend reduces `type` with `op` (data movement takes any type).
  virtual bool supports(DType type, ReduceOp op) const;
  virtual Request iallreduce(const void* send, void* recv, std::size_t count, DType type, ReduceOp op);
  virtual Request ireduce_scatter(const void* send, void* recv, std::size_t count_per_rank, DType type, ReduceOp op);
  // Root's send reaches every member's recv (root's recv too).
  virtual Request ibroadcast(const void* send, void* recv, std::size_t count, DType type, int root);
  // recv is written on root only.
  virtual Request ireduce(const void* send, void* recv, std::size_t count, DType type, ReduceOp op, int root);
  // Block j of send goes to member j, block i of recv comes from member i; out of place only.
  virtual Request ialltoall(const void* send, void* recv, std::size_t count_per_rank, DType type);
  // Uneven blocks (the experts' token dispatch and combine): send_bytes[j] bytes of send go to member j,
  // recv_bytes[i] bytes come from member i, each side's blocks back to back in member order. The
  // members must agree on the counts (exchange them first, e.g. with ialltoall); out of place only.
  virtual Request ialltoallv(const void* send, const std::vector<std::size_t>& send_bytes, void* recv,
                             const std::vector<std::size_t>& recv_bytes);
  // Operations posted between group_start() and group_end() are issued together (ncclGroupStart/End),
  // which NCCL needs when a rank sends to and receives from the same peer; no-ops for MPI. Requests of
  // an open group may not be waited on before group_end().
  virtual void group_start() {}
  virtual void group_end() {}

  virtual Buffer allocate(std::size_t bytes) = 0;  // zero-filled
  virtual void copy_to_buffer(void* dst, const void* host_src, std::size_t bytes) = 0;
  virtual void copy_from_buffer(void* host_dst, const void* src, std::size_t bytes) = 0;

  // Polls once; true when complete.
  bool test(Request& r) { return r.poll(); }
  // Wait under the wait policy; TimeoutError past the timeout (or past `limit`, where given). No sleep
  // between polls outlasts the time left, whatever the poll interval.
  void wait(Request& r) { wait(r, policy_.timeout); }
  void wait(Request& r, std::chrono::duration<double> limit);
  void wait_all(std::vector<Request>& rs) { wait_all(rs, policy_.timeout); }
  void wait_all(std::vector<Request>& rs, std::chrono::duration<double> limit);

  // Blocking forms: post, then wait.
  void send(const void* buf, std::size_t bytes, int peer, int tag);
  void recv(void* buf, std::size_t bytes, int peer, int tag);
  void allreduce_sum(void* buf, std::size_t count, DType type);
  void barrier();

  // Called between two polls of every wait of every communicator of this process, so that a rank that
  // waits still answers a roll call (comm/roll.hpp); empty: nothing. Not thread-safe: set it before
  // waiting.
  static void set_idle_hook(std::function<void()> hook);

  const WaitPolicy& wait_policy() const { return policy_; }
  void set_wait_policy(const WaitPolicy& p);
  // "recv from rank 1 (global 5) of 'pp', tag 7, 1024 bytes"
  std::string describe(const RequestInfo& info) const;

 protected:
  Communicator(std::string name, const WaitPolicy& policy);

 private:
  [[noreturn]] void timed_out(const Request& first_pending, std::size_t pending, double waited_s) const;

  std::string name_;
  WaitPolicy policy_;
};

}  // namespace pipebench::comm
