#include "comm/mpi_communicator.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <thread>

#include "comm/float16.hpp"

namespace pipebench::comm {

namespace {

std::string mpi_error(int rc) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  return std::string(msg, static_cast<std::size_t>(len));
}

void check(int rc, const char* fn) {
  if (rc != MPI_SUCCESS) throw Error(std::string(fn) + " failed: " + mpi_error(rc));
}

// half and bfloat16 have no MPI type: a 2-byte contiguous type, and user operations that decode each
// pair to float, combine it and round the result back (comm/float16.hpp, round to nearest even): a
// 16-bit value after every partial reduction, as NCCL reduces 16-bit types. Made once, at first use
// (MPI is initialised by then), and freed when MPI_Finalize deletes MPI_COMM_SELF's attributes (the
// MPI standard's hook for cleanup at finalize; MPICH warns of a type left behind).
template <std::uint16_t (*Enc)(float), float (*Dec)(std::uint16_t), int Op>
void combine16(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const std::uint16_t*>(in);
  auto* b = static_cast<std::uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    const float x = Dec(a[i]), y = Dec(b[i]);
    b[i] = Enc(Op == 0 ? x + y : Op == 1 ? std::max(x, y) : std::min(x, y));
  }
}
struct Ops16 {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op half[3], bf16[3];  // by ReduceOp: sum, max, min
};
Ops16 ops16_;
int free_ops16(MPI_Comm, int, void*, void*) {
  for (MPI_Op* o : {ops16_.half, ops16_.bf16})
    for (int k = 0; k < 3; ++k) MPI_Op_free(&o[k]);
  MPI_Type_free(&ops16_.type);
  return MPI_SUCCESS;
}
const Ops16& ops16() {
  static const bool made = [] {
    MPI_Type_contiguous(2, MPI_BYTE, &ops16_.type);
    MPI_Type_commit(&ops16_.type);
    MPI_Op_create(&combine16<to_half, from_half, 0>, 1, &ops16_.half[0]);
    MPI_Op_create(&combine16<to_half, from_half, 1>, 1, &ops16_.half[1]);
    MPI_Op_create(&combine16<to_half, from_half, 2>, 1, &ops16_.half[2]);
    MPI_Op_create(&combine16<to_bf16, from_bf16, 0>, 1, &ops16_.bf16[0]);
    MPI_Op_create(&combine16<to_bf16, from_bf16, 1>, 1, &ops16_.bf16[1]);
    MPI_Op_create(&combine16<to_bf16, from_bf16, 2>, 1, &ops16_.bf16[2]);
    int key = MPI_KEYVAL_INVALID;
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &free_ops16, &key, nullptr);
    MPI_Comm_set_attr(MPI_COMM_SELF, key, nullptr);
    return true;
  }();
  (void)made;
  return ops16_;
}

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
    case DType::i32: return MPI_INT32_T;
    case DType::f16:
    case DType::bf16: return ops16().type;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(ReduceOp op, DType t) {
  const int k = op == ReduceOp::sum ? 0 : op == ReduceOp::max ? 1 : 2;
  if (t == DType::f16) return ops16().half[k];
  if (t == DType::bf16) return ops16().bf16[k];
  return k == 0 ? MPI_SUM : k == 1 ? MPI_MAX : MPI_MIN;
}

class MpiOp final : public detail::PendingOp {
 public:
  MpiOp(const MpiCommunicator& comm, RequestInfo info) : comm_(comm), info_(info) {}
  ~MpiOp() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (req_ == MPI_REQUEST_NULL || finalized) return;
    // Abandoned (a wait timed out, or an exception unwound): never block here. A receive is cancelled
    // so a late message cannot land in freed memory; MPI forbids freeing a pending collective, so
    // that one is left to MPI_Abort or MPI_Finalize.
    if (info_.op == Op::recv) MPI_Cancel(&req_);
    if (info_.op == Op::send || info_.op == Op::recv) MPI_Request_free(&req_);
  }
  MPI_Request* handle() { return &req_; }

  bool poll() override {
    int flag = 0;
    MPI_Status status;
    const int rc = MPI_Test(&req_, &flag, &status);
    if (rc != MPI_SUCCESS) throw Error(comm_.describe(info_) + ": " + mpi_error(rc));
    if (flag && info_.op == Op::recv) {
      int got = 0;
      MPI_Get_count(&status, MPI_BYTE, &got);
      if (static_cast<std::size_t>(got) != info_.bytes)
        throw Error(comm_.describe(info_) + ": received " + std::to_string(got) + " bytes");
    }
    return flag != 0;
  }

 private:
  const MpiCommunicator& comm_;
  RequestInfo info_;
  MPI_Request req_ = MPI_REQUEST_NULL;
};

// Issues one MPI call that fills the request handle; MPI_SUCCESS or an Error naming the operation.
template <class Call>
Request post(const MpiCommunicator& comm, RequestInfo info, const char* fn, Call call) {
  auto op = std::make_unique<MpiOp>(comm, info);
  const int rc = call(op->handle());
  if (rc != MPI_SUCCESS) throw Error(std::string(fn) + " (" + comm.describe(info) + ") failed: " + mpi_error(rc));
  return Request(info, std::move(op));
}

// The blocking form of post(): the call completes before it returns (MpiCommunicator's blocking mode).
template <class Call>
Request done(const MpiCommunicator& comm, RequestInfo info, const char* fn, Call call) {
  const int rc = call();
  if (rc != MPI_SUCCESS) throw Error(std::string(fn) + " (" + comm.describe(info) + ") failed: " + mpi_error(rc));
  return Request(info, nullptr);
}

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm comm, std::string name, const WaitPolicy& policy)
    : Communicator(std::move(name), policy) {
  // The non-blocking duplicate, waited for like any message: a member that never comes ends the wait
  // after the timeout instead of holding this rank in MPI_Comm_dup forever.
  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Request req = MPI_REQUEST_NULL;
  check(MPI_Comm_idup(comm, &dup, &req), "MPI_Comm_idup");
  const auto start = std::chrono::steady_clock::now();
  for (int done = 0;;) {
    check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Comm_idup");
    if (done) break;
    const std::chrono::duration<double> waited = std::chrono::steady_clock::now() - start;
    if (waited >= wait_policy().timeout) {
      MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
      // MPI cannot free a pending duplicate: the caller ends the job.
      throw Error("rank " + std::to_string(world_rank_) + ": communicator '" + this->name() + "' was not built within " +
                  std::to_string(waited.count()) + " s (MPI_Comm_idup: a member stopped or died)");
    }
    std::this_thread::sleep_for(wait_policy().sleep_within(waited, wait_policy().timeout));
  }
  comm_ = topology::MpiComm(dup);
  check(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  MPI_Comm_rank(dup, &rank_);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
  int* ub = nullptr;
  int found = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
  if (found && ub) tag_ub_ = *ub;

  const int n = comm_.size();
  std::vector<int> local(static_cast<std::size_t>(n));
  std::iota(local.begin(), local.end(), 0);
  world_ranks_.resize(local.size());
  MPI_Group mine = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
  MPI_Comm_group(dup, &mine);
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  const int rc = MPI_Group_translate_ranks(mine, n, local.data(), world, world_ranks_.data());
  MPI_Group_free(&mine);
  MPI_Group_free(&world);
  check(rc, "MPI_Group_translate_ranks");
}

int MpiCommunicator::world_rank_of(int peer) const {
  return peer >= 0 && peer < size() ? world_ranks_[static_cast<std::size_t>(peer)] : -1;
}

void MpiCommunicator::check_peer(int peer, int tag, const char* op) const {
  if (peer == kAnySource && std::strcmp(op, "recv") == 0) peer = 0;
  if (peer < 0 || peer >= size())
    throw Error(std::string(op) + " on '" + name() + "': peer " + std::to_string(peer) + " is outside 0.." +
                std::to_string(size() - 1));
  if (tag < 0 || tag > tag_ub_)
    throw Error(std::string(op) + " on '" + name() + "': tag " + std::to_string(tag) + " is outside 0.." +
                std::to_string(tag_ub_));
}

// MPI-3 counts are int; larger messages would need derived types, which nothing here sends yet.
int MpiCommunicator::checked_count(std::size_t n, const char* what) const {
  if (n > static_cast<std::size_t>(INT_MAX))
    throw Error(std::string(what) + " on '" + name() + "': " + std::to_string(n) +
                " elements exceed MPI's count limit of " + std::to_string(INT_MAX));
  return static_cast<int>(n);
}

Request MpiCommunicator::isend(const void* buf, std::size_t bytes, int peer, int tag) {
  check_peer(peer, tag, "send");
  const int n = checked_count(bytes, "send");
  if (blocking_p2p_)
    return done(*this, {Op::send, peer, tag, bytes}, "MPI_Send",
                [&] { return MPI_Send(buf, n, MPI_BYTE, peer, tag, comm_.get()); });
  return post(*this, {Op::send, peer, tag, bytes}, "MPI_Isend",
              [&](MPI_Request* r) { return MPI_Isend(buf, n, MPI_BYTE, peer, tag, comm_.get(), r); });
}

Request MpiCommunicator::irecv(void* buf, std::size_t bytes, int peer, int tag) {
  check_peer(peer, tag, "recv");
  const int n = checked_count(bytes, "recv");
  if (blocking_p2p_) {
    const RequestInfo info{Op::recv, peer, tag, bytes};
    MPI_Status status;
    const int rc = MPI_Recv(buf, n, MPI_BYTE, peer == kAnySource ? MPI_ANY_SOURCE : peer, tag, comm_.get(), &status);
    if (rc != MPI_SUCCESS) throw Error("MPI_Recv (" + describe(info) + ") failed: " + mpi_error(rc));
    int got = 0;
    MPI_Get_count(&status, MPI_BYTE, &got);
    if (static_cast<std::size_t>(got) != bytes) throw Error(describe(info) + ": received " + std::to_string(got) + " bytes");
    return Request(info, nullptr);
  }
  return post(*this, {Op::recv, peer, tag, bytes}, "MPI_Irecv",
              [&](MPI_Request* r) {
                return MPI_Irecv(buf, n, MPI_BYTE, peer == kAnySource ? MPI_ANY_SOURCE : peer, tag, comm_.get(), r);
              });
}

Request MpiCommunicator::iallreduce_sum(void* buf, std::size_t count, DType type) {
  const int n = checked_count(count, "allreduce");
  return post(*this, {Op::allreduce, -1, -1, count * dtype_size(type)}, "MPI_Iallreduce", [&](MPI_Request* r) {
    return MPI_Iallreduce(MPI_IN_PLACE, buf, n, mpi_type(type), mpi_op(ReduceOp::sum, type), comm_.get(), r);
  });
}

Request MpiCommunicator::iallgather(const void* send, void* recv, std::size_t bytes_per_rank) {
  const int n = checked_count(bytes_per_rank, "allgather");
  const std::size_t total = bytes_per_rank * static_cast<std::size_t>(size());
  // In place (nccl-tests' form: send is this member's block of recv) is MPI_IN_PLACE to MPI.
  const bool in_place = send == static_cast<const char*>(recv) + static_cast<std::size_t>(rank_) * bytes_per_rank;
  if (blocking_)
    return done(*this, {Op::allgather, -1, -1, total}, "MPI_Allgather", [&] {
      return MPI_Allgather(in_place ? MPI_IN_PLACE : send, n, MPI_BYTE, recv, n, MPI_BYTE, comm_.get());
    });
  return post(*this, {Op::allgather, -1, -1, total}, "MPI_Iallgather", [&](MPI_Request* r) {
    return MPI_Iallgather(in_place ? MPI_IN_PLACE : send, n, MPI_BYTE, recv, n, MPI_BYTE, comm_.get(), r);
  });
}

Request MpiCommunicator::ireduce_scatter_sum(const void* send, void* recv, std::size_t count_per_rank, DType type) {
  const int n = checked_count(count_per_rank, "reduce_scatter");
  const std::size_t total = count_per_rank * dtype_size(type) * static_cast<std::size_t>(size());
  return post(*this, {Op::reduce_scatter, -1, -1, total}, "MPI_Ireduce_scatter_block", [&](MPI_Request* r) {
    return MPI_Ireduce_scatter_block(send, recv, n, mpi_type(type), mpi_op(ReduceOp::sum, type), comm_.get(), r);
  });
}

Request MpiCommunicator::ibarrier() {
  return post(*this, {Op::barrier, -1, -1, 0}, "MPI_Ibarrier",
              [&](MPI_Request* r) { return MPI_Ibarrier(comm_.get(), r); });
}

// Every type (half and bfloat16 through ops16) with every ReduceOp.
bool MpiCommunicator::supports(DType, ReduceOp) const { return true; }

Request MpiCommunicator::iallreduce(const void* send, void* recv, std::size_t count, DType type, ReduceOp op) {
  const int n = checked_count(count, "all_reduce");
  const void* in = send == recv ? MPI_IN_PLACE : send;
  if (blocking_)
    return done(*this, {Op::allreduce, -1, -1, count * dtype_size(type)}, "MPI_Allreduce",
                [&] { return MPI_Allreduce(in, recv, n, mpi_type(type), mpi_op(op, type), comm_.get()); });
  return post(*this, {Op::allreduce, -1, -1, count * dtype_size(type)}, "MPI_Iallreduce", [&](MPI_Request* r) {
    return MPI_Iallreduce(in, recv, n, mpi_type(type), mpi_op(op, type), comm_.get(), r);
  });
}

Request MpiCommunicator::ireduce_scatter(const void* send, void* recv, std::size_t count_per_rank, DType type,
                                         ReduceOp op) {
  const int n = checked_count(count_per_rank, "reduce_scatter");
  const std::size_t total = count_per_rank * dtype_size(type) * static_cast<std::size_t>(size());
  const void* in = send == recv ? MPI_IN_PLACE : send;
  if (blocking_)
    return done(*this, {Op::reduce_scatter, -1, -1, total}, "MPI_Reduce_scatter_block",
                [&] { return MPI_Reduce_scatter_block(in, recv, n, mpi_type(type), mpi_op(op, type), comm_.get()); });
  return post(*this, {Op::reduce_scatter, -1, -1, total}, "MPI_Ireduce_scatter_block", [&](MPI_Request* r) {
    return MPI_Ireduce_scatter_block(in, recv, n, mpi_type(type), mpi_op(op, type), comm_.get(), r);
  });
}

Request MpiCommunicator::ibroadcast(const void* send, void* recv, std::size_t count, DType type, int root) {
  check_peer(root, 0, "broadcast");
  const std::size_t bytes = count * dtype_size(type);
  const int n = checked_count(bytes, "broadcast");
  // Out of place, as NCCL's: the root's own recv gets its data too (a local copy, as NCCL makes one).
  if (rank_ == root && send != recv) std::memcpy(recv, send, bytes);
  if (blocking_)
    return done(*this, {Op::broadcast, root, -1, bytes}, "MPI_Bcast",
                [&] { return MPI_Bcast(recv, n, MPI_BYTE, root, comm_.get()); });
  return post(*this, {Op::broadcast, root, -1, bytes}, "MPI_Ibcast",
              [&](MPI_Request* r) { return MPI_Ibcast(recv, n, MPI_BYTE, root, comm_.get(), r); });
}

Request MpiCommunicator::ireduce(const void* send, void* recv, std::size_t count, DType type, ReduceOp op, int root) {
  check_peer(root, 0, "reduce");
  const int n = checked_count(count, "reduce");
  const void* in = rank_ == root && send == recv ? MPI_IN_PLACE : send;
  if (blocking_)
    return done(*this, {Op::reduce, root, -1, count * dtype_size(type)}, "MPI_Reduce",
                [&] { return MPI_Reduce(in, recv, n, mpi_type(type), mpi_op(op, type), root, comm_.get()); });
  return post(*this, {Op::reduce, root, -1, count * dtype_size(type)}, "MPI_Ireduce", [&](MPI_Request* r) {
    return MPI_Ireduce(in, recv, n, mpi_type(type), mpi_op(op, type), root, comm_.get(), r);
  });
}

Request MpiCommunicator::ialltoall(const void* send, void* recv, std::size_t count_per_rank, DType type) {
  const std::size_t bytes = count_per_rank * dtype_size(type);
  const int n = checked_count(bytes, "alltoall");
  if (blocking_)
    return done(*this, {Op::alltoall, -1, -1, bytes * static_cast<std::size_t>(size())}, "MPI_Alltoall",
                [&] { return MPI_Alltoall(send, n, MPI_BYTE, recv, n, MPI_BYTE, comm_.get()); });
  return post(*this, {Op::alltoall, -1, -1, bytes * static_cast<std::size_t>(size())}, "MPI_Ialltoall",
              [&](MPI_Request* r) { return MPI_Ialltoall(send, n, MPI_BYTE, recv, n, MPI_BYTE, comm_.get(), r); });
}

namespace {
// MPI_Ialltoallv reads its count and displacement arrays until it completes: they live with the request
// (declared before `op`, so they outlive it).
class AlltoallvOp final : public detail::PendingOp {
 public:
  std::vector<int> send_counts, send_displs, recv_counts, recv_displs;
  std::unique_ptr<MpiOp> op;
  bool poll() override { return op->poll(); }
};
}  // namespace

Request MpiCommunicator::ialltoallv(const void* send, const std::vector<std::size_t>& send_bytes, void* recv,
                                    const std::vector<std::size_t>& recv_bytes) {
  const std::size_t n = static_cast<std::size_t>(size());
  if (send_bytes.size() != n || recv_bytes.size() != n)
    throw Error("alltoallv on '" + name() + "': " + std::to_string(send_bytes.size()) + " send and " +
                std::to_string(recv_bytes.size()) + " receive counts for " + std::to_string(n) + " members");
  auto v = std::make_unique<AlltoallvOp>();
  // Each block and each buffer's whole length must fit MPI's int counts.
  auto layout = [this](const std::vector<std::size_t>& bytes, std::vector<int>& counts, std::vector<int>& displs) {
    std::size_t at = 0;
    for (std::size_t b : bytes) {
      displs.push_back(checked_count(at, "alltoallv"));
      counts.push_back(checked_count(b, "alltoallv"));
      at += b;
    }
    checked_count(at, "alltoallv");
    return at;
  };
  const std::size_t total = layout(send_bytes, v->send_counts, v->send_displs);
  layout(recv_bytes, v->recv_counts, v->recv_displs);
  const RequestInfo info{Op::alltoallv, -1, -1, total};
  v->op = std::make_unique<MpiOp>(*this, info);
  const int rc = MPI_Ialltoallv(send, v->send_counts.data(), v->send_displs.data(), MPI_BYTE, recv,
                                v->recv_counts.data(), v->recv_displs.data(), MPI_BYTE, comm_.get(), v->op->handle());
  if (rc != MPI_SUCCESS) throw Error("MPI_Ialltoallv (" + describe(info) + ") failed: " + mpi_error(rc));
  return Request(info, std::move(v));
}

Buffer MpiCommunicator::allocate(std::size_t bytes) {
  void* p = std::calloc(bytes ? bytes : 1, 1);
  if (!p) throw Error("cannot allocate " + std::to_string(bytes) + " bytes of host memory");
  return Buffer(p, bytes, std::free);
}

void MpiCommunicator::copy_to_buffer(void* dst, const void* host_src, std::size_t bytes) {
  std::memcpy(dst, host_src, bytes);
}

void MpiCommunicator::copy_from_buffer(void* host_dst, const void* src, std::size_t bytes) {
  std::memcpy(host_dst, src, bytes);
}

}  // namespace pipebench::comm
